import math

import numpy as np
import torch
from torch_geometric.loader import DataLoader

from autogcl.eval.metrics import accuracy, roc_auc
from tests.conftest import make_batch


class Constant(torch.nn.Module):
    """Predicts class 1 for every graph."""

    def forward(self, batch):
        return torch.tensor([[0.0, 1.0]]).repeat(batch.num_graphs, 1)


def test_accuracy_over_a_loader():
    graphs = make_batch().to_data_list()  # labels 0, 1, 0, 1
    assert accuracy(Constant(), DataLoader(graphs, batch_size=3)) == 0.5
    assert accuracy(Constant(), DataLoader(graphs, batch_size=3), torch.device("cpu")) == 0.5


def test_roc_auc_averages_tasks_with_both_classes():
    y = np.array([[1, 0, np.nan], [0, 0, 1], [1, 0, np.nan], [0, 0, 0]], dtype=float)
    s = np.array([[0.9, 0.1, 0.3], [0.2, 0.5, 0.8], [0.7, 0.2, 0.1], [0.4, 0.3, 0.2]])
    auc, n = roc_auc(y, s)
    assert n == 2 and auc == 1.0  # task 2 has one class; task 3 has both among its labels
    assert math.isnan(roc_auc(np.zeros((3, 1)), np.ones((3, 1)))[0])
