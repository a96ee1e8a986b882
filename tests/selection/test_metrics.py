"""The scores the selections read: the mean ROC-AUC over tasks and the regression scores
(RMSE, MAE, R²) averaged over tasks (transfer: MoleculeEncoder.finetune scores every epoch
with them), and accuracy over a loader (mutmut leaves it alone: it is decorated)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score
from torch_geometric.loader import DataLoader

from autogcl.eval.metrics import accuracy, regression_scores, roc_auc
from tests.conftest import make_batch


class ByMode(torch.nn.Module):
    """Predicts each graph's label in eval mode and the other class in train mode; the
    second class wins ties of the logits never (argmax takes the first)."""

    def forward(self, batch):
        y = batch.y.view(-1)
        right = y if not self.training else 1 - y
        return torch.nn.functional.one_hot(right, 2).float()


class FirstGraphWrong(torch.nn.Module):
    def forward(self, batch):
        y = batch.y.view(-1).clone()
        y[0] = 1 - y[0]  # the first graph of every batch is wrong
        return torch.nn.functional.one_hot(y, 2).float()


def graphs(n=7):
    base = make_batch().to_data_list()
    return [base[i % len(base)] for i in range(n)]


def test_accuracy_is_in_eval_mode_and_counts_graphs_not_batches():
    model = ByMode().train()
    assert accuracy(model, DataLoader(graphs(), batch_size=3)) == 1.0 and not model.training
    # batches of 3, 3, 1: one wrong graph in each, 3 of 7 wrong (a mean over batches would say 1/3 + ...)
    assert accuracy(FirstGraphWrong(), DataLoader(graphs(), batch_size=3)) == pytest.approx(4 / 7)
    assert accuracy(FirstGraphWrong(), DataLoader(graphs(), batch_size=7), torch.device("cpu")) == pytest.approx(6 / 7)
    assert accuracy(FirstGraphWrong(), []) == 0.0  # nothing to score


def test_roc_auc_is_the_mean_over_the_tasks_with_both_classes():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=(40, 4)).astype(float)
    s = rng.normal(size=(40, 4)) + y
    y[rng.random((40, 4)) < 0.3] = np.nan  # missing labels are left out per task
    y[:, 3] = np.where(np.isnan(y[:, 3]), np.nan, 1.0)  # task 3: one class among its labels
    auc, n = roc_auc(y, s)
    want = [roc_auc_score(y[~np.isnan(y[:, t]), t], s[~np.isnan(y[:, t]), t]) for t in range(3)]
    assert n == 3 and auc == pytest.approx(np.mean(want))
    y[:, 1] = np.nan  # a task without labels
    assert roc_auc(y, s) == (pytest.approx(np.mean([want[0], want[2]])), 2)
    assert roc_auc(y[:, 3:], s[:, 3:])[1] == 0 and math.isnan(roc_auc(y[:, 3:], s[:, 3:])[0])
    assert roc_auc(np.array([[0.0], [1.0]]), np.array([[0.9], [0.1]])) == (0.0, 1)  # scores are not flipped


def test_regression_scores_average_each_score_over_the_tasks_with_enough_labels():
    """The scores a regression selection reads (the validation RMSE, and the test RMSE, MAE
    and R² it reports): sklearn's per task over the task's labeled entries, averaged over the
    tasks that have enough of them: one for RMSE and MAE, two for R²."""
    from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score

    rng = np.random.default_rng(1)
    y = rng.normal(size=(30, 4)) * np.array([1.0, 3.0, 0.5, 2.0]) + np.array([0.0, 5.0, -1.0, 2.0])
    pred = y + rng.normal(size=(30, 4)) * np.array([0.3, 1.0, 0.2, 0.7]) + 0.1
    y[rng.random((30, 4)) < 0.25] = np.nan  # missing labels are left out per task
    y[:, 3] = np.nan
    y[7, 3] = 1.5  # task 3: one label, scored by RMSE and MAE, not by R²
    scores, n = regression_scores(y, pred)
    want = {"rmse": [], "mae": [], "r2": []}
    for t in range(4):
        lab = ~np.isnan(y[:, t])
        want["rmse"].append(math.sqrt(mean_squared_error(y[lab, t], pred[lab, t])))
        want["mae"].append(mean_absolute_error(y[lab, t], pred[lab, t]))
        if t < 3:
            want["r2"].append(r2_score(y[lab, t], pred[lab, t]))
    assert n == 4 and set(scores) == {"rmse", "mae", "r2"}
    for k in want:  # sklearn sums in another order: equal up to rounding
        assert scores[k] == pytest.approx(np.mean(want[k]), rel=1e-12, abs=1e-12), k
    # one task as a plain vector; two labels are enough; equal labels leave R² undefined
    one, n1 = regression_scores(np.array([1.0, 3.0, np.nan]), np.array([2.0, 2.0, 9.0]))
    assert n1 == 1 and (one["rmse"], one["mae"], one["r2"]) == (1.0, 1.0, 0.0)
    flat, _ = regression_scores(np.array([[2.0], [2.0]]), np.array([[1.0], [4.0]]))
    assert flat["rmse"] == pytest.approx(math.sqrt(2.5)) and flat["mae"] == 1.5 and math.isnan(flat["r2"])
    # the tasks in another order: the same means up to rounding
    backwards, nb = regression_scores(y[:, ::-1], pred[:, ::-1])
    assert nb == n and backwards == pytest.approx(scores, rel=1e-12)
    # an unscored task (no label) before the scored ones is skipped, not the end of the tasks
    gap, ng = regression_scores(np.column_stack([np.full(len(y), np.nan), y]), np.column_stack([pred[:, 0], pred]))
    assert ng == n and gap == pytest.approx(scores, rel=1e-12)
    # R² where the labels' spread is below 1 (SS_tot 0.125): 1 - 0.25 / 0.125
    small, _ = regression_scores(np.array([1.0, 1.5]), np.array([1.0, 1.0]))
    assert small["r2"] == -1.0
    # labels as float32 (as a loader gives them) are scored in float64: the same figures
    y32 = y.astype(np.float32)
    assert regression_scores(y32, pred) == regression_scores(y32.astype(np.float64), pred)
    none, n0 = regression_scores(np.full((3, 1), np.nan), pred[:3, 3:])
    assert n0 == 0 and all(math.isnan(v) for v in none.values()) and set(none) == {"rmse", "mae", "r2"}
