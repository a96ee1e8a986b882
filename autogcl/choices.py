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
