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


def test_the_strategy_table_composes_every_named_strategy_once():
    """semi_strategy: the one table of the named strategies (SemiSupervised and the protocol use it)."""
    from autogcl.choices import SEMI_STRATEGIES
    from autogcl.errors import ConfigError
    from autogcl.train import GraphCLStrategy, NaiveStrategy
    from autogcl.train.semi import READS_ALL, USES_GENERATORS, semi_strategy

    kinds = {"supervised": (None, SupervisedStrategy), "graphcl_aug": (None, SupervisedStrategy),
             "graphcl": (GraphCLStrategy, SupervisedStrategy), "aug": (None, LearnableAugStrategy),
             "naive": (NaiveStrategy, JointStrategy), "joint": (None, JointStrategy),
             "joint_cls": (None, JointStrategy), "joint_cls_sim": (None, JointStrategy),
             "joint_cl_cls": (None, JointStrategy), "joint_released": (None, JointReleasedStrategy)}
    assert set(kinds) == set(SEMI_STRATEGIES) and READS_ALL <= USES_GENERATORS
    switches = {"joint": (True, True), "joint_cls": (False, False), "joint_cls_sim": (False, True),
                "joint_cl_cls": (True, False), "naive": (False, False)}
    for name, (pre_kind, fine_kind) in kinds.items():
        model = ResGCN(3, 2, 8)
        gens = [ViewGenerator(3, 8, 1) for _ in range(2)] if name in USES_GENERATORS else ()
        pre, fine = semi_strategy(name, model, gens, lr=0.01)
        assert (pre is None) == (pre_kind is None) and type(fine) is fine_kind, name
        assert pre is None or isinstance(pre, pre_kind)
        assert fine.model is model and all(g["lr"] == 0.01 for g in fine.optimizers().popitem()[1].param_groups)
        if name in switches:
            assert (fine.use_cl, fine.use_sim) == switches[name], name
        assert (getattr(fine, "augment", None) is not None) == (name == "graphcl_aug")
    with pytest.raises(ConfigError, match="unknown strategy 'jiont'"):
        semi_strategy("jiont", ResGCN(3, 2, 8), lr=0.01)
    with pytest.raises(ConfigError, match="trains two view generators"):
        semi_strategy("joint", ResGCN(3, 2, 8), lr=0.01)
