"""The semi-supervised strategies: which parameters move in which pass."""

import pytest
import torch

from autogcl.augment import RandomAugmentor, ViewGenerator
from autogcl.models.resgcn import ResGCN
from autogcl.train import (
    JointReleasedStrategy,
    JointStrategy,
    LearnableAugStrategy,
    SupervisedStrategy,
)
from tests.conftest import make_batch


def params(m):
    return [p.detach().clone() for p in m.parameters()]


def moved(before, m):
    return any(not torch.equal(a, b) for a, b in zip(before, m.parameters()))


def buffers(m):
    return [b.detach().clone() for b in m.buffers()]


def setup(**kw):
    torch.manual_seed(0)
    model = ResGCN(4, 2, hidden=16)
    g1, g2 = ViewGenerator(4, hidden=8), ViewGenerator(4, hidden=8)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    opt_gen = torch.optim.Adam([*g1.parameters(), *g2.parameters()], lr=0.01)
    return JointStrategy(model, g1, g2, opt, opt_gen, **kw)


def test_unlabeled_pass_freezes_generators_and_moves_the_encoder():
    st = setup()
    st.gen1.eval()
    st.gen2.eval()
    g1, g2, gb, enc = params(st.gen1), params(st.gen2), buffers(st.gen1), params(st.model)
    for step in range(4):  # several draws, so the generated views are used
        st.contrastive_step(make_batch(), 1, step)
    assert not moved(g1, st.gen1) and not moved(g2, st.gen2)
    assert all(torch.equal(a, b) for a, b in zip(gb, st.gen1.buffers()))  # BN statistics too
    assert moved(enc, st.model)


def test_labeled_pass_moves_generators_and_classifier():
    st = setup()
    g1, g2, enc = params(st.gen1), params(st.gen2), params(st.model)
    out = st.labeled_step(make_batch(), 1, 0)
    assert moved(g1, st.gen1) and moved(g2, st.gen2) and moved(enc, st.model)
    assert out["loss"] > out["cls_loss"]  # lambda * L_sim is in


def test_epoch_runs_both_passes_and_ablations_switch_them():
    batches = [make_batch(), make_batch()]
    out = setup().train_epoch((batches, batches), 1)
    assert {"cl_loss", "cls_loss", "sim_loss", "loss", "time_s"} <= set(out)
    out = setup(use_cl=False, use_sim=False).train_epoch((batches, batches), 1)
    assert "cl_loss" not in out and out["loss"] == out["cls_loss"]


def test_released_variant_and_supervised_strategies_train():
    torch.manual_seed(0)
    b = make_batch()
    model = ResGCN(4, 2, hidden=16)
    g1, g2 = ViewGenerator(4, hidden=8), ViewGenerator(4, hidden=8)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    opt_gen = torch.optim.Adam([*g1.parameters(), *g2.parameters()], lr=0.01)
    before = params(g1)
    out = JointReleasedStrategy(model, g1, g2, opt, opt_gen).train_epoch((None, [b]), 1)
    assert out["loss"] == pytest.approx(sum(out[k] for k in ("cls_loss", "sim_loss", "cl_loss")), rel=1e-5)
    assert moved(before, g1)
    out = LearnableAugStrategy(model, g1, g2, opt, opt_gen).train_epoch([b], 1)
    assert out["loss"] > out["cls_loss"]
    before = params(model)
    SupervisedStrategy(model, opt, RandomAugmentor("node_drop")).train_epoch([b], 1)
    assert moved(before, model)
