"""The names that options choose from, free of torch, so that building a command's parser
(``autogcl COMMAND --help``) imports nothing heavy. The components that implement the names
take them from here (``tests/test_choices.py`` checks that the two agree), and check a given
name against them with :func:`check_choice`."""

from __future__ import annotations

from .errors import ConfigError


def check_choice(what: str, value, names, *, flag: str = "", also: str = ""):
    """``value`` when it is one of ``names``, else a :class:`ConfigError` of the one form every
    option check uses: ``unknown WHAT 'VALUE' (FLAG); choose from A, B, C (or ALSO)``, where
    ``flag`` (e.g. ``--row``) says where the value was given and ``also`` names what else is
    accepted besides ``names`` (e.g. ``all``); both are left out when empty."""
    try:
        if value in names:
            return value
    except TypeError:  # an unhashable value against a dict's names: not among them
        pass
    where = f" ({flag})" if flag else ""
    more = f" (or {also})" if also else ""
    raise ConfigError(f"unknown {what} {value!r}{where}; choose from {', '.join(map(str, names))}{more}")

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
#: the BatchNorm statistics a semi-supervised classifier (or a fine-tuned molecule predictor,
#: ``MoleculeEncoder.finetune(bn_stats=)``) predicts with: ``settled`` (those of its current
#: weights over the training graphs, recomputed before every evaluation and after fit) or
#: ``running`` (the running averages training leaves, as the published protocols)
BN_SETTLED, BN_RUNNING = "settled", "running"
BN_STATS = (BN_SETTLED, BN_RUNNING)
#: datasets of large graphs whose semi-supervised batches hold 64 graphs (the others 128)
SMALL_BATCH = ("DD", "COLLAB", "REDDIT-BINARY", "REDDIT-MULTI-5K", "github_stargazers")
#: molecule fine-tuning tasks (``autogcl.MoleculeEncoder.finetune``, ``transfer finetune --task``):
#: binary labels (masked BCE, ROC-AUC) or numbers (standardised targets, MSE, RMSE/MAE/R²)
TASKS = ("classification", "regression")
#: which weights a fine-tuned molecule predictor keeps: the last epoch's, or those of the epoch
#: with the best validation score (ROC-AUC, or the lowest RMSE for regression)
FINETUNE_SELECTIONS = ("last", "val")
#: how fine-tuning splits the molecules it is given: not at all, by Bemis-Murcko scaffold (the
#: transfer protocol), or at random (seeded)
FINETUNE_SPLITS = ("none", "scaffold", "random")
#: how a fine-tuned molecule predictor pools its atoms' representations into the molecule's:
#: their mean (Hu et al. 2020, the pre-trained encoders'; independent of the molecule's size),
#: their sum (grows with the molecule: suits size-additive targets such as logP or molar mass),
#: or their sum divided by a constant, the training molecules' mean atom count (grows with the
#: molecule as the sum does, on the scale of the mean: size-additive targets, trained stably)
READOUT_MEAN, READOUT_SUM, READOUT_SCALED_SUM = "mean", "sum", "scaled_sum"
READOUTS = (READOUT_MEAN, READOUT_SUM, READOUT_SCALED_SUM)
#: the learning rate of molecule fine-tuning over the epochs: constant (the transfer protocol),
#: or a cosine decay from ``lr`` at the first epoch towards 0 after the last
LR_CONSTANT, LR_COSINE = "constant", "cosine"
LR_SCHEDULES = (LR_CONSTANT, LR_COSINE)
#: the regression protocol's selections: the validation RMSE, and the lowest test RMSE over
#: epochs (the analogue of classification's test_max, named for what it is)
REGRESSION_SELECTIONS = ("val", "test_min")
#: fine-tuning presets: ``paper`` is the transfer protocol of the AutoGCL paper's Table 4 (Hu
#: et al. 2020's settings), what ``autogcl transfer finetune`` runs by default
FINETUNE_PRESETS = {
    "paper": {"epochs": 100, "batch_size": 32, "lr": 0.001, "weight_decay": 0.0, "dropout": 0.5,
              "split": "scaffold", "frac": (0.8, 0.1, 0.1), "selection": "val"},
}
#: the fine-tuning options where neither the call nor a preset gives them
FINETUNE_DEFAULTS = {"epochs": 30, "batch_size": 32, "lr": 0.001, "weight_decay": 0.0, "dropout": 0.5,
                     "readout": READOUT_MEAN, "lr_schedule": LR_CONSTANT, "bn_stats": BN_RUNNING,
                     "split": "none", "frac": (0.8, 0.1, 0.1), "selection": "last"}
#: the options a regression takes where neither the call nor a preset gives them (the others:
#: :data:`FINETUNE_DEFAULTS`): no dropout and a cosine decay of the learning rate, chosen on the
#: validation part of a logP regression (``docs/results/regression_logp_pilots.json``), where
#: dropout 0.5 at a constant rate made the validation R² jump between epochs
REGRESSION_DEFAULTS = {"dropout": 0.0, "lr_schedule": LR_COSINE}
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
#: where ``fit(log_dir=...)`` and ``--log-dir`` send every epoch's scalars: TensorBoard event
#: files, or an MLflow tracking store (``autogcl.train.tracking``)
TRACK_TENSORBOARD, TRACK_MLFLOW = "tensorboard", "mlflow"
TRACKERS = (TRACK_TENSORBOARD, TRACK_MLFLOW)
#: forward-pass precisions (``--precision``)
FP32, BF16 = "fp32", "bf16"
PRECISIONS = (FP32, BF16)
#: where a sweep's units run (``--executor``: :mod:`autogcl.executors`)
SERIAL, RAY = "serial", "ray"
EXECUTORS = (SERIAL, RAY)
#: the estimators ``autogcl tune`` searches (``--estimator``: :mod:`autogcl.protocols.tune`)
TUNE_ESTIMATORS = ("semi", "autogcl", "graphcl")
