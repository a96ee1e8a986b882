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


def test_a_learning_rate_schedule_sets_every_epochs_rate_before_it():
    model = Logits()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    seen = []
    strat = FinetuneStrategy(model, opt, lr_at=lambda epoch: 0.5 ** epoch)
    step = strat.step
    strat.step = lambda batch, epoch, i: (seen.append(opt.param_groups[0]["lr"]), step(batch, epoch, i))[1]
    loader = data([[1, 0]] * 4)
    for epoch in (1, 2, 5):  # a resumed fit starts at a later epoch: the rate is the epoch's own
        strat.train_epoch(loader, epoch)
    assert seen == [0.5, 0.25, 0.03125]
    constant = FinetuneStrategy(model, torch.optim.SGD(model.parameters(), lr=0.125))
    constant.train_epoch(loader, 7)
    assert constant.opt.param_groups[0]["lr"] == 0.125  # no schedule: the optimizer's rate stays


@pytest.mark.parametrize("base_lr", [0.01, 0.3])
def test_the_cosine_rate_is_torchs_cosine_annealing_stepped_once_per_epoch(base_lr):
    from autogcl.train.finetune import cosine_lr

    epochs = 7
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=base_lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    torchs = []
    for _ in range(epochs):
        torchs.append(opt.param_groups[0]["lr"])  # the rate an epoch trains at
        opt.step()
        sched.step()
    ours = [cosine_lr(base_lr, epochs)(epoch) for epoch in range(1, epochs + 1)]
    assert ours == pytest.approx(torchs, rel=1e-12, abs=0)
    assert ours[0] == base_lr and ours[-1] < 0.05 * base_lr  # from the full rate towards 0
