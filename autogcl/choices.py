"""The names that options choose from, free of torch, so that building a command's parser
(``autogcl COMMAND --help``) imports nothing heavy. The components that implement the names
take them from here (``tests/test_choices.py`` checks that the two agree)."""

from __future__ import annotations

#: random augmentations (``autogcl.augment.random``), ``random4`` draws one of four per batch
AUGMENTATIONS = ("node_drop", "edge_pert", "subgraph", "attr_mask", "none", "random4")
#: model selections of every protocol: the validation score (default) or the published test_max
SELECTIONS = ("val", "test_max")
#: the MoleculeNet sets of the transfer benchmark (``autogcl.data.moleculenet.MOLECULENET``)
MOLECULENET_SETS = ("bbbp", "tox21", "toxcast", "sider", "clintox", "muv", "hiv", "bace")
#: seed of the semi-supervised protocol's fold split (as the released code)
FOLD_SEED = 12345
#: fold splits of the semi-supervised protocol (``autogcl.data.splits.semi_splits``): with a
#: validation fold (default) or the released code's (none; labeled graphs drawn uniformly)
SEMI_SPLITS = ("val_fold", "released")
#: NT-Xent forms (``autogcl.losses.cl_kwargs``): the paper's SimCLR form or the released code's
#: (positive left out of the denominator)
CL_VARIANTS = ("simclr", "released")
#: the L_sim term of AutoGCL's naive strategy: none (the paper's Algorithm 1), cosine, or the
#: released code's 1 - MSE
SIM_LOSSES = ("none", "cosine", "mse")
#: what becomes of the nodes a learnable view drops: isolated zero-feature nodes (the released
#: code) or removed from the batch; ``GeometryKeepingGenerator`` adds weight (kept, down-weighted)
DROP_ISOLATE, DROP_REMOVE, DROP_WEIGHT = "isolate", "remove", "weight"
DROPPED = (DROP_ISOLATE, DROP_REMOVE)
#: the mask token of a learnable view: the batch's mean feature value (released) or per-feature
MASK_SCALAR, MASK_FEATURE = "scalar", "feature"
MASK_TOKENS = (MASK_SCALAR, MASK_FEATURE)
#: the views AutoGCL's naive strategy contrasts: two draws from {x, x1, x2} with replacement
#: (released) or always the two generated ones
SAMPLE_REPLACEMENT, SAMPLE_GENERATED = "replacement", "generated"
VIEW_SAMPLINGS = (SAMPLE_REPLACEMENT, SAMPLE_GENERATED)
#: GraphCL's views: two augmentations, or the graph and one augmentation
VIEWS_AUG_AUG, VIEWS_ORIG_AUG = "aug-aug", "orig-aug"
GRAPHCL_VIEWS = (VIEWS_AUG_AUG, VIEWS_ORIG_AUG)
#: one constant per name of AUGMENTATIONS, CL_VARIANTS, SIM_LOSSES and SEMI_SPLITS that only an
#: option means (``"none"``, ``"released"`` and ``"val"`` are ordinary words too)
AUG_NODE_DROP, AUG_EDGE_PERT, AUG_SUBGRAPH, AUG_ATTR_MASK, AUG_RANDOM4 = AUGMENTATIONS[:4] + AUGMENTATIONS[5:]
CL_SIMCLR = CL_VARIANTS[0]
SIM_COSINE, SIM_MSE = SIM_LOSSES[1:]
SPLIT_VAL_FOLD = SEMI_SPLITS[0]
#: forward-pass precisions (``--precision``)
FP32, BF16 = "fp32", "bf16"
PRECISIONS = (FP32, BF16)
#: where a sweep's units run (``--executor``: :mod:`autogcl.executors`)
SERIAL, RAY = "serial", "ray"
EXECUTORS = (SERIAL, RAY)
