"""Experiment tracking: what :class:`autogcl.train.Trainer` writes after every epoch for
TensorBoard (per-epoch losses, evaluations, epoch time and throughput as scalars).

A tracker is any object with ``epoch(row, graphs)`` (called after each epoch with the epoch's
row and the number of graphs it trained on) and ``close()``. :class:`TensorBoardTracker`
writes TensorBoard event files with ``torch.utils.tensorboard``, which needs the
``tensorboard`` package (``pip install 'autogcl[tensorboard]'``). ``fit(log_dir=...)`` and the
command line's ``--log-dir`` (through :data:`LOG_DIR_ENV`, which child processes and Ray
workers inherit) give every Trainer one, in a folder of its own under the log folder.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from ..errors import ConfigError

__all__ = ["LOG_DIR_ENV", "TensorBoardTracker", "scalars", "tracker_for"]

#: the environment variable through which ``--log-dir`` reaches every Trainer of a run
LOG_DIR_ENV = "AUTOGCL_LOG_DIR"


def scalars(row: dict, graphs: int | None = None) -> dict[str, float]:
    """The scalars of an epoch's row, by TensorBoard tag: ``loss/<term>`` for the loss terms,
    ``eval/<name>`` for what the evaluation reported, ``perf/epoch_s`` and
    ``perf/graphs_per_s``; a row's ``phase`` (semi-supervised pre-training) prefixes them."""
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


def run_name(desc: str) -> str:
    """A folder name of a Trainer's description ("MUTAG-autogcl seed 0" -> "MUTAG-autogcl_seed_0")."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", desc or "train").strip("_") or "train"


def tracker_for(log_dir: str | Path | None, desc: str = "train", subfolder: bool = False):
    """The tracker of a training run: ``None`` without a log folder (``log_dir``, else
    :data:`LOG_DIR_ENV`); the run's events go to ``log_dir`` itself, or to a folder named
    after ``desc`` inside it (``subfolder``, and always under :data:`LOG_DIR_ENV`, which a
    whole sweep of runs shares)."""
    if log_dir is None:
        shared = os.environ.get(LOG_DIR_ENV)
        if not shared:
            return None
        log_dir, subfolder = shared, True
    return TensorBoardTracker(Path(log_dir) / run_name(desc) if subfolder else Path(log_dir))
