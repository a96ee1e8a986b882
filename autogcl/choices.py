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
#: the semi-supervised strategies (``autogcl.train.semi.semi_strategy``, ``SemiSupervised(strategy=)``):
#: AutoGCL's joint strategy, its loss ablations and the released code's variant, the naive
#: strategy, GraphCL pre-training or augmentation, learnable-view augmentation, and
#: supervised training on the labeled graphs alone
SEMI_STRATEGIES = ("joint", "naive", "graphcl", "supervised", "graphcl_aug", "aug", "joint_cls", "joint_cls_sim",
                   "joint_cl_cls", "joint_released")
#: the classifiers of the semi-supervised estimator: a GIN encoder with a two-layer head, or
#: the ResGCN of the paper's protocol
CLASSIFIERS = ("gin", "resgcn")
#: the BatchNorm statistics a semi-supervised classifier predicts with: ``settled`` (those of
#: its current weights over the training graphs, recomputed before every evaluation and after
#: fit) or ``running`` (the running averages training leaves, as the published protocol)
BN_STATS = ("settled", "running")
#: datasets of large graphs whose semi-supervised batches hold 64 graphs (the others 128)
SMALL_BATCH = ("DD", "COLLAB", "REDDIT-BINARY", "REDDIT-MULTI-5K", "github_stargazers")
