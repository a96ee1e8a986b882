import pytest
import torch
from torch_geometric.loader import DataLoader

from autogcl.errors import TrainingError
from autogcl.train import FinetuneStrategy
from tests.conftest import make_batch


class Logits(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 2)

    def forward(self, batch):
        from torch_geometric.nn import global_mean_pool
        return self.lin(global_mean_pool(batch.x, batch.batch, size=batch.num_graphs))


def data(y):
    graphs = make_batch().to_data_list()
    for g, t in zip(graphs, y):
        g.y = torch.tensor([t], dtype=torch.float)
    return DataLoader(graphs, batch_size=4)


def test_masked_bce_epochs_lower_the_loss():
    torch.manual_seed(0)
    model = Logits()
    strat = FinetuneStrategy(model, torch.optim.Adam(model.parameters(), lr=0.1))
    loader = data([[1, float("nan")], [0, 1], [1, 0], [0, float("nan")]])
    losses = [strat.train_epoch(loader, e)["loss"] for e in range(1, 30)]
    assert losses[-1] < losses[0] * 0.5


def test_a_non_finite_loss_names_epoch_and_batch():
    model = Logits()
    with torch.no_grad():
        model.lin.weight.fill_(float("nan"))
    strat = FinetuneStrategy(model, torch.optim.Adam(model.parameters()))
    with pytest.raises(TrainingError, match="fine-tuning loss is nan at epoch 3, batch 0"):
        strat.train_epoch(data([[1, 0]] * 4), 3)
