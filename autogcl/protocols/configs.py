"""The options of every protocol, as config dataclasses (:mod:`autogcl.config`): what
defines a result of the unsupervised, semi-supervised, ablation, pre-training, fine-tuning and
view-visualisation runs. Free of torch, so that a command's parser (and its ``--help``) is
built without importing the protocols; each protocol module re-exports its config."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from ..choices import (
    AUGMENTATIONS,
    AUG_ATTR_MASK,
    AUG_EDGE_PERT,
    AUG_NODE_DROP,
    AUG_RANDOM4,
    AUG_SUBGRAPH,
    BN_STATS,
    CL_SIMCLR,
    CL_VARIANTS,
    DROPPED,
    DROP_ISOLATE,
    DROP_REMOVE,
    DROP_WEIGHT,
    FINETUNE_DEFAULTS,
    FINETUNE_PRESETS,
    FOLD_SEED,
    GRAPHCL_VIEWS,
    LR_SCHEDULES,
    MASK_SCALAR,
    MASK_TOKENS,
    MOLECULENET_SETS,
    READOUTS,
    REGRESSION_DEFAULTS,
    REGRESSION_SELECTIONS,
    SAMPLE_REPLACEMENT,
    SELECTIONS,
    SEMI_SPLITS,
    SIM_COSINE,
    SIM_LOSSES,
    SIM_MSE,
    SMALL_BATCH,
    TASKS,
    VIEWS_AUG_AUG,
    VIEW_SAMPLINGS,
    check_choice,
)
from ..config import DATA, EXECUTION, RUNS, Config, from_args, option
from ..errors import ConfigError
from . import published

# unsupervised
METHODS = ("autogcl", "graphcl")
#: options of one method only (the other ignores them)
AUTOGCL_ONLY = ("add_mask", "dropped", "mask_token", "sim_loss", "view_sampling", "gen_hidden", "gen_layers")
GRAPHCL_ONLY = ("aug", "aug_ratio", "graphcl_views")


class SweepConfig(Config):
    """A config of a sweep command: how the command line makes its configs and names the sweeps
    they write (torch-free, so that the command takes their locks before it imports anything
    heavy or reads any data: :func:`autogcl.cli.cmd_protocol`)."""

    @classmethod
    def from_command(cls, args) -> list:
        """The configs of the sweeps a parsed command line asks for, validated (one by default)."""
        return [from_args(cls, args)]

    def lock_key(self, args) -> str:
        """The name of the sweep this config writes into ``--out`` (its lock: ``OUT/.<key>.lock``)."""
        return self.tag


@dataclass
class UnsupervisedConfig(SweepConfig):
    """Everything that defines a result (how it runs, e.g. seeds or device, is in
    :class:`autogcl.config.RunOptions`)."""

    dataset: str = option("MUTAG", "TU dataset name (MUTAG, PROTEINS, NCI1, DD, ...)", group=DATA)
    method: str = option("autogcl", "learnable view generators (autogcl) or random augmentations (graphcl)",
                         choices=METHODS, group=RUNS)
    feat: str = option("deg+odeg100", "node-feature recipe (deg+odeg100, constant, ...)", group=DATA)
    epochs: int = option(30, "training epochs", low=1)
    batch_size: int = option(128, "batch size", low=2)
    lr: float = option(0.001, "Adam learning rate", low=0, low_open=True)
    eval_epochs: list | None = option(None, "comma-separated epochs to evaluate (default: 10,20,30 up to "
                                      "--epochs, else the last)", type=int)
    hidden: int = option(128, "encoder width", cli=False)
    layers: int = option(5, "encoder layers", cli=False)
    tau: float | None = option(None, "NT-Xent temperature (default 0.5 autogcl, 0.2 graphcl)", type=float,
                                 low=0, low_open=True)
    cl_variant: str = option(CL_SIMCLR, "NT-Xent form: simclr (published) or released (positive left out of the "
                             "denominator; one direction for graphcl)", choices=CL_VARIANTS)
    # autogcl
    add_mask: bool = option(False, "generators may also mask nodes")
    dropped: str = option(DROP_ISOLATE, "dropped nodes stay as isolated zero nodes (released) or are removed",
                          choices=DROPPED)
    mask_token: str = option(MASK_SCALAR, "mask token: the batch's mean feature value (scalar) or per-feature mean",
                             choices=MASK_TOKENS)
    sim_loss: str = option("none", "add L_sim to the naive strategy (released code: mse)",
                           choices=SIM_LOSSES, what="similarity loss")
    view_sampling: str = option(SAMPLE_REPLACEMENT, "views contrasted: two draws from {x, x1, x2} with replacement "
                                "(released) or always x1 and x2", choices=VIEW_SAMPLINGS)
    gen_hidden: int = option(128, "generator width", cli=False)
    gen_layers: int = option(2, "generator layers", cli=False)
    # graphcl
    aug: str = option(AUG_RANDOM4, "GraphCL augmentation (method graphcl)", choices=AUGMENTATIONS,
                      what="augmentation")
    aug_ratio: float = option(0.2, "GraphCL augmentation ratio", low=0, high=1, high_open=True)
    graphcl_views: str = option(VIEWS_AUG_AUG, "GraphCL views: two augmentations or the graph and one",
                                choices=GRAPHCL_VIEWS)
    # evaluation
    svm_folds: int = option(10, "outer SVM folds", cli=False, low=2)
    svm_inner_folds: int = option(5, "inner SVM folds (C search)", cli=False, low=2)
    select: str = option("val", "selection reported as the result (both are always recorded)",
                         choices=SELECTIONS, what="selection")

    def __post_init__(self):
        self.check_choices()
        if self.eval_epochs is None:
            self.eval_epochs = [e for e in (10, 20, 30) if e <= self.epochs] or [self.epochs]
        self.eval_epochs = sorted({int(e) for e in self.eval_epochs})
        bad = [e for e in self.eval_epochs if not 1 <= e <= self.epochs]
        if bad or not self.eval_epochs:
            raise ConfigError(f"--eval-epochs {bad or self.eval_epochs} must lie in 1..{self.epochs}")
        # after validation: a value out of range is an error even where it does not apply
        self.drop_unused(GRAPHCL_ONLY if self.method == "autogcl" else AUTOGCL_ONLY, f"to --method {self.method}")

    @property
    def temperature(self) -> float:
        return self.tau if self.tau is not None else (0.5 if self.method == "autogcl" else 0.2)

    @property
    def tag(self) -> str:
        return f"{self.dataset}-{self.method}" + (f"-{self.aug}" if self.method == "graphcl" else "")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["tau"] = self.temperature
        return d


# semi
ROWS = {
    "full": "supervised on all training data (labels of the whole training part)",
    "labeled": "supervised on the labeled 10% only",
    "graphcl_aug": "supervised on GraphCL random augmentations of the labeled data",
    "graphcl_cl": "GraphCL contrastive pre-training on the training part, then fine-tuning",
    "aug": "supervised on the two learnable views (CE(x1) + CE(x2) + lambda L_sim)",
    "naive": "AutoGCL naive strategy pre-training, then fine-tuning with L_cls(x, x1, x2)",
    "joint": "AutoGCL joint strategy: L_cl pass + L_cls + lambda L_sim pass",
    "joint_cls": "joint strategy ablation: L_cls only",
    "joint_cls_sim": "joint strategy ablation: L_cls + lambda L_sim",
    "joint_cl_cls": "joint strategy ablation: L_cl pass + L_cls",
    "joint_released": "the released code's joint variant (labeled batches only, L_sim + L_cls + L_cl)",
}
#: the options each row reads (the others are ignored, and left out of its stored config)
_GENERATORS = ("add_mask", "dropped", "mask_token")
ROW_OPTIONS = {
    "full": (), "labeled": (),
    "graphcl_aug": ("aug", "aug_ratio"),
    "graphcl_cl": ("aug", "aug_ratio", "tau", "cl_variant", "pretrain_epochs"),
    "aug": ("lam", "sim_loss", *_GENERATORS),
    "naive": ("tau", "cl_variant", "sim_loss", "pretrain_epochs", *_GENERATORS),
    "joint": ("lam", "tau", "cl_variant", "sim_loss", *_GENERATORS),
    "joint_cls": _GENERATORS,
    "joint_cls_sim": ("lam", "sim_loss", *_GENERATORS),
    "joint_cl_cls": ("tau", "cl_variant", *_GENERATORS),
    "joint_released": ("tau", *_GENERATORS),
}
ROW_SPECIFIC = ("aug", "aug_ratio", "tau", "cl_variant", "pretrain_epochs", "lam", "sim_loss", *_GENERATORS)


@dataclass
class SemiConfig(SweepConfig):
    """Everything that defines a semi-supervised result (one row on one dataset)."""

    dataset: str = option("PROTEINS", "TU dataset name", group=DATA)
    row: str = option("joint", "row(s) to run: a name, a comma-separated list, or 'all' (" + ", ".join(ROWS) + ")",
                      group=RUNS)
    feat: str = option("deg+odeg100", "node-feature recipe", group=DATA)
    epochs: int = option(30, "training epochs", low=1)
    pretrain_epochs: int = option(30, "pre-training epochs of graphcl_cl and naive", low=0)
    batch_size: int | None = option(None, "batch size (default 128; 64 for DD, COLLAB, REDDIT-*, GITHUB)",
                                    type=int, low=2)
    lr: float = option(0.01, "Adam learning rate", low=0, low_open=True)
    label_rate: float = option(0.1, "labeled share of the whole dataset", low=0, high=1, low_open=True, high_open=True)
    folds: int = option(10, "cross-validation folds", low=3)
    fold_seed: int = option(FOLD_SEED, "seed of the fold split", cli=False)
    hidden: int = option(128, "classifier width", cli=False)
    lam: float = option(1.0, "weight of L_sim", flag="--lambda", low=0)
    tau: float = option(0.5, "NT-Xent temperature", low=0, low_open=True)
    cl_variant: str = option(CL_SIMCLR, "NT-Xent form", choices=CL_VARIANTS)
    sim_loss: str = option(SIM_COSINE, "L_sim form (published cosine, released mse)", choices=(SIM_COSINE, SIM_MSE))
    add_mask: bool = option(False, "generators may also mask nodes")
    dropped: str = option(DROP_ISOLATE, "dropped nodes: isolated zero nodes (released) or removed",
                          choices=DROPPED)
    mask_token: str = option(MASK_SCALAR, "mask token", choices=MASK_TOKENS)
    aug: str = option(AUG_RANDOM4, "GraphCL rows' augmentation", choices=AUGMENTATIONS, what="augmentation")
    aug_ratio: float = option(0.2, "GraphCL rows' augmentation ratio", low=0, high=1, high_open=True)
    select: str = option("val", "selection reported as the result (both are always recorded)",
                         choices=("val", "test_max"), what="selection")
    split: str = option(SEMI_SPLITS[0], "fold split: val_fold (a validation fold; labeled graphs drawn stratified "
                        "from the other 80 percent) or released (the released code's: no validation fold, labeled graphs "
                        "drawn uniformly from the 90 percent outside the test fold; test_max only)", choices=SEMI_SPLITS,
                        what="split", implicit_default=True)
    bn_stats: str = option(BN_STATS[1], "BatchNorm statistics of the per-epoch evaluation: running (the running "
                           "averages of training, as published) or settled (those of the current weights over the "
                           "fold's training graphs, recomputed before each evaluation; autogcl.SemiSupervised's "
                           "default)", choices=BN_STATS, what="BatchNorm statistics", implicit_default=True)

    def __post_init__(self):
        check_choice("row", self.row, ROWS, also="all")
        self.check_choices()
        if self.split == "released" and self.select != "test_max":
            raise ConfigError("--split released has no validation fold, so only the test_max selection is "
                              "defined: add --select test_max")
        if self.batch_size is None:
            self.batch_size = 64 if self.dataset in SMALL_BATCH else 128
        # after validation: a value out of range is an error even where it does not apply
        self.drop_unused(set(ROW_SPECIFIC) - set(ROW_OPTIONS[self.row]), f"to the {self.row} row")

    @property
    def tag(self) -> str:
        return f"{self.dataset}-{self.row}" + ("-released_split" if self.split == "released" else "")

    @classmethod
    def from_command(cls, args) -> list:
        """One config per row of ``--row`` (a name, a comma-separated list, or all)."""
        rows = list(ROWS) if args.row == "all" else [r.strip() for r in args.row.split(",") if r.strip()]
        if not rows:
            raise ConfigError(f"--row {args.row!r} names no row; choose from {', '.join(ROWS)} or all")
        return [from_args(cls, args, row=r) for r in rows]


# ablation
SINGLE_AUGS = (AUG_NODE_DROP, AUG_SUBGRAPH, AUG_EDGE_PERT, AUG_ATTR_MASK)


@dataclass
class AblationConfig(SweepConfig):
    """The GraphCL augmentation ablation: which row, augmentations and ratios, on which datasets."""

    dataset: list = option(None, "one or more comma-separated TU datasets", factory=lambda: ["NCI1"], type=str,
                           group=DATA)
    row: str = option("graphcl_cl", "the semi-supervised GraphCL row", choices=("graphcl_cl", "graphcl_aug"),
                      group=RUNS)
    augs: list = option(None, "augmentations run alone at ratio 0.2", factory=lambda: list(SINGLE_AUGS), type=str)
    ratios: list = option(None, "ratios of the ratio sweep", factory=lambda: list(published.ABLATION_RATIOS),
                          type=float)
    ratio_aug: str = option(AUG_NODE_DROP, "augmentation of the ratio sweep", choices=AUGMENTATIONS,
                            what="augmentation")
    epochs: int = option(30, "training epochs")
    pretrain_epochs: int = option(30, "pre-training epochs (graphcl_cl)")

    def __post_init__(self):
        self.check_choices()
        if isinstance(self.dataset, str):
            self.dataset = [d.strip() for d in self.dataset.split(",") if d.strip()]
        for a in self.augs:
            check_choice("augmentation", a, AUGMENTATIONS, flag="--augs")
        bad = [r for r in self.ratios if not 0.0 <= r < 1.0]
        if bad:
            raise ConfigError(f"--ratios {bad} must lie in [0, 1)")
        if not self.dataset:
            raise ConfigError("--dataset names no dataset")
        if not self.augs and not self.ratios:
            raise ConfigError("--augs and --ratios are both empty: nothing to run")

    def base(self, dataset: str) -> SemiConfig:
        return SemiConfig(dataset=dataset, row=self.row, epochs=self.epochs, pretrain_epochs=self.pretrain_epochs,
                          aug=self.ratio_aug)

    @classmethod
    def from_command(cls, args) -> list:
        cfg = from_args(cls, args)
        cfg.base(cfg.dataset[0])  # validates the row and the augmentation before any work
        return [cfg]

    def lock_key(self, args) -> str:
        return "ablation"  # OUT/ablation.md and every variant's folder


# pretrain
DEFAULT_CORPUS = "pretrain/moses_train.csv.gz"


@dataclass
class PretrainConfig(Config):
    """Everything that defines a pre-training run."""

    corpus: str = option("", "SMILES file (CSV with a SMILES column, or .smi; .gz ok); default: "
                         "<data root>/pretrain/moses_train.csv.gz", group=DATA)
    # name, size, SHA-256 of the corpus: a replaced file is never resumed
    corpus_fingerprint: list | None = option(None, cli=False)
    smiles_col: str | None = option(None, "SMILES column (default: one named SMILES, else the first)", type=str,
                                    group=DATA)
    method: str = option("autogcl", "learnable view generators (naive strategy) or GraphCL's random4",
                         choices=METHODS, group=RUNS)
    epochs: int = option(20, "epochs over the corpus", low=1)
    batch_size: int = option(256, "batch size", low=2)
    lr: float = option(0.001, "Adam learning rate", low=0, low_open=True)
    max_molecules: int | None = option(None, "read only the first N SMILES", type=int, group=DATA)
    chunk_size: int = option(50_000, "SMILES per cached chunk (bounds memory)", group=DATA)
    dim: int = option(300, "encoder width (Hu et al.: 300); recorded in encoder.pt, which finetune reads back",
                      low=1)
    num_layers: int = option(5, "encoder layers (Hu et al.: 5); recorded in encoder.pt", low=1)
    gen_hidden: int = option(128, "view generators' width (released: 128)", low=1)
    gen_layers: int = option(2, "view generators' layers (released: 2)", low=1)
    add_mask: bool = option(True, "generators may also mask atoms", negate="--no-mask")
    dropped: str = option(DROP_REMOVE, "dropped atoms are removed or kept as isolated atoms",
                          choices=(DROP_REMOVE, DROP_ISOLATE))
    tau: float | None = option(None, "NT-Xent temperature (default 0.5 autogcl, 0.1 graphcl)", type=float,
                                 low=0, low_open=True)
    cl_variant: str = option(CL_SIMCLR, "NT-Xent form: simclr (published) or released (positive left out of the "
                             "denominator)", choices=CL_VARIANTS)
    sim_loss: str = option("none", "add L_sim to the naive strategy (released code: mse)",
                           choices=SIM_LOSSES, what="similarity loss")
    view_sampling: str = option(SAMPLE_REPLACEMENT, "views contrasted", cli=False)
    aug: str = option(AUG_RANDOM4, "GraphCL augmentation (method graphcl)", choices=AUGMENTATIONS,
                      what="augmentation")
    aug_ratio: float = option(0.2, "GraphCL augmentation ratio", low=0, high=1, high_open=True)
    seed: int = option(0, "seed", low=0)
    static_views: bool = option(False, "remove dropped atoms in place: views keep the batch's shapes (no wait for "
                                "a GPU, what CUDA graphs need; the same numbers to float rounding; removed atoms' rows are computed too)",
                                implicit_default=True)
    pad_atoms: int | None = option(None, "with --static-views: pad every batch to a multiple of N atoms (and 2N "
                                   "bonds) that no model reads, so steps see a few shapes (CUDA graphs, compilation "
                                   "for static shapes)", type=int, low=1, implicit_default=True, metavar="N")

    def __post_init__(self):
        self.check_choices()
        if self.chunk_size < 2 or (self.max_molecules is not None and self.max_molecules < 2):
            raise ConfigError("--chunk-size and --max-molecules must be at least 2")
        # after validation: a value out of range is an error even where it does not apply
        self.drop_unused(("aug", "aug_ratio") if self.method == "autogcl" else
                         ("add_mask", "dropped", "sim_loss", "gen_hidden", "gen_layers", "view_sampling",
                          "static_views", "pad_atoms"),
                         f"to --method {self.method}")

    @property
    def temperature(self) -> float:
        if self.tau is not None:
            return self.tau
        return 0.5 if self.method == "autogcl" else 0.1

    def pretrainer_options(self) -> dict:
        """The options of :class:`autogcl.api.pretrain.MoleculePretrainer`: every field but the
        corpus and its fingerprint (the protocol's)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("corpus", "corpus_fingerprint")}


# transfer
#: the fine-tuning settings of the published transfer protocol
PAPER_FINETUNE = FINETUNE_PRESETS["paper"]


@dataclass
class FinetuneConfig(SweepConfig):
    """Everything that defines a fine-tuning result (one dataset)."""

    dataset: str = option("bbbp", "MoleculeNet name(s), comma-separated, or all: " + ", ".join(MOLECULENET_SETS),
                          group=DATA)
    checkpoint: str | None = option(None, "encoder.pt of a pre-training run, or a shipped encoder's name (autogcl-moses-fullx1); "
                                      "none: the No-pretrain row", type=str, group=RUNS)
    csv: str | None = option(None, "your own CSV instead of --dataset", type=str, group=DATA)
    smiles_col: str = option("smiles", "SMILES column of --csv", group=DATA)
    label_cols: list[str] | None = option(None, "comma-separated label columns of --csv (default: all others)",
                                          type=str, metavar="A,B", group=DATA)
    label_map: dict[str, float] | None = option(None, "numbers for text labels of --csv, e.g. inactive=0,active=1",
                                                type=str, metavar="TEXT=N,...", implicit_default=True, group=DATA)
    # None: the recipe's default, resolved when the data's task is known (resolve_recipe): the
    # published protocol's (MoleculeEncoder.finetune(preset="paper")) for --dataset, the
    # library's own defaults of MoleculeEncoder.finetune (those of a regression for numbers) for --csv
    epochs: int | None = option(None, "fine-tuning epochs (default: the paper's 100 for --dataset, the library's "
                                f"{FINETUNE_DEFAULTS['epochs']} for --csv)", type=int, low=1)
    batch_size: int | None = option(None, f"batch size (default {PAPER_FINETUNE['batch_size']})", type=int, low=2)
    lr: float | None = option(None, f"Adam learning rate (default {PAPER_FINETUNE['lr']})", type=float, low=0,
                              low_open=True)
    weight_decay: float | None = option(None, "Adam weight decay", cli=False, type=float)
    dropout: float | None = option(None, f"dropout of the fine-tuned GIN (default {PAPER_FINETUNE['dropout']}; "
                                   f"{REGRESSION_DEFAULTS['dropout']} for a --csv regression)", type=float, low=0,
                                   high=1, high_open=True)
    readout: str | None = option(None, "pooling of the atoms' representations: mean, sum or scaled_sum (sum over the "
                                 "training molecules' mean atom count; for size-additive properties) (default: mean)",
                                 type=str, choices=READOUTS, what="readout", implicit_default=True)
    lr_schedule: str | None = option(None, "learning rate over the epochs: constant, or cosine decay (default: "
                                     "constant; cosine for a --csv regression)", type=str, choices=LR_SCHEDULES,
                                     what="lr schedule", implicit_default=True)
    split_file: str | None = option(None, "a JSON file of the split to use instead of the scaffold split: "
                                    '{"train": [...], "valid": [...], "test": [...]} (0-based indices of the '
                                    "molecules that parse, in file order), or chemprop's --splits-file "
                                    '[{"train", "val", "test"}]', type=str, implicit_default=True, group=DATA)
    dim: int = option(300, "GIN width (without --checkpoint)", cli=False)
    num_layers: int = option(5, "GIN layers (without --checkpoint)", cli=False)
    task: str | None = option(None, "classification (binary labels: masked BCE, ROC-AUC) or regression (numbers: "
                              "standardised targets, MSE; RMSE, MAE and R², predictions in the targets' units); "
                              "default: inferred from the labels", type=str, choices=TASKS, group=RUNS)
    select: str = option("val", "selection reported as the result (both are always recorded): val, or test_max "
                         "(classification) / test_min (regression)",
                         choices=tuple(dict.fromkeys(SELECTIONS + REGRESSION_SELECTIONS)), what="selection")
    frac: tuple[float, float, float] = option(PAPER_FINETUNE["frac"], "scaffold split fractions", cli=False,
                                              factory=None)

    def __post_init__(self):
        self.check_choices()
        self.frac = tuple(self.frac)
        if self.csv is not None and not self.csv.strip():
            raise ConfigError("--csv is an empty string; name your CSV file, or leave --csv out for --dataset")
        if self.checkpoint is not None and not self.checkpoint.strip():
            raise ConfigError("--checkpoint is an empty string; name an encoder.pt, or leave --checkpoint out for the "
                              "No-pretrain row")
        if isinstance(self.label_cols, str):
            self.label_cols = [c.strip() for c in self.label_cols.split(",") if c.strip()]
        if self.label_cols and not self.csv:
            raise ConfigError("--label-cols and --smiles-col are for --csv files; MoleculeNet sets have fixed columns")
        from ..data.molecules import check_label_map

        self.label_map = check_label_map(self.label_map)
        if self.label_map and not self.csv:
            raise ConfigError("--label-map is for --csv files; MoleculeNet sets have numeric labels")


    @classmethod
    def from_command(cls, args) -> list:
        """One config per dataset of ``--dataset`` (or the ``--csv`` file), from ``--checkpoint``."""
        names = [args.csv] if args.csv else dataset_names(args.dataset)
        # an empty --checkpoint goes to the config as it is: an error there, not the current folder
        checkpoint = checkpoint_path(args.checkpoint) if args.checkpoint else args.checkpoint
        return [from_args(cls, args, dataset=n, checkpoint=checkpoint) for n in names]

    def results_tag(self, tag: str | None = None) -> str:
        """The results folder of this config's runs: ``tag`` (``--tag``), else its checkpoint's
        (:func:`checkpoint_tag`), else no_pretrain."""
        return tag or (checkpoint_tag(self.checkpoint) if self.checkpoint else "no_pretrain")

    def lock_key(self, args) -> str:
        return f"{self.results_tag(args.tag)}-{Path(self.dataset).stem.lower()}"


def checkpoint_path(spec: str) -> str:
    """What a run records of ``--checkpoint`` (:func:`autogcl.molecules.encoder_ref`): a shipped
    encoder's name (``autogcl-moses-fullx1``, given by name or as its ``pretrained/`` file; a
    file of that name in the current folder comes first), so that its units resume from any
    checkout, or the absolute path of any other file. A name that is neither is left as a path,
    whose error (no such checkpoint) comes when it is read."""
    from ..errors import DataError
    from ..molecules import encoder_ref, resolve_encoder

    try:
        return encoder_ref(resolve_encoder(spec))
    except DataError:
        return str(Path(spec).resolve())


def checkpoint_tag(checkpoint: str) -> str:
    """The results folder of a fine-tuning from ``checkpoint``: a pre-training run's ``encoder.pt``
    is named by its run folder (runs/pretrain/NAME/encoder.pt: NAME), any other file by its stem
    (pretrained/autogcl-moses200k.pt: autogcl-moses200k)."""
    path = Path(checkpoint)
    return (path.resolve().parent.name if path.name == "encoder.pt" else "") or path.stem


def dataset_names(spec: str) -> list[str]:
    """``all`` or a comma-separated list of MoleculeNet names."""
    if spec.lower() == "all":
        return list(MOLECULENET_SETS)
    names = [s.strip().lower() for s in spec.split(",") if s.strip()]
    if not names:
        raise ConfigError(f"--dataset {spec!r} names no MoleculeNet dataset; known: {', '.join(MOLECULENET_SETS)} or all")
    unknown = [n for n in names if n not in MOLECULENET_SETS]
    if unknown:
        raise ConfigError(f"unknown MoleculeNet dataset(s) {unknown}; known: {', '.join(MOLECULENET_SETS)} or all")
    return names


# views
#: per-classifier defaults of the settings left as None in ViewsConfig (measured on MNIST:
#: docs/results/views_MNIST/; resgcn keeps the settings of the semi-supervised protocol)
CLASSIFIER_DEFAULTS = {
    "resgcn": {"lr": 0.01, "gen_lr": 0.01, "hidden": 128, "batch_size": 128, "warmup_epochs": 0,
               "dropped": DROP_REMOVE, "lam": 1.0},
    "relpos": {"lr": 0.001, "gen_lr": 0.01, "hidden": 64, "batch_size": 64, "warmup_epochs": 1,
               "dropped": DROP_WEIGHT, "lam": 0.3},
}


@dataclass
class ViewsConfig(Config):
    """Everything that defines a view-visualisation run (None: the classifier's default,
    :data:`CLASSIFIER_DEFAULTS`)."""

    dataset: str = option("MNIST", "MNIST or a TU dataset name", group=DATA)
    # the paper trains to 0.9; 0.7 was set on seed 0's validation curve of older code on the
    # 8,000 offline MNIST training graphs (docs/tutorial.md); the committed runs of seeds 0-2 pass
    # it in their first joint epoch (docs/results/views_MNIST/)
    target_acc: float = option(0.7, "stop when the accuracy on generated validation views reaches this "
                               "(the paper: 0.9)", low=0, high=1)
    max_epochs: int = option(30, "at most this many joint epochs", low=1)
    classifier: str | None = option(None, "relpos: layers over neighbour offsets, for superpixels (default on "
                                    "MNIST); resgcn: ResGCN (default on TU datasets)", type=str,
                                    choices=tuple(CLASSIFIER_DEFAULTS))
    batch_size: int | None = option(None, "batch size (default 64 relpos, 128 resgcn)", type=int, low=2)
    lr: float | None = option(None, "Adam learning rate of the classifier (default 0.001 relpos, 0.01 resgcn)",
                              type=float, low=0)
    gen_lr: float | None = option(None, "learning rate of the generators (default 0.01)", type=float, low=0)
    hidden: int | None = option(None, "classifier width (default 64 relpos, 128 resgcn)", type=int, low=1)
    # epochs of the classifier alone on the original graphs before the joint training, so
    # that the generators' first gradients come from a classifier that knows which nodes
    # matter (without it, on MNIST, the views settle on dropping the digit strokes)
    warmup_epochs: int | None = option(None, "train the classifier alone on the original graphs for this many "
                                       "epochs first (default 1 relpos, 0 resgcn)", type=int, low=0)
    # dropped nodes in the views the classifier sees: "remove", "weight" (relpos only; see
    # GeometryKeepingGenerator) or "isolate" (isolated zero-feature nodes, the released
    # default, which skew the classifier's BatchNorm statistics and eval-mode accuracy)
    dropped: str | None = option(None, "dropped nodes in the views the classifier trains on: weight (default "
                                 "with relpos: kept with weight 0, ignored by the classifier, so a drop still gets "
                                 "a gradient), remove (default with resgcn), isolate", type=str,
                                 choices=(DROP_WEIGHT, DROP_REMOVE, DROP_ISOLATE))
    # weight of L_sim; on MNIST with lambda 1 one generator soon settles on dropping the
    # strokes the other keeps (views as different as possible), and the view accuracy stalls
    lam: float | None = option(None, "weight of L_sim (default 0.3 relpos, 1.0 resgcn)", type=float,
                               flag="--lambda", low=0)
    add_mask: bool = option(True, "generators may also mask nodes", negate="--no-mask")
    seed: int = option(0, "seed")
    limit: int | None = option(None, "use only N graphs per split (quick runs)", type=int, low=1)
    drop_ratio: float = option(0.2, "GraphCL node-drop ratio shown beside", low=0, high=1, high_open=True)
    high_intensity: float = option(0.5, "superpixels at or above this mean intensity count as strokes", cli=False)

    def __post_init__(self):
        self.check_choices()
        mnist = self.dataset.upper() == "MNIST"
        if self.classifier is None:
            self.classifier = "relpos" if mnist else "resgcn"
        check_choice("classifier", self.classifier, CLASSIFIER_DEFAULTS)
        if self.classifier == "relpos" and not mnist:
            raise ConfigError("the relpos classifier needs superpixel positions (MNIST); use resgcn")
        for key, value in CLASSIFIER_DEFAULTS[self.classifier].items():
            if getattr(self, key) is None:
                setattr(self, key, value)
        if self.dropped == DROP_WEIGHT and self.classifier != "relpos":
            raise ConfigError("dropped='weight' needs a classifier that reads node weights (relpos)")
        if self.max_epochs < 1 or self.warmup_epochs < 0:
            raise ConfigError("max_epochs must be at least 1 and warmup_epochs at least 0")


# embed
EMBED_SUFFIXES = (".npy", ".csv")


@dataclass
class EmbedConfig(Config):
    """What ``autogcl embed`` reads, with which model, and where it writes."""

    data: str = option("", "a TU dataset name (with --model), a SMILES file (.csv, .smi, plain or .gz; with "
                       "--encoder), or a saved dataset (.pt holding a list of PyG Data; with --model or --encoder)",
                       cli=False, group=DATA)
    model: str | None = option(None, "a model that has embed: model.pt of `autogcl unsupervised` or `autogcl semi`, "
                               "or a file of AutoGCL/GraphCL/SemiSupervised.save (any model autogcl.load reads)",
                               type=str, group=RUNS)
    encoder: str | None = option(None, "molecule encoder: a shipped encoder's name or an encoder.pt (default for "
                                 "a SMILES file: autogcl-moses-fullx1)", type=str, group=RUNS)
    smiles_col: str = option("smiles", "SMILES column of a CSV (matched ignoring case)", group=DATA)
    feat: str | None = option(None, "node-feature recipe of a TU dataset (default: the one in config.json beside "
                              "--model, else deg+odeg100)", type=str, group=DATA)
    out: str = option("embeddings.npy", "file to write: .npy (the embeddings of the graphs read, in input order) or "
                      ".csv (with each row's input index, SMILES or label)", group=EXECUTION)
    batch_size: int = option(256, "graphs per forward pass", low=1)

    def __post_init__(self):
        self.check_choices()
        if not str(self.data).strip():
            raise ConfigError("name the data to embed: a TU dataset name, a SMILES file or a saved dataset (.pt)")
        if not str(self.out).strip():
            raise ConfigError("--out is an empty string; name a .npy or .csv file")
        if not str(self.out).lower().endswith(EMBED_SUFFIXES):
            raise ConfigError(f"--out {self.out}: name a .npy or .csv file (the suffix picks the format)")
        if self.model is not None and self.encoder is not None:
            raise ConfigError("give --model or --encoder, not both")
        for name in ("model", "encoder"):
            if getattr(self, name) is not None and not getattr(self, name).strip():
                raise ConfigError(f"--{name} is an empty string")


#: the config class of each sweep command (what :func:`autogcl.cli.cmd_protocol` reads before it
#: imports the protocol)
SWEEP_CONFIGS = {"unsupervised": UnsupervisedConfig, "semi": SemiConfig, "transfer": FinetuneConfig,
                 "ablate": AblationConfig}


@dataclass
class PropertyConfig(Config):
    """What ``autogcl property fit`` trains: :class:`autogcl.PropertyPredictor` on a SMILES CSV
    or an SDF file (the options are the estimator's arguments, with its defaults)."""

    data: str = option("", "the training molecules: a CSV with a SMILES column, or an SDF file (property fields "
                       "as label columns)", cli=False, group=DATA)
    label_cols: list[str] | None = option(None, "comma-separated label columns (SDF: property fields); default: "
                                          "every other column (SDF: every numeric field)", type=str, metavar="A,B",
                                          group=DATA)
    smiles_col: str = option("smiles", "SMILES column of a CSV", group=DATA)
    label_map: dict[str, float] | None = option(None, "numbers for text labels, e.g. inactive=0,active=1", type=str,
                                                metavar="TEXT=N,...", group=DATA)
    validation: str | None = option(None, "held-out molecules (a file of the same columns), scored after the fit",
                                    type=str, group=DATA)
    task: str | None = option(None, "classification or regression (default: inferred from the labels)", type=str,
                              choices=TASKS, group=RUNS)
    members: list[str] | None = option(None, "members to blend: gnn (the fine-tuned shipped GIN), forest (a random "
                                       "forest on Morgan counts + RDKit descriptors), svr (an SVR on RDKit descriptors, "
                                       "regression only); default: by task, gnn,forest,svr for a regression, forest "
                                       "for classification", type=str, metavar="A,B",
                                       group=RUNS)
    encoder: str = option("autogcl-moses-fullx1", "the encoder the gnn member fine-tunes (a shipped name or an "
                          "encoder.pt)", group=RUNS)
    gnn_seeds: int = option(1, "fine-tuned GINs averaged in the gnn member (an ensemble over seeds)", low=1)
    epochs: int | None = option(None, "fine-tuning epochs of each GIN (default: the recipe's 30)", type=int, low=1)
    readout: str | None = option(None, "pooling of the atoms: mean, sum or scaled_sum (default: mean)", type=str,
                                 choices=READOUTS, what="readout")
    lr_schedule: str | None = option(None, "constant or cosine (default: cosine, the last epoch kept)", type=str,
                                     choices=LR_SCHEDULES, what="lr schedule")
    n_trees: int = option(500, "trees of the forest", low=1)
    seed: int = option(0, "seed of every draw", low=0)
    out: str = option("property-model", "folder to write the predictor to (PropertyPredictor.save)",
                      group=EXECUTION)

    def __post_init__(self):
        from ..choices import check_choice

        self.check_choices()
        if not str(self.data).strip():
            raise ConfigError("name the training file: a CSV with a SMILES column or an SDF file")
        for name, values in (("label_cols", self.label_cols), ("members", self.members)):
            if isinstance(values, str):
                setattr(self, name, [c.strip() for c in values.split(",") if c.strip()])
        for m in self.members or ():
            check_choice("member", m, ("gnn", "forest"), flag="--members")

    def finetune_options(self) -> dict:
        """The options of the gnn member's fine-tuning that this config sets."""
        return {k: getattr(self, k) for k in ("epochs", "readout", "lr_schedule") if getattr(self, k) is not None}
