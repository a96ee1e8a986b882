"""Hyper-parameter search that reads validation only (``autogcl tune``; :func:`tune`): Ray Tune
runs the trials, Optuna's TPE sampler proposes configurations and ASHA stops bad trials early.

Selection is nested. The graphs are split into the outer folds of the semi-supervised protocol
(:func:`autogcl.data.splits.semi_splits`: a test fold, the previous fold for validation, the
rest for training, and for ``semi`` a labeled share of the training part). Each outer fold runs
a search of its own, whose trials train on that fold's training part and are scored on its
validation fold only: ``val_best``, the best validation accuracy over the trial's epochs, is
what TPE, ASHA and the choice read. Every trial also records, for the report alone, the test
fold's accuracy at its best validation epoch (``val``) and its best test accuracy over epochs
(``test_max``). The chosen configuration of each outer fold (the best ``val_best``, the earliest
trial on ties) reports its ``val`` and ``test_max``: the search's held-out numbers.

The trials compose the public estimators (:class:`autogcl.SemiSupervised`,
:class:`autogcl.AutoGCL`, :class:`autogcl.GraphCL`); a configuration is their constructor's
arguments plus ``epochs`` (and ``pretrain_epochs`` for ``semi``). This module imports neither
torch nor Ray until a search runs, so the command line's parser is built without them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import signal
from dataclasses import dataclass
from pathlib import Path

from ..choices import AUGMENTATIONS, AUG_RANDOM4, FOLD_SEED, TUNE_ESTIMATORS, check_choice
from ..config import Config, option
from ..errors import ConfigError, DataError

__all__ = ["SPACES", "TUNE_ESTIMATORS", "TuneConfig", "check_space_keys", "choose", "parse_space", "table", "tune"]

log = logging.getLogger("autogcl.tune")

_WIDTHS = [32, 64, 128]
_AUGS = [a for a in AUGMENTATIONS if a != "none"]

#: the documented search space of each estimator: a list is a choice among its values, a tuple
#: ``("loguniform" | "uniform", low, high)`` or ``("randint", low, high)`` a range (high
#: excluded for randint), anything else a fixed value. Keys are the estimator's constructor
#: arguments, plus ``epochs`` (and ``pretrain_epochs``, default ``epochs``, for ``semi``'s
#: strategies with pre-training); ``epochs`` is capped by ``max_epochs``.
SPACES = {
    "semi": {"classifier": ["resgcn", "gin"], "hidden": _WIDTHS, "num_layers": [2, 3, 4, 5],
             "lr": ("loguniform", 1e-4, 1e-2),
             "tau": ("uniform", 0.1, 1.0), "aug": _AUGS, "aug_ratio": ("uniform", 0.05, 0.4),
             "gen_hidden": _WIDTHS, "strategy": ["joint", "supervised", "graphcl", "naive"],
             "epochs": [10, 20, 30, 50]},
    "autogcl": {"hidden": _WIDTHS, "num_layers": [2, 3, 4, 5], "lr": ("loguniform", 1e-4, 1e-2),
                "tau": ("uniform", 0.1, 1.0), "gen_hidden": _WIDTHS, "epochs": [10, 20, 30, 50]},
    "graphcl": {"hidden": _WIDTHS, "num_layers": [2, 3, 4, 5], "lr": ("loguniform", 1e-4, 1e-2),
                "tau": ("uniform", 0.1, 1.0), "aug": [AUG_RANDOM4, *_AUGS[:4]], "aug_ratio": ("uniform", 0.05, 0.4),
                "epochs": [10, 20, 30, 50]},
}
_RANGES = ("loguniform", "uniform", "randint")

#: the metric every trial reports and the search maximises: the best validation accuracy so far
METRIC = "val_best"


@dataclass
class TuneConfig(Config):
    """What a search runs (``autogcl tune``'s options; :func:`tune`'s arguments)."""

    estimator: str = option("semi", "the estimator whose configuration is searched", choices=TUNE_ESTIMATORS)
    dataset: str = option("MUTAG", "TU dataset name")
    feat: str = option("deg+odeg100", "node-feature recipe")
    trials: int = option(20, "trials (configurations) per outer fold", low=1)
    max_epochs: int = option(30, "the most epochs a trial trains (ASHA's max_t; caps the space's epochs)", low=1)
    grace_epochs: int = option(5, "epochs every trial runs before ASHA may stop it", low=1)
    folds: int = option(10, "outer folds of the split (each: a test fold, the previous one for validation)", low=3)
    fold_limit: int | None = option(None, "search only the first N outer folds (default: all)", type=int, low=1)
    label_rate: float = option(0.1, "semi: labeled share of the whole dataset", low=0, high=1, low_open=True,
                               high_open=True)
    batch_size: int = option(128, "batch size of every trial", low=2)
    seed: int = option(0, "seed of the trials' training and of the TPE sampler", low=0)
    space: list | None = option(None, "change the search space: KEY=V1,V2 (a choice), KEY=V (fixed), "
                                "KEY=loguniform:LOW:HIGH, uniform:LOW:HIGH or randint:LOW:HIGH", type=str,
                                metavar="KEY=SPEC", many=True)
    num_cpus: int | None = option(None, "CPUs of the local Ray cluster (default: every core)", type=int, low=1)
    address: str | None = option(None, "a running Ray cluster to join (auto or HOST:PORT; default: a local one)",
                                 type=str, metavar="ADDR")
    cpus_per_trial: float = option(1.0, "CPUs (torch threads) of each trial", low=0, low_open=True)
    gpus_per_trial: float = option(0.0, "GPUs of each trial (fractions share a GPU)", low=0)
    concurrent: int | None = option(None, "trials running at once (default: as the CPUs allow)", type=int, low=1)
    out: str = option("runs/tune", "run directory (OUT/DATASET-ESTIMATOR/: one Ray Tune experiment per fold)")
    resume: bool = option(False, "continue an interrupted search (Ray Tune's restore); finished folds are kept")
    data_root: str | None = option(None, "data root (else $AUTOGCL_DATA, else the project cache)", type=str)

    def __post_init__(self):
        self.check_choices()
        parse_space(self.estimator, self.space)  # a bad space is an error before anything runs
        if self.grace_epochs > self.max_epochs:
            raise ConfigError(f"--grace-epochs {self.grace_epochs} is above --max-epochs {self.max_epochs}")

    @property
    def name(self) -> str:
        return f"{self.dataset}-{self.estimator}"

    def search_key(self) -> dict:
        """What defines the search's results (a resumed search must have the same)."""
        d = self.to_dict()
        for k in ("num_cpus", "address", "cpus_per_trial", "gpus_per_trial", "concurrent", "out", "resume",
                  "data_root", "fold_limit"):
            d.pop(k)
        d["space"] = parse_space(self.estimator, self.space)  # the whole space, however it was given
        return json.loads(json.dumps(d))  # as search.json stores it (a range's tuple is a list there)


def _value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def parse_space(estimator: str, changes=None) -> dict:
    """The search space of ``estimator`` (:data:`SPACES`) with ``changes``: a dict of key ->
    spec (as :data:`SPACES`), or the command line's ``KEY=SPEC`` strings."""
    check_choice("estimator", estimator, TUNE_ESTIMATORS, flag="--estimator")
    space = dict(SPACES[estimator])
    if isinstance(changes, dict):
        items = list(changes.items())
    else:
        items = []
        for text in changes or []:
            key, sep, spec = str(text).partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"--space {text!r}: expected KEY=SPEC (e.g. hidden=32,64 or lr=loguniform:1e-4:1e-2)")
            kind, colon, bounds = spec.partition(":")
            if colon and kind in _RANGES:
                parts = bounds.split(":")
                if len(parts) != 2:
                    raise ConfigError(f"--space {text!r}: a range is {kind}:LOW:HIGH")
                items.append((key.strip(), (kind, *map(_value, parts))))
            else:
                values = [_value(v.strip()) for v in spec.split(",") if v.strip()]
                if not values:
                    raise ConfigError(f"--space {text!r}: no value given")
                items.append((key.strip(), values if len(values) > 1 else values[0]))
    for key, spec in items:
        if isinstance(spec, tuple):
            if len(spec) != 3 or spec[0] not in _RANGES or not all(isinstance(b, int | float) for b in spec[1:]) \
                    or not spec[1] < spec[2] or (spec[0] == "loguniform" and spec[1] <= 0):
                raise ConfigError(f"search space {key}={spec!r}: a range is (kind, low, high) with low < high, "
                                  f"kind one of {', '.join(_RANGES)} (loguniform: low > 0)")
        elif isinstance(spec, list) and not spec:
            raise ConfigError(f"search space {key}: an empty choice")
        space[key] = spec
    return space


def _ray_space(space: dict) -> dict:
    """The space as Ray Tune's distributions (OptunaSearch turns them into Optuna's)."""
    from ray import tune as rt

    out = {}
    for key, spec in space.items():
        if isinstance(spec, list):
            out[key] = rt.choice(spec) if len(spec) > 1 else spec[0]
        elif isinstance(spec, tuple):
            out[key] = getattr(rt, spec[0])(spec[1], spec[2])
        else:
            out[key] = spec
    return out


def choose(trials: list[dict]) -> dict | None:
    """The chosen trial: the best ``val_best`` (validation accuracy), the earliest trial on ties;
    ``None`` when no trial has one. Reads nothing of the test fold."""
    scored = [t for t in trials if t.get(METRIC) is not None and math.isfinite(t[METRIC])]
    return max(scored, key=lambda t: (t[METRIC], -t["order"])) if scored else None


# ------------------------------------------------------------------ a trial (runs on a Ray worker)
#: the keys of a configuration that are ``fit``'s, not the estimator's
FIT_KEYS = ("epochs", "pretrain_epochs")


def _estimator_class(estimator: str):
    import autogcl

    return {"semi": autogcl.SemiSupervised, "autogcl": autogcl.AutoGCL, "graphcl": autogcl.GraphCL}[estimator]


def check_space_keys(estimator: str, space: dict) -> None:
    """A :class:`ConfigError` naming a key of ``space`` that is neither an argument of the
    estimator's constructor nor of its ``fit`` (:data:`FIT_KEYS`), before any trial runs."""
    import inspect

    cls = _estimator_class(estimator)
    known = set(inspect.signature(cls).parameters) - {"in_channels", "num_classes"}
    fit_keys = set(FIT_KEYS) if estimator == "semi" else {"epochs"}
    bad = sorted(set(space) - known - fit_keys)
    if bad:
        raise ConfigError(f"search space key(s) {', '.join(bad)}: not an argument of {cls.__name__} nor of its fit "
                          f"({', '.join(sorted(known | fit_keys))})")


def _build(estimator: str, config: dict, dataset):
    kwargs = {k: v for k, v in config.items() if k not in FIT_KEYS}
    if estimator == "semi":
        return _estimator_class(estimator)(dataset.num_features, dataset.num_classes, **kwargs)
    return _estimator_class(estimator)(dataset.num_features, **kwargs)


class _Record:
    """A trial's running scores, reported every epoch: this epoch's ``val_acc`` and
    ``test_acc``, ``val_best`` (the metric) and, for the report only, ``val`` (the test accuracy
    at the best validation epoch, the first on ties) and ``test_max``."""

    def __init__(self):
        self.best = self.at_best = self.test_max = None

    def epoch(self, epoch: int, val_acc: float, test_acc: float) -> dict:
        if self.best is None or val_acc > self.best:
            self.best, self.at_best = val_acc, test_acc
        self.test_max = test_acc if self.test_max is None else max(self.test_max, test_acc)
        return {"epoch": epoch, "val_acc": val_acc, "test_acc": test_acc, METRIC: self.best, "val": self.at_best,
                "test_max": self.test_max}


def _svm_scores(emb, y, split, cs) -> tuple[float, float]:
    """Validation and test accuracy of an RBF SVM on standardised embeddings, fitted on the
    training part; C is chosen on the validation fold (the first best)."""
    import numpy as np
    from sklearn.svm import SVC

    x = emb.numpy().astype(np.float64)
    train = split.train
    mean, std = x[train].mean(0), x[train].std(0)
    x = (x - mean) / np.where(std > 0, std, 1.0)
    best = None
    for c in cs:
        clf = SVC(C=c, kernel="rbf", gamma="scale").fit(x[train], y[train])
        val = float((clf.predict(x[split.val]) == y[split.val]).mean())
        if best is None or val > best[0]:
            best = (val, float((clf.predict(x[split.test]) == y[split.test]).mean()))
    return best


def _trial(config: dict, *, estimator: str, dataset, split, max_epochs: int, batch_size: int, seed: int,
           threads: int, device: str = "cpu") -> None:
    """Train one configuration on one outer fold's training part on ``device`` (``"auto"``:
    the GPU Ray gave the trial), reporting the scores of every epoch to Ray Tune (which may
    stop it: ASHA)."""
    import numpy as np
    import torch
    from ray import tune as rt

    from .. import preempt, seeding
    from ..eval.svm import C_GRID

    preempt.enabled = False  # the worker's signals are Ray's
    torch.set_num_threads(max(1, threads))
    epochs = min(int(config.get("epochs", max_epochs)), max_epochs)
    gen = seeding.seed_everything(seed * 1000 + split.fold)
    model = _build(estimator, config, dataset)
    record = _Record()
    y = np.asarray(dataset._data.y).reshape(-1)
    if estimator == "semi":
        part = {k: dataset[torch.tensor(getattr(split, k), dtype=torch.long)] for k in ("train", "val", "test")}
        labels = torch.full((len(split.train),), -1, dtype=torch.long)
        at = torch.as_tensor(np.searchsorted(split.train, split.labeled), dtype=torch.long)
        labels[at] = torch.as_tensor(y[split.labeled], dtype=torch.long)

        def evaluate(epoch):
            rt.report(record.epoch(epoch, model.score(part["val"], batch_size=batch_size),
                                   model.score(part["test"], batch_size=batch_size)))

        model.fit(part["train"], labels=labels, epochs=epochs, pretrain_epochs=int(config.get("pretrain_epochs", epochs)),
                  batch_size=batch_size, device=device, seed=gen, progress=False, evaluate=evaluate)
    else:
        def evaluate(epoch):
            rt.report(record.epoch(epoch, *_svm_scores(model.embed(dataset), y, split, C_GRID[2:6])))

        model.fit(dataset, epochs=epochs, batch_size=batch_size, device=device, seed=int(seed * 1000 + split.fold),
                  progress=False, evaluate=evaluate)


# ------------------------------------------------------------------ the driver
class _Lines:
    """Ray Tune callback: one plain log line per trial event, for a cluster's log."""

    def __new__(cls, fold: int):
        from ray.tune import Callback

        class Lines(Callback):
            def on_trial_start(self, iteration, trials, trial, **info):
                log.info("tune fold %d: trial %s started: %s", fold, trial.trial_id, _shown(trial.config))

            def on_trial_result(self, iteration, trials, trial, result, **info):
                log.info("tune fold %d: trial %s epoch %d: val %.4f (best %.4f)", fold, trial.trial_id,
                         result.get("epoch", 0), result.get("val_acc", float("nan")), result.get(METRIC, float("nan")))

            def on_trial_complete(self, iteration, trials, trial, **info):
                last = trial.last_result or {}
                log.info("tune fold %d: trial %s done after %d epoch(s): best val %.4f", fold, trial.trial_id,
                         last.get("epoch", 0), last.get(METRIC, float("nan")))

            def on_trial_error(self, iteration, trials, trial, **info):
                log.error("tune fold %d: trial %s FAILED with configuration %s (its error: %s)", fold,
                          trial.trial_id, _shown(trial.config), trial.error_file or "see the trial's folder")

        return Lines()


def _shown(config: dict) -> str:
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(config.items()))


@contextlib.contextmanager
def _sigterm_stops_tune():
    """SIGTERM (a cluster's preemption) stops the search as Ctrl-C does: Ray Tune saves the
    experiment's state (its SIGUSR1), and the list it yields holds the signal."""
    noted: list[int] = []

    def handler(signum, frame):
        if not noted:
            log.warning("tune: SIGTERM received: saving the search's state and stopping (resume with --resume)")
        noted.append(signum)
        os.kill(os.getpid(), signal.SIGUSR1)

    import threading

    if threading.current_thread() is not threading.main_thread():
        yield noted
        return
    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield noted
    finally:
        signal.signal(signal.SIGTERM, old)


def interrupted(stopped: list[int], finished: int, trials: int) -> int | None:
    """The signal that stopped a search, or ``None`` when it ran to its end: SIGTERM when
    :func:`_sigterm_stops_tune` noted one; SIGINT (Ray Tune's own Ctrl-C handler) when fewer
    than ``trials`` trials finished (ended, stopped by ASHA, or failed) without it."""
    if stopped:
        return signal.SIGTERM
    return signal.SIGINT if finished < trials else None


def _records(grid) -> list[dict]:
    """One record per trial of a finished (or stopped) search: its configuration, status,
    epochs, ``val_best``, ``val``, ``test_max`` and, for a failed trial, its error."""
    out = []
    for res in grid:
        m = res.metrics or {}
        trial_id = m.get("trial_id") or Path(res.path).name
        out.append({"trial": trial_id, "config": dict(res.config or {}), "status": "error" if res.error else "done",
                    "epochs": m.get("epoch"), METRIC: m.get(METRIC), "val": m.get("val"), "test_max": m.get("test_max"),
                    **({"error": f"{type(res.error).__name__}: {str(res.error).strip().splitlines()[-1][:400]}"}
                       if res.error else {})})
    for i, r in enumerate(out):  # the grid lists the trials in the order they were created
        r["order"] = i
    return out


def _splits(cfg: TuneConfig, dataset):
    import numpy as np

    from ..data.splits import semi_splits

    y = np.asarray(dataset._data.y).reshape(-1)
    return semi_splits(y, cfg.folds, cfg.label_rate, FOLD_SEED)


def _search_fold(cfg: TuneConfig, dataset, split, root: Path, space: dict) -> dict:
    """One outer fold's search (new, or restored from its experiment folder); its record."""
    import optuna
    from ray import tune as rt
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search.optuna import OptunaSearch

    from ..atomic import atomic_write_json, read_json

    done = root / f"fold{split.fold}.json"
    if done.is_file():
        log.info("tune fold %d: finished before (%s)", split.fold, done)
        return read_json(done)
    trainable = rt.with_resources(
        rt.with_parameters(_trial, estimator=cfg.estimator, dataset=dataset, split=split, max_epochs=cfg.max_epochs,
                           batch_size=cfg.batch_size, seed=cfg.seed, threads=int(max(1, cfg.cpus_per_trial)),
                           device="auto" if cfg.gpus_per_trial else "cpu"),
        {"cpu": cfg.cpus_per_trial, "gpu": cfg.gpus_per_trial})
    path = root / f"fold{split.fold}"
    if path.exists() and rt.Tuner.can_restore(str(path)):
        log.info("tune fold %d: resuming the search in %s", split.fold, path)
        tuner = rt.Tuner.restore(str(path), trainable, resume_unfinished=True, resume_errored=False,
                                 restart_errored=False)
    else:
        searcher = OptunaSearch(metric=METRIC, mode="max", sampler=optuna.samplers.TPESampler(seed=cfg.seed + split.fold))
        scheduler = ASHAScheduler(metric=METRIC, mode="max", max_t=cfg.max_epochs, grace_period=cfg.grace_epochs)
        tuner = rt.Tuner(
            trainable, param_space=_ray_space(space),
            tune_config=rt.TuneConfig(search_alg=searcher, scheduler=scheduler, num_samples=cfg.trials,
                                      max_concurrent_trials=cfg.concurrent, reuse_actors=True),
            run_config=rt.RunConfig(name=path.name, storage_path=str(root), verbose=0,
                                    callbacks=[_Lines(split.fold)],
                                    failure_config=rt.FailureConfig(max_failures=0, fail_fast=False)))
    with _sigterm_stops_tune() as stopped:
        grid = tuner.fit()
    signum = interrupted(stopped, grid.num_terminated + grid.num_errors, cfg.trials)
    if signum is not None:
        from ..errors import Preempted

        raise Preempted(signum, where=f"the search of fold {split.fold} stopped; its state is in {path}")
    trials = _records(grid)
    failed = [t for t in trials if t["status"] == "error"]
    for t in failed:
        log.error("tune fold %d: trial %s failed with configuration %s: %s", split.fold, t["trial"],
                  _shown(t["config"]), t["error"])
    chosen = choose(trials)
    if chosen is None:
        raise DataError(f"tune fold {split.fold}: no trial finished an epoch ({len(failed)} failed; the first with "
                        f"configuration {_shown(failed[0]['config']) if failed else '-'}: "
                        f"{failed[0]['error'] if failed else '-'}); see {path}")
    record = {"fold": split.fold, "chosen": {k: chosen[k] for k in ("trial", "config", METRIC, "val", "test_max")},
              "trials": trials, "failed": len(failed),
              "sizes": {k: len(getattr(split, k)) for k in ("train", "labeled", "val", "test")}}
    atomic_write_json(done, record)
    log.info("tune fold %d: chose trial %s (val_best %.4f): %s; its test accuracy: val %.4f, test_max %.4f",
             split.fold, chosen["trial"], chosen[METRIC], _shown(chosen["config"]), chosen["val"], chosen["test_max"])
    return record


@contextlib.contextmanager
def _ray(cfg: TuneConfig):
    """Ray, joined (``address``), already running in this process, or started locally."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("autogcl tune needs Ray Tune and Optuna: pip install 'autogcl[tune]'") from exc
    try:
        import optuna  # noqa: F401
        import ray.tune  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"autogcl tune needs Ray Tune and Optuna ({exc}): pip install 'autogcl[tune]'") from exc
    from ..executors import check_reachable

    if ray.is_initialized():
        yield
        return
    check_reachable(cfg.address)
    cache = os.environ.get("AUTOGCL_CACHE")
    ray.init(address=cfg.address, num_cpus=None if cfg.address else cfg.num_cpus, include_dashboard=False,
             logging_level=logging.WARNING, log_to_driver=False,
             runtime_env={"env_vars": {"AUTOGCL_CACHE": cache}} if cache else None)
    try:
        yield
    finally:
        ray.shutdown()


def tune(cfg: TuneConfig | None = None, graphs=None, splits=None, **options) -> dict:
    """Run the nested search :class:`TuneConfig` describes (``options``: its fields, e.g.
    ``tune(estimator="semi", dataset="MUTAG", trials=20)``) and return its summary: per outer
    fold the chosen configuration with its ``val_best``, ``val`` and ``test_max``, and every
    trial's record; the mean and std of the chosen ``val`` and ``test_max`` over the folds.
    ``graphs``: a PyG dataset (with ``y``) to search on instead of loading ``cfg.dataset``
    (which still names the folder);
    ``splits``: its outer folds (:class:`autogcl.data.splits.SemiSplit` objects) instead of
    those :func:`autogcl.data.splits.semi_splits` draws from its labels.

    Written under ``OUT/DATASET-ESTIMATOR/``: ``foldK/`` (the Ray Tune experiment),
    ``foldK.json`` (its trials and choice), ``search.json`` (the search's settings) and
    ``summary.json``. Ray is started locally (``num_cpus``), joined (``address``: then ``out``
    must be storage every node sees, as for ``--executor ray``), or used as this process
    already has it. SIGTERM or Ctrl-C stops the search with its state saved:
    :class:`autogcl.errors.Preempted`; the same call with ``resume=True`` continues it."""
    import numpy as np

    from ..atomic import atomic_write_json, read_json

    cfg = TuneConfig(**options) if cfg is None else cfg
    space = parse_space(cfg.estimator, cfg.space)
    check_space_keys(cfg.estimator, space)
    root = Path(cfg.out).resolve() / cfg.name
    key = cfg.search_key()
    if (root / "search.json").is_file():
        if not cfg.resume:
            raise ConfigError(f"{root} holds a search already; continue it with --resume (resume=True), or choose "
                              "another --out")
        if read_json(root / "search.json") != key:
            raise ConfigError(f"{root} holds a search of other settings ({root / 'search.json'}); resume it with the "
                              "same options, or choose another --out")
    if graphs is None:
        from ..data import load_tu

        graphs = load_tu(cfg.dataset, cfg.data_root, cfg.feat)
    dataset = graphs
    splits = (_splits(cfg, dataset) if splits is None else list(splits))[:cfg.fold_limit or cfg.folds]
    root.mkdir(parents=True, exist_ok=True)
    atomic_write_json(root / "search.json", key)
    log.info("tune %s: %d trial(s) per fold on %d outer fold(s), up to %d epochs, TPE + ASHA (grace %d); space: %s",
             cfg.name, cfg.trials, len(splits), cfg.max_epochs, cfg.grace_epochs, space)
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # verbose=0: no tables, the progress lines alone
    pending = [s for s in splits if not (root / f"fold{s.fold}.json").is_file()]
    with _ray(cfg) if pending else contextlib.nullcontext():  # no cluster for a search that has finished
        folds = [_search_fold(cfg, dataset, split, root, space) for split in splits]
    chosen = {s: np.array([f["chosen"][s] for f in folds], dtype=float) for s in ("val", "test_max")}
    from ..provenance import code_commit

    commit, dirty = code_commit()
    summary = {"protocol": "tune", "search": key, "provenance": {"commit": commit, "dirty": dirty},
               "space": {k: list(v) if isinstance(v, tuple) else v for k, v in space.items()},
               "selection": f"per outer fold, the trial with the best {METRIC} (validation fold only)",
               "folds": [{k: f[k] for k in ("fold", "chosen", "failed")} for f in folds],
               **{s: {"mean": float(a.mean()), "std": float(a.std()), "n": len(a)} for s, a in chosen.items()}}
    atomic_write_json(root / "summary.json", summary)
    return summary


def table(summary: dict) -> str:
    """The summary as Markdown: each outer fold's chosen configuration and its test accuracy."""
    lines = ["| fold | chosen configuration | val_best | val (test) | test_max (test) |", "|---|---|---|---|---|"]
    for f in summary["folds"]:
        c = f["chosen"]
        lines.append(f"| {f['fold']} | {_shown(c['config'])} | {100 * c[METRIC]:.2f} | {100 * c['val']:.2f} | "
                     f"{100 * c['test_max']:.2f} |")
    lines.append(f"| mean ± std | | | {100 * summary['val']['mean']:.2f} ± {100 * summary['val']['std']:.2f} | "
                 f"{100 * summary['test_max']['mean']:.2f} ± {100 * summary['test_max']['std']:.2f} |")
    return "\n".join(lines)
