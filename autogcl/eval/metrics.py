"""Scores of trained models: classification accuracy over a loader and multi-task ROC-AUC."""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.metrics import roc_auc_score

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
    y, scores = np.asarray(y), np.asarray(scores)
    aucs = []
    for t in range(y.shape[1]):
        lab = ~np.isnan(y[:, t])
        yt = y[lab, t]
        if yt.size and yt.min() != yt.max():
            aucs.append(roc_auc_score(yt, scores[lab, t]))
    return (float(np.mean(aucs)), len(aucs)) if aucs else (math.nan, 0)
