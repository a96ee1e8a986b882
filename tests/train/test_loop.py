"""The shared Trainer: devices, hooks, stopping, and resume to the numbers of an unbroken fit."""

import pytest
import torch
from torch_geometric.loader import DataLoader

from autogcl.augment import RandomAugmentor
from autogcl.models import ContrastModel, GINEncoder
from autogcl.seeding import seed_everything
from autogcl.train import GraphCLStrategy, Trainer
from tests.conftest import break_at, make_batch


def build(seed=0):
    gen = seed_everything(seed)
    graphs = make_batch().to_data_list() * 4
    model = ContrastModel(GINEncoder(4, hidden=8, num_layers=2))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    strat = GraphCLStrategy(model, RandomAugmentor("random4"), RandomAugmentor("random4"), opt)
    return strat, DataLoader(graphs, batch_size=4, shuffle=True, generator=gen), gen


def test_hooks_stop_and_row_fields():
    strat, loader, gen = build()
    calls = []
    rows = Trainer(strat, device="cpu", loader_gen=gen, show_progress=False).fit(
        loader, 5, evaluate=lambda e: calls.append(e) or {"score": float(e)}, stop=lambda r: r["score"] >= 3,
        row_fields={"phase": "x"})
    assert calls == [1, 2, 3] and [r["epoch"] for r in rows] == [1, 2, 3]
    assert list(rows[0])[:2] == ["phase", "epoch"] and {"loss", "cl_loss", "time_s", "score"} <= set(rows[0])


def test_resume_gives_the_numbers_of_an_unbroken_fit(tmp_path):
    strat, loader, gen = build()
    ref = Trainer(strat, loader_gen=gen, checkpoint=tmp_path / "ref.pt", show_progress=False).fit(loader, 4)

    strat, loader, gen = build()
    break_at(strat, 3)
    with pytest.raises(KeyboardInterrupt):
        Trainer(strat, loader_gen=gen, checkpoint=tmp_path / "cut.pt", show_progress=False).fit(loader, 4)

    strat, loader, gen = build(seed=123)  # other fresh state: everything must come from the checkpoint
    rows = Trainer(strat, loader_gen=gen, checkpoint=tmp_path / "cut.pt", show_progress=False).fit(loader, 4)
    def strip(rs):
        return [{k: v for k, v in r.items() if k != "time_s"} for r in rs]
    assert strip(rows) == strip(ref)


def test_resume_restores_extra_and_keeps_defaults_the_checkpoint_lacks(tmp_path):
    strat, loader, gen = build()
    extra = {"seen": 0}

    def count(epoch):
        extra["seen"] += 1
    Trainer(strat, loader_gen=gen, checkpoint=tmp_path / "c.pt", show_progress=False).fit(
        loader, 2, evaluate=count, extra=extra)
    strat, loader, gen = build()
    later = {"seen": -1, "added": 7}  # "added": a key a newer caller carries that the older checkpoint lacks
    Trainer(strat, loader_gen=gen, checkpoint=tmp_path / "c.pt", show_progress=False).fit(loader, 2, extra=later)
    assert later == {"seen": 2, "added": 7}


def test_checkpoint_records_cuda_rng_slot_and_loads_weights_only(tmp_path):
    strat, loader, gen = build()
    Trainer(strat, loader_gen=gen, checkpoint=tmp_path / "c.pt", show_progress=False).fit(loader, 1)
    state = torch.load(tmp_path / "c.pt", weights_only=True)  # plain tensors and containers only
    assert "cuda" in state["rng"] and state["epoch"] == 1


@pytest.mark.parametrize("seconds, saved", [(0.0, 2), (None, None), (3600.0, None)])
def test_slow_epochs_are_checkpointed_by_time_whatever_ckpt_every(tmp_path, seconds, saved):
    strat, loader, gen = build()
    break_at(strat, 3)
    trainer = Trainer(strat, loader_gen=gen, checkpoint=tmp_path / "c.pt", ckpt_every=10, ckpt_seconds=seconds,
                      show_progress=False)
    with pytest.raises(KeyboardInterrupt):
        trainer.fit(loader, 20)
    resumed = trainer.resume()
    assert (None if resumed is None else resumed[1]) == saved  # the last epoch saved before the cut
