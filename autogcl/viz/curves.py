"""Learning curves: every loss term and accuracy per epoch, one line per run (mean over its
seeds and folds, with a band of ± one std), from the runs' ``metrics.csv`` files."""

from __future__ import annotations

import csv
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from ..errors import DataError
from . import save_figure

LOSSES = ("loss", "cl_loss", "cls_loss", "sim_loss")
ACCURACIES = ("test_acc", "val_acc", "labeled_acc", "svm_test_acc", "svm_val_acc")
TITLES = {
    "loss": "total loss", "cl_loss": "contrastive loss L_cl", "cls_loss": "classification loss L_cls",
    "sim_loss": "similarity loss L_sim", "test_acc": "test accuracy", "val_acc": "validation accuracy",
    "labeled_acc": "accuracy on the labeled training data", "svm_test_acc": "SVM test accuracy",
    "svm_val_acc": "SVM inner-CV accuracy",
}


def read_metrics(path: Path) -> list[dict]:
    """The rows of a ``metrics.csv``; a file that cannot be read as one (no ``epoch`` column,
    bytes that are not text) is a :class:`DataError` naming it."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            columns = reader.fieldnames or []
    except (UnicodeDecodeError, csv.Error, OSError) as exc:
        raise DataError(f"{path}: not a readable metrics.csv ({type(exc).__name__}: {exc})") from None
    if rows and "epoch" not in columns:
        raise DataError(f"{path}:1: no 'epoch' column (columns are {columns}); not a metrics.csv of autogcl")
    return rows


def metric_files(run_dir: Path) -> list[Path]:
    """Every unit's metrics.csv below a run folder (a unit, a seed or a row/method folder), or
    the file itself."""
    run_dir = Path(run_dir)
    if run_dir.is_file() and run_dir.suffix == ".csv":
        return [run_dir]
    if (run_dir / "metrics.csv").is_file():
        return [run_dir / "metrics.csv"]
    return sorted(p for p in run_dir.rglob("metrics.csv") if ".partial" not in str(p))


def _number(text, path: Path, line: int, column: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        raise DataError(f"{path}:{line}: {column} {text!r} is not a number") from None


def curves(run_dir: Path, phase: str = "train") -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """metric -> (epochs, mean, std) over the units of a run, for rows of ``phase``."""
    per_metric: dict[str, dict[int, list[float]]] = {}
    for f in metric_files(run_dir):
        for line, r in enumerate(read_metrics(f), start=2):
            if r.get("phase", "train") != phase:
                continue
            e = _number(r["epoch"], f, line, "epoch")
            if not np.isfinite(e) or e != int(e):
                raise DataError(f"{f}:{line}: epoch {r['epoch']!r} is not a whole number")
            for k in LOSSES + ACCURACIES:
                v = r.get(k, "")
                if v not in ("", None) and np.isfinite(_number(v, f, line, k)):
                    per_metric.setdefault(k, {}).setdefault(int(e), []).append(float(v))
    out = {}
    for k, by_epoch in per_metric.items():
        epochs = np.array(sorted(by_epoch))
        vals = [np.array(by_epoch[e]) for e in epochs]
        out[k] = (epochs, np.array([v.mean() for v in vals]), np.array([v.std() for v in vals]))
    return out


def plot_curves(run_dirs: list[Path], out: Path, labels: list[str] | None = None, phase: str = "train",
                title: str | None = None) -> list[Path]:
    """Draw the curves of several runs on shared panels; writes ``out`` (.png) and an .svg."""
    labels = labels or [Path(d).name for d in run_dirs]
    data = [curves(Path(d), phase) for d in run_dirs]
    if not any(data):
        raise DataError(f"no metrics.csv with phase {phase!r} below {', '.join(map(str, run_dirs))}")
    if labels is not None and len(labels) != len(run_dirs):
        raise DataError(f"{len(labels)} label(s) for {len(run_dirs)} run folder(s)")
    metrics = [m for m in LOSSES + ACCURACIES if any(m in d for d in data)]
    cols = min(4, len(metrics))
    rows = int(np.ceil(len(metrics) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, m in zip(axes.flat, metrics):
        for i, (d, label) in enumerate(zip(data, labels)):
            if m not in d:
                continue
            e, mean, std = d[m]
            colour = f"C{i % 10}"  # one colour per run in every panel, even where a run has no curve
            ax.plot(e, mean, marker="o" if len(e) < 8 else None, ms=3, label=label, color=colour)
            ax.fill_between(e, mean - std, mean + std, alpha=0.2, color=colour)
        ax.set_title(TITLES.get(m, m), fontsize=10)
        ax.set_xlabel("epoch")
        ax.set_ylabel("accuracy" if m.endswith("acc") else "loss")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(metrics):]:
        ax.axis("off")
    top = 1 - 0.7 / (3.2 * rows + 0.7)  # room for the title and the legend above the panels
    fig.tight_layout(rect=(0, 0, 1, top))
    handles = [plt.Line2D([], [], color=f"C{i % 10}") for i in range(len(labels))]
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, top + (1 - top) * 0.55),
               ncol=min(len(labels), 4), frameon=False)
    fig.suptitle(title or f"Learning curves ({phase} phase; mean ± std over seeds and folds)", y=0.995)
    return save_figure(fig, out, dpi=130)
