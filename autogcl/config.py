"""Options are defined once, as dataclass fields, and the command line is generated from them.

``option(default, "help", ...)`` declares a config field with its help, choices and flag;
:func:`add_options` adds a dataclass's options to an ``argparse`` parser (names, defaults,
choices, help), and :func:`from_args` builds the dataclass from the parsed arguments, so
that validation (in the dataclass's ``__post_init__``) is the same from Python and the CLI.
:class:`RunOptions` holds the options of *how* a sweep runs (seeds, output folder, device,
resume, ...), which never change a unit's result.
"""

from __future__ import annotations

from .choices import EXECUTORS, FP32, PRECISIONS, RAY, SERIAL, TRACK_TENSORBOARD, TRACKERS, check_choice
import argparse
import os
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path

from .errors import ConfigError


#: the groups of a command's ``--help``, in the order shown: what the command runs, the data it
#: reads, the run's own settings (the default of an option that names no group), and where and
#: how it executes; ``option(group=...)`` puts an option in one
RUNS, DATA, SETTINGS, EXECUTION = "what the command runs", "the data", "the run's settings", "execution"
GROUPS = (RUNS, DATA, SETTINGS, EXECUTION)


def option(default=MISSING, help: str = "", *, choices=None, flag: str | None = None, type=None,
           cli: bool = True, metavar: str | None = None, factory=None, negate: str | None = None,
           what: str | None = None, low=None, high=None, low_open: bool = False, high_open: bool = False,
           many: bool = False, implicit_default: bool = False, group: str = SETTINGS):
    """A dataclass field with what the CLI needs. ``type``: the argument parser (default: the
    default's type; a ``list`` default parses comma-separated values with ``type``);
    ``negate``: for a ``True`` boolean, the flag that sets it to ``False`` (e.g. ``--no-mask``);
    ``what``: the noun error messages use (default: the field name); ``low``/``high`` (with
    ``low_open``/``high_open``): the range a number must lie in, checked by :class:`Config`;
    ``many``: a list given as one or more values after the flag (``--grid a=1,2 b=3``), which
    may also be repeated; ``implicit_default``: an option added after runs were made, which
    ``config.json`` stores only when it is set away from its default (so those runs still resume);
    ``group``: where ``--help`` lists it (:data:`GROUPS`)."""
    check_choice("help group", group, GROUPS)
    meta = {"group": group, "help": help, "choices": choices, "flag": flag, "type": type, "cli": cli,
            "metavar": metavar, "negate": negate, "what": what, "many": many,
            "implicit_default": implicit_default, "range": None if low is None and high is None else
            (low, high, low_open, high_open)}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def comma_list(kind=str):
    """An argument parser for ``a,b,c`` (each converted with ``kind``)."""
    def parse(text: str):
        try:
            return [kind(t.strip()) for t in str(text).split(",") if t.strip()]
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__} values, got {text!r}") from exc
    parse.__name__ = f"list of {kind.__name__}"
    return parse


def _default(f):
    return f.default_factory() if f.default_factory is not MISSING else f.default


def help_group(parser: argparse.ArgumentParser, title: str):
    """The argument group ``title`` of ``parser``'s ``--help``; the first call makes all of
    :data:`GROUPS`, in their order (a group left empty is not shown)."""
    groups = getattr(parser, "_autogcl_groups", None)
    if groups is None:
        groups = parser._autogcl_groups = {t: parser.add_argument_group(t) for t in GROUPS}
    return groups[title]


def add_options(parser: argparse.ArgumentParser, cls, only=None, skip=(), defaults: dict | None = None) -> None:
    """Add the CLI options of dataclass ``cls`` to ``parser`` (``only``/``skip``: field names;
    ``defaults``: per-command default overrides), each in its ``--help`` group (the option's
    ``group``: :func:`help_group`)."""
    for f in fields(cls):
        meta = f.metadata
        if not meta or not meta.get("cli", True) or f.name in skip or (only is not None and f.name not in only):
            continue
        _add_option(help_group(parser, meta.get("group") or SETTINGS), parser, f, meta, defaults)


def _add_option(group, owner: argparse.ArgumentParser, f, meta, defaults: dict | None) -> None:
    """:func:`add_options` of one field, into ``group`` (an argument group of ``owner``)."""
    default = (defaults or {}).get(f.name, _default(f))
    flag = meta.get("flag") or "--" + f.name.replace("_", "-")
    kw = {"dest": f.name, "help": meta.get("help") or None}
    if isinstance(default, bool):
        if default and meta.get("negate"):
            # "%(default).0s" prints nothing and keeps the formatter from adding "(default: True)",
            # which reads as if the flag were on
            kw["help"] = f"turn off the default: {kw['help'] or f.name}%(default).0s"
            group.add_argument(meta["negate"], action="store_false", **kw)
        else:
            group.add_argument(flag, action="store_true", **kw)
        owner.set_defaults(**{f.name: default})
        return
    if meta.get("many"):
        group.add_argument(flag, default=default, type=meta.get("type") or str, nargs="+", action="extend",
                            metavar=meta.get("metavar"), **kw)
        return
    if default in (None, "") and "default" in (kw["help"] or ""):
        # the help says what None or "" resolves to; no "(default: None)" or "(default: )"
        kw["help"] += "%(default).0s"
    kind = meta.get("type")
    if kind is None:
        kind = type(default) if default is not None and not isinstance(default, (list, tuple)) else str
    if isinstance(default, (list, tuple)) or str(f.type).startswith(("list", "tuple")):
        kind = comma_list(meta.get("type") if meta.get("type") not in (None, list, tuple) else str)
    group.add_argument(flag, default=default, type=kind, choices=meta.get("choices"),
                        metavar=meta.get("metavar"), **kw)


def from_args(cls, args: argparse.Namespace, **overrides):
    """``cls`` built from the parsed options it defines (plus ``overrides``)."""
    values = {f.name: getattr(args, f.name) for f in fields(cls) if hasattr(args, f.name)}
    values.update(overrides)
    return cls(**values)


def check_range(name: str, value, low=None, high=None, *, low_open: bool = False, high_open: bool = False):
    """A :class:`ConfigError` naming the option when ``value`` lies outside its range."""
    if value is None:
        return
    bad = (low is not None and (value <= low if low_open else value < low)) or \
          (high is not None and (value >= high if high_open else value > high))
    if bad:
        lo = "" if low is None else f"{'(' if low_open else '['}{low}"
        hi = "" if high is None else f"{high}{')' if high_open else ']'}"
        raise ConfigError(f"--{name.replace('_', '-')} must lie in {lo or '(-inf'}, {hi or 'inf)'}; got {value}")


class Config:
    """Base of the config dataclasses: plain-dict round trip (what ``config.json`` stores) and
    the check of every field declared with ``choices``."""

    def check_choices(self) -> None:
        """A :class:`ConfigError` naming the option when a value is not among its choices or
        outside its range."""
        for f in fields(self):
            bounds, value = f.metadata.get("range"), getattr(self, f.name)
            if bounds is not None:
                flag = f.metadata.get("flag") or "--" + f.name.replace("_", "-")
                check_range(flag.lstrip("-"), value, bounds[0], bounds[1], low_open=bounds[2], high_open=bounds[3])
            choices, value = f.metadata.get("choices"), getattr(self, f.name)
            if choices and value is not None:
                check_choice(f.metadata.get("what") or f.name.replace("_", " "), value, choices,
                             flag=f.metadata.get("flag") or "--" + f.name.replace("_", "-"))

    def drop_unused(self, names, why: str) -> None:
        """Options among ``names`` do not apply (``why``: e.g. "to --method graphcl"): those
        set away from their default are reset to it with a warning, so that an ignored value
        is never stored in ``config.json`` (where it would block a later ``--resume``)."""
        import logging

        changed = []
        for f in fields(self):
            if f.name in names and getattr(self, f.name) != _default(f):
                changed.append(f"{f.metadata.get('flag') or '--' + f.name.replace('_', '-')}="
                               f"{getattr(self, f.name)!r}")
                setattr(self, f.name, _default(f))
        if changed:
            logging.getLogger("autogcl").warning("%s do(es) not apply %s: ignored", ", ".join(changed), why)

    def to_dict(self) -> dict:
        d = asdict(self)
        for f in fields(self):
            if f.metadata.get("implicit_default") and d[f.name] == _default(f):
                del d[f.name]
        return d

    @classmethod
    def from_dict(cls, d: dict):
        """The config of a stored dict (keys that are not fields, e.g. ``runtime``, are ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


#: the largest seed: NumPy's generators take seeds below 2**32
MAX_SEED = 2**32 - 1


@dataclass
class RunOptions(Config):
    """How a sweep runs: never part of a unit's configuration (so never blocks ``--resume``)."""

    seeds: int = option(5, "number of seeds", low=1)
    first_seed: int = option(0, "seeds are first-seed .. first-seed+seeds-1", low=0)
    out: str = option("runs", "run directory", group=EXECUTION)
    resume: bool = option(False, "keep finished units, continue interrupted ones from their checkpoint",
                          group=EXECUTION)
    restart_damaged: bool = option(False, "with --resume: restart from the beginning an interrupted unit whose "
                                   "checkpoint or configuration cannot be read back (default: refuse, naming it)",
                                   group=EXECUTION)
    device: str = option("auto", "auto (CUDA when available), cpu, cuda or cuda:N", group=EXECUTION)
    precision: str = option(FP32, "forward passes in float32, or in bfloat16 (bf16: CUDA GPUs that have it; the "
                            "losses stay in float32)", choices=PRECISIONS, group=EXECUTION)
    compile: bool = option(False, "compile the models with torch.compile (CUDA GPUs; the first epochs are slower)",
                           group=EXECUTION)
    deterministic: bool = option(False, "train with PyTorch's deterministic kernels, so that a seed fixes a GPU run "
                                 "bit for bit (slower; CUDA's scatter-adds otherwise differ run to run in the last "
                                 "bits; the CPU's kernels are deterministic already)", group=EXECUTION)
    data_root: str | None = option(None, "data root (else $AUTOGCL_DATA, else the project cache)", type=str, group=DATA)
    download: bool = option(False, "fetch a dataset that the named --data-root / $AUTOGCL_DATA lacks into the "
                            "project cache (without a named root, missing datasets are always fetched)", group=DATA)
    no_progress: bool = option(False, "no progress bars", group=EXECUTION)
    log_dir: str | None = option(None, "write every training run's per-epoch losses, evaluations and throughput as "
                                 "TensorBoard scalars, one folder per run (seed, fold) under this folder; needs "
                                 "pip install 'autogcl[tensorboard]'; with --tracking mlflow, the MLflow tracking "
                                 "store (a URI, or a folder: a local file store), one run per training run",
                                 type=str, metavar="DIR", group=EXECUTION)
    tracking: str = option(TRACK_TENSORBOARD, "where --log-dir's scalars go: TensorBoard event files, or an MLflow "
                           "tracking store (pip install 'autogcl[mlflow]')", choices=TRACKERS, group=EXECUTION)
    jobs: int | None = option(None, "processes for the SVM's fits (default: every core, as many as memory allows; "
                              "with --executor ray at most the unit's CPUs)", type=int, low=1, group=EXECUTION)
    fold_limit: int | None = option(None, "run only the first N folds (quick checks)", type=int, low=1)
    workers: int | None = option(None, "featurising processes (default: all cores)", type=int, low=1, group=DATA)
    save_embeddings: list | None = option(None, "comma-separated epochs after which every graph's embedding is "
                                          "saved (embeddings_epochE.npz; semi: 0 = before training; "
                                          "unsupervised: evaluation epochs only)", type=int, metavar="EPOCHS")
    tag: str | None = option(None, "results go to OUT/TAG/DATASET (default: no_pretrain; with --checkpoint, the "
                             "run folder of an encoder.pt, or the checkpoint file's stem)", type=str)
    run: str | None = option(None, "draw the generators saved by this finished unsupervised unit instead of "
                             "training", type=str, metavar="UNIT_DIR")
    examples: int = option(6, "graphs (digits) to draw", low=1)
    executor: str = option(SERIAL, "where the units (seeds, folds) run: one after the other here (serial) or as "
                           "Ray tasks (ray; pip install 'autogcl[ray]')", choices=EXECUTORS, group=EXECUTION)
    ray_address: str | None = option(None, "with --executor ray: a running cluster to join (auto, or HOST:PORT); "
                                     "default: start a local cluster sized to this machine", type=str,
                                     metavar="ADDR", group=EXECUTION)
    cpus_per_unit: float | None = option(None, "CPUs (torch threads) of each unit (default: 1 with ray; serial: "
                                         "the process's threads)", type=float, low=0, low_open=True, group=EXECUTION)
    gpus_per_unit: float = option(0.0, "with --executor ray: GPUs of each unit (fractions share a GPU)", low=0,
                                  group=EXECUTION)
    grid: list | None = option(None, "sweep the cross product of option values x seeds, e.g. --grid lr=0.001,0.01 "
                               "batch_size=32,128; the table picks the configuration by validation score only",
                               type=str, metavar="KEY=V1,V2", many=True)

    def __post_init__(self):
        self.check_choices()
        from .devices import resolve_device

        resolve_device(self.engine)
        if not str(self.out).strip():
            raise ConfigError("--out is an empty string; name the run folder (. for the current one)")
        if self.first_seed + self.seeds - 1 > MAX_SEED:
            raise ConfigError(f"--first-seed {self.first_seed} --seeds {self.seeds}: seeds go up to "
                              f"{self.first_seed + self.seeds - 1}, above the largest seed NumPy takes ({MAX_SEED})")
        cores = os.cpu_count() or 1
        if self.executor == SERIAL and self.cpus_per_unit is not None and self.cpus_per_unit > cores:
            raise ConfigError(f"--cpus-per-unit {self.cpus_per_unit:g} is more than this machine's {cores} cores "
                              "(with --executor serial a unit runs here)")
        if self.executor != RAY:
            self.drop_unused(("ray_address", "gpus_per_unit"), "to --executor serial")
        elif self.device.startswith("cuda") and not self.gpus_per_unit:
            raise ConfigError(f"--device {self.device} with --executor ray needs --gpus-per-unit (e.g. 1, or 0.25 to "
                              "share a GPU): Ray hides the GPUs from units that ask for none")

    def export_log_dir(self) -> None:
        """Give ``--log-dir`` and ``--tracking`` to every Trainer of the run, in this process and
        the ones it starts (child processes, a local Ray cluster), through
        :data:`autogcl.train.tracking.LOG_DIR_ENV` and ``TRACKING_ENV``; TensorBoard or MLflow
        being missing is an error now, not after the first epoch."""
        if self.log_dir is None:
            if self.tracking != TRACK_TENSORBOARD:
                raise ConfigError(f"--tracking {self.tracking} needs --log-dir (the tracking store: a URI, or a folder)")
            return
        from .train.tracking import LOG_DIR_ENV, TRACKING_ENV, check_tracking, mlflow_uri

        if not str(self.log_dir).strip():
            raise ConfigError("--log-dir is an empty string; name a folder")
        check_tracking(self.tracking)
        given = str(self.log_dir)  # a URI as it is, a folder made absolute (children may start elsewhere)
        os.environ[LOG_DIR_ENV] = given if mlflow_uri(given) == given else str(Path(given).resolve())
        os.environ[TRACKING_ENV] = self.tracking

    def make_executor(self):
        """The executor these options ask for (:mod:`autogcl.executors`)."""
        from .executors import make_executor

        return make_executor(self.executor, self.ray_address, self.cpus_per_unit, self.gpus_per_unit)

    @property
    def unit_jobs(self) -> int | None:
        """Processes a unit may start (SVM fits): ``--jobs``, at most the unit's CPUs; ``None``
        (every core, as memory allows) for a serial run without ``--jobs``."""
        if self.cpus_per_unit is None and self.executor == SERIAL:
            return self.jobs
        cpus = int(self.cpus_per_unit or 1)
        return max(1, min(self.jobs or cpus, cpus))

    @property
    def engine(self):
        """The :class:`autogcl.devices.Engine` of ``--device``, ``--precision``, ``--compile`` and
        ``--deterministic``."""
        from .devices import Engine

        return Engine(self.device, self.precision, self.compile, self.deterministic)

    @property
    def seed_list(self) -> list[int]:
        return list(range(self.first_seed, self.first_seed + self.seeds))

    @property
    def fetch(self) -> bool | None:
        """The ``download`` argument of the dataset loaders: ``True`` with ``--download``."""
        return True if self.download else None

    @property
    def progress(self) -> bool | None:
        return False if self.no_progress else None
