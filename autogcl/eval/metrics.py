"""Scores of trained models: classification accuracy over a loader, multi-task ROC-AUC and
regression scores (RMSE, MAE, R²)."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..train.loop import to_device


@torch.no_grad()
def accuracy(model: torch.nn.Module, loader, device: torch.device | None = None) -> float:
    """Share of the loader's graphs whose argmax class (``model(batch)``, eval mode) is ``y``."""
    model.eval()
    correct = total = 0
    for batch in loader:
        batch = to_device(batch, device)
        correct += int((model(batch).argmax(1) == batch.y.view(-1)).sum())
        total += int(batch.num_graphs)
    return correct / max(total, 1)


def roc_auc(y: np.ndarray, scores: np.ndarray) -> tuple[float, int]:
    """Mean ROC-AUC over the tasks that have both classes among the labeled entries, and how
    many tasks that is (NaN, 0 when none has). ``y``: graphs x tasks, NaN = no label."""
    from sklearn.metrics import roc_auc_score  # here: scikit-learn takes a second to import, and embedding needs none

    y, scores = np.asarray(y), np.asarray(scores)
    aucs = []
    for t in range(y.shape[1]):
        lab = ~np.isnan(y[:, t])
        yt = y[lab, t]
        if yt.size and yt.min() != yt.max():
            aucs.append(roc_auc_score(yt, scores[lab, t]))
    return (float(np.mean(aucs)), len(aucs)) if aucs else (math.nan, 0)


def regression_scores(y: np.ndarray, pred: np.ndarray) -> tuple[dict, int]:
    """``({"rmse", "mae", "r2"}, tasks)``: each score averaged over the tasks that have at
    least two labeled entries (``y``: graphs x tasks, NaN = no label; ``pred`` in the same
    units), and how many tasks that is (NaN scores, 0 when none has). R² is
    ``1 - SS_res / SS_tot`` of the task's labeled entries (NaN for a task whose labels are all
    equal)."""
    y = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
    pred = np.asarray(pred, dtype=np.float64).reshape(y.shape)
    rmse, mae, r2 = [], [], []
    for t in range(y.shape[1]):
        lab = ~np.isnan(y[:, t])
        if lab.sum() < 2:
            continue
        err = pred[lab, t] - y[lab, t]
        rmse.append(math.sqrt(float(np.mean(err ** 2))))
        mae.append(float(np.mean(np.abs(err))))
        total = float(np.sum((y[lab, t] - y[lab, t].mean()) ** 2))
        r2.append(1.0 - float(np.sum(err ** 2)) / total if total > 0 else math.nan)
    if not rmse:
        return {"rmse": math.nan, "mae": math.nan, "r2": math.nan}, 0
    return {"rmse": float(np.mean(rmse)), "mae": float(np.mean(mae)), "r2": float(np.mean(r2))}, len(rmse)
