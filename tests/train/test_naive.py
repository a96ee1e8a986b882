import pytest
import torch

from autogcl.augment import RandomAugmentor, ViewGenerator
from autogcl.errors import TrainingError
from autogcl.models import ContrastModel, GINEncoder
from autogcl.train import GraphCLStrategy, NaiveStrategy
from tests.conftest import make_batch


def naive(feat_dim, **kw):
    model = ContrastModel(GINEncoder(feat_dim, hidden=8, num_layers=2))
    g1, g2 = ViewGenerator(feat_dim, hidden=8), ViewGenerator(feat_dim, hidden=8)
    opt = torch.optim.Adam([*model.parameters(), *g1.parameters(), *g2.parameters()], lr=0.01)
    return NaiveStrategy(model, g1, g2, opt, **kw)


def snapshot(module):
    return [p.detach().clone() for p in module.parameters()]


def changed(before, module):
    return any(not torch.equal(a, b) for a, b in zip(before, module.parameters()))


def test_naive_step_updates_generators_and_encoder():
    torch.manual_seed(0)
    batch = make_batch()
    st = naive(batch.num_features, view_sampling="generated")
    enc, g1, g2 = snapshot(st.model), snapshot(st.gen1), snapshot(st.gen2)
    out = {k: float(v) for k, v in st.step(batch, epoch=1, step=0).items()}
    assert set(out) == {"loss", "cl_loss", "sim_loss"} and out["loss"] == out["cl_loss"]
    assert changed(enc, st.model) and changed(g1, st.gen1) and changed(g2, st.gen2)


def test_sim_loss_weight_enters_the_loss():
    torch.manual_seed(0)
    batch = make_batch()
    out = {k: float(v) for k, v in naive(batch.num_features, sim_kind="mse", sim_weight=1.0).step(batch, 1, 0).items()}
    assert out["loss"] == pytest.approx(out["cl_loss"] + out["sim_loss"], rel=1e-5)


def test_nan_stops_with_where_it_happened():
    good, bad = make_batch(), make_batch()
    bad.x[4, 0] = float("nan")  # second graph's first node
    st = naive(good.num_features)
    with pytest.raises(TrainingError, match=r"node features are not finite at node 4 of the batch \(graph 1 .* at epoch 7, batch 1"):
        st.train_epoch([good, bad], epoch=7)


def test_nan_loss_is_reported():
    batch = make_batch()
    model = ContrastModel(GINEncoder(4, hidden=8, num_layers=2))
    with torch.no_grad():
        model.proj[0].weight[0, 0] = float("nan")
    st = GraphCLStrategy(model, RandomAugmentor("none"), RandomAugmentor("none"),
                         torch.optim.Adam(model.parameters(), lr=0.01))
    with pytest.raises(TrainingError, match="contrastive loss is nan at epoch 2, batch 0"):
        st.train_epoch([batch], epoch=2)


def test_graphcl_epoch_reports_mean_loss():
    torch.manual_seed(0)
    model = ContrastModel(GINEncoder(4, hidden=8, num_layers=2))
    st = GraphCLStrategy(model, RandomAugmentor("node_drop"), RandomAugmentor("edge_pert"),
                         torch.optim.Adam(model.parameters(), lr=0.01))
    before = snapshot(model)
    out = st.train_epoch([make_batch(), make_batch()], epoch=1)
    assert out["loss"] > 0 and out["time_s"] > 0 and changed(before, model)


class OwnGenerator(torch.nn.Module):
    """A generator of the user's own (``view, sample = gen(batch)``): takes the general path."""

    def __init__(self, gen):
        super().__init__()
        self.gen = gen

    def forward(self, batch):
        return self.gen(batch)


@pytest.mark.parametrize("sim_weight", [0.0, 1.0])
@pytest.mark.parametrize("dropped", ["isolate", "remove"])
def test_fast_path_gives_the_general_paths_numbers_bit_for_bit(sim_weight, dropped):
    # the fast path shares the first neighbour sum, skips autograd and view building for a
    # generator whose view is not contrasted; weights, BatchNorm statistics and losses after
    # several steps must be those of calling both generators as gen(batch)
    batch = make_batch()
    runs = []
    for wrap in (False, True):
        torch.manual_seed(3)
        model = ContrastModel(GINEncoder(batch.num_features, hidden=8, num_layers=2))
        g1, g2 = (ViewGenerator(batch.num_features, hidden=8, dropped=dropped) for _ in range(2))
        opt = torch.optim.Adam([*model.parameters(), *g1.parameters(), *g2.parameters()], lr=0.01)
        st = NaiveStrategy(model, OwnGenerator(g1) if wrap else g1, OwnGenerator(g2) if wrap else g2, opt,
                           sim_kind="mse", sim_weight=sim_weight)
        losses = [{k: float(v) for k, v in st.step(batch, 1, s).items()} for s in range(12)]
        runs.append((losses, [t.clone() for m in (model, g1, g2) for t in m.state_dict().values()]))
    (fast_losses, fast_state), (gen_losses, gen_state) = runs
    # bit-exact by construction: the same operations on the same inputs (a neighbour sum computed
    # once instead of twice, a forward without autograd), one process, the same threads
    assert fast_losses == gen_losses
    assert all(torch.equal(a, b) for a, b in zip(fast_state, gen_state))


def test_a_generator_subclass_with_its_own_forward_is_called():
    class Counting(ViewGenerator):
        calls = 0

        def forward(self, data, deterministic=False):
            Counting.calls += 1
            return super().forward(data, deterministic)

    torch.manual_seed(0)
    batch = make_batch()
    model = ContrastModel(GINEncoder(batch.num_features, hidden=8, num_layers=2))
    g1, g2 = Counting(batch.num_features, hidden=8), Counting(batch.num_features, hidden=8)
    opt = torch.optim.Adam([*model.parameters(), *g1.parameters(), *g2.parameters()], lr=0.01)
    NaiveStrategy(model, g1, g2, opt).step(batch, 1, 0)
    assert Counting.calls == 2


def _losses_and_state(st, batch, picks):
    torch.manual_seed(3)
    st.opt.zero_grad()
    out = st.losses(batch, picks)
    out["loss"].backward()
    state = {f"{name}.{k}": v.detach().clone() for name, m in st.modules().items() for k, v in m.state_dict().items()}
    grads = {f"{name}.{k}": p.grad.clone() for name, m in st.modules().items() for k, p in m.named_parameters()
             if p.grad is not None}
    return {k: float(v.detach()) for k, v in out.items()}, state, grads


@pytest.mark.parametrize("picks", [[0, 1], [1, 1], [0, 0]])
def test_without_measure_sim_an_unpicked_generator_is_not_run(picks):
    # gen1 draws first either way, so the contrasted views, losses and gradients are the same
    # bit for bit; gen2 (and for [0, 0] gen1 too) is never run: no gradient, running statistics
    # as before, no L_sim
    batch = make_batch()
    torch.manual_seed(0)
    every = naive(batch.num_features)
    lean = naive(batch.num_features, measure_sim=False)
    lean.model.load_state_dict(every.model.state_dict())
    lean.gen1.load_state_dict(every.gen1.state_dict())
    lean.gen2.load_state_dict(every.gen2.state_dict())
    before = {k: v.clone() for k, v in lean.gen2.state_dict().items()}
    want, want_state, want_grads = _losses_and_state(every, batch, picks)
    got, got_state, got_grads = _losses_and_state(lean, batch, picks)
    assert "sim_loss" in want and set(got) == {"loss", "cl_loss"}
    # the operations that reach the loss are the same: bit-exact by construction
    assert got["loss"] == want["loss"] and got["cl_loss"] == want["cl_loss"]
    run = {f"gen{i}" for i in set(picks) - {0}}
    assert {k.split(".")[0] for k in got_grads} == {"model"} | run
    assert all(torch.equal(got_grads[k], want_grads[k]) for k in got_grads)
    assert all(torch.equal(got_state[k], want_state[k]) for k in got_state if k.split(".")[0] in {"model"} | run)
    assert all(torch.equal(lean.gen2.state_dict()[k], before[k]) for k in before)  # gen2 never ran


@pytest.mark.parametrize("kw", [{}, {"sim_weight": 1.0, "sim_kind": "mse"}])
def test_without_measure_sim_both_generators_run_when_needed(kw):
    # both views contrasted, or L_sim in the loss: the same step as measuring L_sim every time
    batch = make_batch()
    torch.manual_seed(0)
    every = naive(batch.num_features, **kw)
    lean = naive(batch.num_features, measure_sim=False, **kw)
    for name, m in every.modules().items():
        getattr(lean, name).load_state_dict(m.state_dict())
    picks = [1, 2] if not kw else [0, 1]
    want, want_state, want_grads = _losses_and_state(every, batch, picks)
    got, got_state, got_grads = _losses_and_state(lean, batch, picks)
    assert got == want and got_grads.keys() == want_grads.keys()  # the same operations: bit-exact
    assert all(torch.equal(got_grads[k], want_grads[k]) for k in want_grads)
    assert all(torch.equal(got_state[k], want_state[k]) for k in want_state)


def test_molecule_pretraining_runs_only_the_generators_it_needs():
    from autogcl.protocols.pretrain import PretrainConfig, build_strategy

    assert build_strategy(PretrainConfig(method="autogcl", dim=8, gen_hidden=8)).measure_sim is False
    assert build_strategy(PretrainConfig(method="autogcl", dim=8, gen_hidden=8, sim_loss="mse")).sim_weight > 0
