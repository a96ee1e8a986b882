"""Experiment tracking: what :class:`autogcl.train.Trainer` (and the chunked pre-training of
``autogcl transfer pretrain``) writes after every epoch for TensorBoard or MLflow (per-epoch
losses, evaluations, epoch time and throughput as scalars).

A tracker is any object with ``epoch(row, graphs)`` (called after each epoch with the epoch's
row and the number of graphs it trained on) and ``close()``. :class:`TensorBoardTracker`
writes TensorBoard event files with ``torch.utils.tensorboard``, which needs the
``tensorboard`` package (``pip install 'autogcl[tensorboard]'``); :class:`MLflowTracker` logs
the same scalars as the metrics of an MLflow run (``pip install 'autogcl[mlflow]'``).
``fit(log_dir=..., tracking=...)`` and the command line's ``--log-dir`` / ``--tracking``
(through :data:`LOG_DIR_ENV` and :data:`TRACKING_ENV`, which child processes and Ray workers
inherit) give every training run one: with TensorBoard a folder of its own under the log
folder, with MLflow a run of its own (named after it) in the store.
"""

from __future__ import annotations

import logging
import math
import os
import re
import time
from pathlib import Path

from ..choices import TRACK_MLFLOW, TRACK_TENSORBOARD, TRACKERS, check_choice
from ..errors import ConfigError

log = logging.getLogger(__name__)

__all__ = ["LOG_DIR_ENV", "MLFLOW_EXPERIMENT", "TRACKING_ENV", "MLflowTracker", "TensorBoardTracker", "fit_tracker",
           "scalars", "tracker_for"]

#: the environment variable through which ``--log-dir`` reaches every Trainer of a run
LOG_DIR_ENV = "AUTOGCL_LOG_DIR"
#: the environment variable through which ``--tracking`` does (unset: TensorBoard)
TRACKING_ENV = "AUTOGCL_TRACKING"
#: the MLflow experiment that autogcl's runs are logged under
MLFLOW_EXPERIMENT = "autogcl"
#: counters and rates of a row that are throughput, not evaluations (``perf/<name>``)
PERF_KEYS = ("molecules", "steps", "molecules_per_s", "peak_rss_mb")


def scalars(row: dict, graphs: int | None = None) -> dict[str, float]:
    """The scalars of an epoch's row, by TensorBoard tag: ``loss/<term>`` for the loss terms,
    ``eval/<name>`` for what the evaluation reported, ``perf/epoch_s``,
    ``perf/graphs_per_s`` and the counters of :data:`PERF_KEYS` as ``perf/<name>``; a row's
    ``phase`` (semi-supervised pre-training) prefixes them."""
    phase = row.get("phase")
    prefix = f"{phase}/" if isinstance(phase, str) and phase else ""
    out = {}
    for key, value in row.items():
        if key in ("epoch", "phase") or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(value):
            continue
        if key == "time_s":
            out[f"{prefix}perf/epoch_s"] = float(value)
            if graphs and value > 0:
                out[f"{prefix}perf/graphs_per_s"] = graphs / float(value)
        elif key == "loss" or key.endswith("_loss"):
            out[f"{prefix}loss/{key}"] = float(value)
        elif key in PERF_KEYS:
            out[f"{prefix}perf/{key}"] = float(value)
        else:
            out[f"{prefix}eval/{key}"] = float(value)
    return out


def _summary_writer():
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:  # torch's module imports the tensorboard package
        raise ConfigError("log_dir / --log-dir writes TensorBoard logs, which need the tensorboard package: "
                          "pip install 'autogcl[tensorboard]' (or pip install tensorboard)") from exc
    return SummaryWriter


def _mlflow_client():
    try:
        from mlflow.tracking import MlflowClient
    except ImportError as exc:
        raise ConfigError("tracking='mlflow' / --tracking mlflow logs to MLflow, which needs the mlflow package: "
                          "pip install 'autogcl[mlflow]' (or pip install mlflow-skinny)") from exc
    return MlflowClient


def check_tracking(tracking: str) -> None:
    """A :class:`ConfigError` now, before any training, for an unknown tracker or one whose
    package is missing."""
    check_choice("tracking", tracking, TRACKERS)
    (_summary_writer if tracking == TRACK_TENSORBOARD else _mlflow_client)()


class TensorBoardTracker:
    """Per-epoch scalars (:func:`scalars`) of one training run, as TensorBoard events in
    ``log_dir`` (step: the epoch). ``tensorboard --logdir LOG_DIR`` shows them while the run
    goes on (every epoch is flushed)."""

    def __init__(self, log_dir: str | Path):
        writer = _summary_writer()
        self.log_dir = Path(log_dir)
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"log_dir {self.log_dir}: cannot be created ({exc.strerror or exc})") from exc
        self.writer = writer(str(self.log_dir))

    def epoch(self, row: dict, graphs: int | None = None) -> None:
        for tag, value in scalars(row, graphs).items():
            self.writer.add_scalar(tag, value, int(row["epoch"]))
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def mlflow_uri(store: str | Path) -> str:
    """The MLflow tracking URI of ``store``: a URI as it is (``http://host:5000``,
    ``sqlite:///runs/mlflow.db``, ``file:///...``), a folder as the ``file:`` URI of a local
    file store."""
    text = str(store)
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:", text):  # a scheme (two letters at least: not a drive)
        return text
    return Path(text).resolve().as_uri()


#: MLflow's database stores (``sqlite:///...``, ``postgresql://...``): SQLAlchemy and alembic
#: talk to them, which ``mlflow-skinny`` (what ``autogcl[mlflow]`` may resolve to) lacks
DATABASE_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")


def check_store_packages(uri: str) -> None:
    """A :class:`ConfigError` saying what to install when the MLflow store ``uri`` is a
    database and the packages MLflow reads one with are missing (MLflow's own error names a
    module deep in its store code, or only "cannot log a run")."""
    import importlib.util

    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme not in DATABASE_SCHEMES:
        return
    missing = [m for m in ("sqlalchemy", "alembic") if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"MLflow tracking store {uri}: a {scheme} database store needs "
                          f"{' and '.join(missing)}, which are not installed: pip install {' '.join(missing)} "
                          "(the full mlflow package includes them; mlflow-skinny does not)")


class MLflowTracker:
    """Per-epoch scalars (:func:`scalars`) of one training run, as the metrics of an MLflow run
    named ``run_name`` in the experiment :data:`MLFLOW_EXPERIMENT` of the tracking store
    ``store`` (:func:`mlflow_uri`; step: the epoch), logged when each epoch ends, so that the
    MLflow UI shows a run while it goes on; ``close`` marks the run finished. The client is
    MLflow's own (``MlflowClient``): no active run or global state of ``mlflow`` is touched."""

    def __init__(self, store: str | Path, run_name: str):
        client = _mlflow_client()
        self.uri = mlflow_uri(store)
        check_store_packages(self.uri)
        try:
            self.client = client(tracking_uri=self.uri)
            exp = self.client.get_experiment_by_name(MLFLOW_EXPERIMENT)
            exp_id = exp.experiment_id if exp is not None else self.client.create_experiment(MLFLOW_EXPERIMENT)
            self.run_id = self.client.create_run(exp_id, run_name=run_name).info.run_id
        except Exception as exc:  # MLflow raises its own exception types for a store it cannot use
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"MLflow tracking store {self.uri}: cannot log a run there ({first}); a local folder "
                              "is MLflow's file store, which MLflow 3 opens only with MLFLOW_ALLOW_FILE_STORE=true; "
                              "or give a tracking URI (http://HOST:5000, sqlite:///PATH/mlflow.db)") from exc

    def epoch(self, row: dict, graphs: int | None = None) -> None:
        from mlflow.entities import Metric

        now, step = int(time.time() * 1000), int(row["epoch"])
        metrics = [Metric(tag, value, now, step) for tag, value in scalars(row, graphs).items()]
        if metrics:
            self.client.log_batch(self.run_id, metrics=metrics)

    def close(self) -> None:
        self.client.set_terminated(self.run_id)


def run_name(desc: str) -> str:
    """A folder name of a Trainer's description ("MUTAG-autogcl seed 0" -> "MUTAG-autogcl_seed_0")."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", desc or "train").strip("_") or "train"


def fit_tracker(log_dir: str | Path | None, desc: str, tracking: str | None = None):
    """The tracker of an estimator's ``fit(log_dir=..., tracking=...)``: TensorBoard scalars in
    ``log_dir`` or the metrics of an MLflow run in the store ``log_dir``; ``None`` without
    ``log_dir`` (then :data:`LOG_DIR_ENV` may still give the trainer one)."""
    if log_dir is None:
        if tracking is not None:
            check_tracking(tracking)
            if not os.environ.get(LOG_DIR_ENV):
                log.warning("%s: tracking=%r without log_dir: nothing is logged (give log_dir=..., a folder or, "
                            "for MLflow, a tracking store)", desc, tracking)
        return None
    return tracker_for(log_dir, desc, tracking=tracking)


def tracker_for(log_dir: str | Path | None, desc: str = "train", subfolder: bool = False,
                tracking: str | None = None):
    """The tracker of a training run: ``None`` without a log folder (``log_dir``, else
    :data:`LOG_DIR_ENV`). ``tracking`` (else :data:`TRACKING_ENV`, else ``"tensorboard"``):
    TensorBoard events go to ``log_dir`` itself, or to a folder named after ``desc`` inside it
    (``subfolder``, and always under :data:`LOG_DIR_ENV`, which a whole sweep of runs shares);
    MLflow metrics go to a run named after ``desc`` in the store ``log_dir``."""
    if log_dir is None:
        shared = os.environ.get(LOG_DIR_ENV)
        if not shared:
            return None
        log_dir, subfolder = shared, True
    tracking = tracking or os.environ.get(TRACKING_ENV) or TRACK_TENSORBOARD
    check_tracking(tracking)
    if tracking == TRACK_MLFLOW:
        return MLflowTracker(log_dir, run_name(desc))
    return TensorBoardTracker(Path(log_dir) / run_name(desc) if subfolder else Path(log_dir))
