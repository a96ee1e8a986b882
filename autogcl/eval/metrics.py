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


#: the labeled entries a regression task needs in a part to count for each score: one for RMSE
#: and MAE (an error of one value is defined), two for R² (the labels' spread around their mean)
REGRESSION_MIN_LABELS = {"rmse": 1, "mae": 1, "r2": 2}


def regression_scores(y: np.ndarray, pred: np.ndarray) -> tuple[dict, int]:
    """``({"rmse", "mae", "r2"}, tasks)``: each score averaged over the tasks that have enough
    labeled entries for it (:data:`REGRESSION_MIN_LABELS`: RMSE and MAE over the tasks with at
    least one, R² over those with at least two), and ``tasks``, how many tasks RMSE and MAE
    average (``y``: graphs x tasks, NaN = no label; ``pred`` in the same units). A score no
    task has enough labels for is NaN: all three when no task has a label, R² alone for a
    single example. R² is ``1 - SS_res / SS_tot`` of the task's labeled entries (NaN for a
    task whose labels are all equal)."""
    y = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
    pred = np.asarray(pred, dtype=np.float64).reshape(y.shape)
    per = {"rmse": [], "mae": [], "r2": []}
    for t in range(y.shape[1]):
        lab = ~np.isnan(y[:, t])
        count = int(lab.sum())
        if count < min(REGRESSION_MIN_LABELS.values()):
            continue
        err = pred[lab, t] - y[lab, t]
        values = {"rmse": math.sqrt(float(np.mean(err ** 2))), "mae": float(np.mean(np.abs(err)))}
        if count >= REGRESSION_MIN_LABELS["r2"]:
            total = float(np.sum((y[lab, t] - y[lab, t].mean()) ** 2))
            values["r2"] = 1.0 - float(np.sum(err ** 2)) / total if total > 0 else math.nan
        for k, v in values.items():
            per[k].append(v)
    return {k: float(np.mean(v)) if v else math.nan for k, v in per.items()}, len(per["rmse"])
