"""Learning curves: every loss term and accuracy per epoch, one line per run (mean over its
seeds and folds, with a band of ± one std), from the runs' ``metrics.csv`` files."""

from __future__ import annotations

import csv
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

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
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def metric_files(run_dir: Path) -> list[Path]:
    """Every unit's metrics.csv below a run folder (a unit, a seed or a row/method folder)."""
    run_dir = Path(run_dir)
    if (run_dir / "metrics.csv").is_file():
        return [run_dir / "metrics.csv"]
    return sorted(p for p in run_dir.rglob("metrics.csv") if ".partial" not in str(p))


def curves(run_dir: Path, phase: str = "train") -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """metric -> (epochs, mean, std) over the units of a run, for rows of ``phase``."""
    per_metric: dict[str, dict[int, list[float]]] = {}
    for f in metric_files(run_dir):
        for r in read_metrics(f):
            if r.get("phase", "train") != phase:
                continue
            e = int(r["epoch"])
            for k in LOSSES + ACCURACIES:
                v = r.get(k, "")
                if v not in ("", None) and np.isfinite(float(v)):
                    per_metric.setdefault(k, {}).setdefault(e, []).append(float(v))
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
        raise ValueError(f"no metrics.csv with phase {phase!r} below {', '.join(map(str, run_dirs))}")
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
