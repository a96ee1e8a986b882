"""Atoms removed in place (``static_views``): the views keep the batch's shapes and mark the
removed atoms with ``node_alive`` 0; the encoder, its BatchNorms and the pooling then give the
numbers of the views without those atoms, to float rounding, with no wait for the device."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch_geometric.data import Batch

from autogcl.data.molecules import smiles_to_graph
from autogcl.errors import ConfigError
from autogcl.models.norm import SegmentBatchNorm

SMILES = ["CCO", "c1ccccc1", "[Na+]", "CC(=O)N", "OCC(O)CO", "c1ccncc1C", "CC(C)(C)Cl", "N#CC=CC=O"]
# float32 sums in another order: a few units in the last place, relative to the values' scale
TOL = {"rtol": 1e-4, "atol": 1e-5}


def mol_batch():
    return Batch.from_data_list([smiles_to_graph(s) for s in SMILES])


def _bn(momentum=0.1):
    return _bns(1, momentum=momentum)[0]


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_over_alive_rows_equals_batchnorm_without_the_others(momentum):
    """Two segments of 5 and 4 rows, 2 and 3 of them out of the view; a third segment with a single
    row in the view takes the running statistics (as RowBatchNorm). Outputs of the rows in the
    view, their gradients, the running statistics and the batch count: those of the layer on the
    rows in the view alone; the other rows get no gradient."""
    torch.manual_seed(1)
    x = torch.randn(12, 3) * 3 + 1
    alive = torch.tensor([1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0], dtype=torch.float32)
    segments = (5, 4, 3)
    keep = alive.bool()
    a, b = _bn(momentum), _bn(momentum)
    xa, xb = x.clone().requires_grad_(), x[keep].clone().requires_grad_()
    out_a = a(xa, segments, alive)
    out_b = b(xb, (3, 2, 1))
    torch.testing.assert_close(out_a[keep], out_b, **TOL)
    weights = torch.randn(out_b.shape)
    (out_a[keep] * weights).sum().backward()
    (out_b * weights).sum().backward()
    torch.testing.assert_close(xa.grad[keep], xb.grad, **TOL)
    assert torch.equal(xa.grad[~keep], torch.zeros_like(xa.grad[~keep]))
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p.grad, q.grad, **TOL)
    torch.testing.assert_close(a.running_mean, b.running_mean, **TOL)
    torch.testing.assert_close(a.running_var, b.running_var, **TOL)
    assert int(a.num_batches_tracked) == int(b.num_batches_tracked) == 2  # the one-row segment counts none
    a.eval(), b.eval()
    torch.testing.assert_close(a(x, segments, alive)[keep], b(x[keep]), **TOL)  # eval: the running statistics


def _strategy(static: bool):
    from autogcl.api.pretrain import MoleculePretrainer

    torch.manual_seed(0)
    strategy = MoleculePretrainer("autogcl", dim=16, num_layers=3, gen_hidden=8, batch_size=8,
                                  static_views=static).build_strategy()
    for m in strategy.modules().values():
        m.train()
    return strategy


@pytest.mark.parametrize("views", [[1, 2], [0, 1], [2, 2]])
def test_a_step_with_atoms_removed_in_place_gives_the_numbers_of_removal(views):
    """One pre-training step of AutoGCL on molecules, both routes from the same weights and the
    same Gumbel draws: the loss, every parameter's gradient (generators included) and every
    BatchNorm's running statistics agree to float rounding."""
    batch = mol_batch()
    got = {}
    for static in (False, True):
        got[static] = _step(_strategy(static), batch, views)
    _same_step(got[True], got[False])
    assert any(g is not None and g.abs().sum() > 0 for k, g in got[True][1].items() if k.startswith("gen"))


def _step(strategy, batch, views):
    """``(loss terms, gradients, buffers)`` of one step's forward and backward pass (the Gumbel
    draws seeded)."""
    torch.manual_seed(5)
    terms = strategy.losses(batch, views)
    terms["loss"].backward()
    mods = strategy.modules()
    return ({k: v.detach().clone() for k, v in terms.items()},  # copies: a later step changes them in place
            {f"{k}.{n}": None if p.grad is None else p.grad.clone() for k, m in mods.items()
             for n, p in m.named_parameters()},
            {f"{k}.{n}": b.clone() for k, m in mods.items() for n, b in m.named_buffers()})


def _same_step(got, want):
    """Two :func:`_step` results agree: loss terms and buffers within ``TOL``, every gradient
    within 1e-3 relative or 1e-5 of the largest gradient entry."""
    (t1, g1, b1), (t0, g0, b0) = got, want
    assert t0.keys() == t1.keys() and g0.keys() == g1.keys() and b0.keys() == b1.keys()
    for k in t0:
        torch.testing.assert_close(t1[k], t0[k], **TOL, msg=k)
    scale = max(float(g.abs().max()) for g in g0.values() if g is not None)
    for k in g0:
        assert (g0[k] is None) == (g1[k] is None), k
        if g0[k] is not None:
            torch.testing.assert_close(g1[k], g0[k], rtol=1e-3, atol=1e-5 * scale, msg=k)
    for k in b0:
        torch.testing.assert_close(b1[k].float(), b0[k].float(), **TOL, msg=k)


def test_the_view_keeps_the_batch_and_marks_the_removed_atoms():
    from autogcl.augment import MoleculeViewGenerator
    from autogcl.models.mol_gin import MolNodeScorer
    from autogcl.data.molecules import VOCAB

    batch = mol_batch()
    torch.manual_seed(3)
    gen = MoleculeViewGenerator(MolNodeScorer(3, VOCAB, hidden=8), static_shapes=True)
    view, sample = gen(batch)
    assert view.x is batch.x and view.batch is batch.batch and torch.equal(view.edge_index, batch.edge_index)
    assert torch.equal(view.node_alive, (sample[:, 0] + sample[:, 2]).detach())  # kept or masked: in the view
    assert 0 < int(view.node_alive.sum()) < batch.num_nodes  # this draw removes some atoms, and keeps some
    with pytest.raises(ConfigError, match="static_shapes removes atoms in place: it needs dropped='remove'"):
        MoleculeViewGenerator(MolNodeScorer(3, VOCAB, hidden=8), dropped="isolate", static_shapes=True)


def test_a_step_with_atoms_removed_in_place_never_waits_for_the_device():
    """Counted by :func:`autogcl.devices.host_waits` over a whole step (both views contrasted):
    removal's two ``nonzero`` per view are gone; what is left is the CPU's sparse adjacency, which
    a GPU never builds (``_csr``)."""
    from autogcl.devices import host_waits
    from autogcl.models import mol_gin

    lines, first = inspect.getsourcelines(mol_gin._csr)
    csr = {f"models/mol_gin.py:{first + i}" for i in range(len(lines))}
    batch = mol_batch()
    seen = {}
    for static in (False, True):
        strategy = _strategy(static)
        with host_waits() as waits:
            strategy.losses(batch, [1, 2])["loss"].backward()
        seen[static] = {k: n for k, n in waits.items() if k[1] not in csr}
    assert seen[True] == {}
    assert sum(n for (op, _), n in seen[False].items() if op == "aten::nonzero") == 4  # two a view, as before


def test_the_option_is_recorded_only_when_set_and_fits_autogcl_removal_only(caplog):
    from autogcl.api.pretrain import MoleculePretrainer
    from autogcl.protocols.configs import PretrainConfig

    assert "static_views" not in PretrainConfig().to_dict()  # runs made before it still resume
    assert PretrainConfig(static_views=True).to_dict()["static_views"] is True
    assert MoleculePretrainer(**PretrainConfig(static_views=True).pretrainer_options()).static_views
    assert PretrainConfig(method="graphcl", static_views=True).static_views is False  # does not apply: dropped
    assert "--static-views" in caplog.text
    with pytest.raises(ConfigError, match="static_views removes atoms in place: it needs method 'autogcl' and dropped"):
        MoleculePretrainer(dropped="isolate", static_views=True)
    assert "pad_atoms" not in PretrainConfig().to_dict()
    assert PretrainConfig(static_views=True, pad_atoms=256).to_dict()["pad_atoms"] == 256
    with pytest.raises(ConfigError, match="pad_atoms pads batches with atoms out of the view: it needs static_views"):
        MoleculePretrainer(pad_atoms=256)


def test_pad_batch_appends_atoms_and_bonds_out_of_the_view():
    from autogcl.data.batching import pad_batch
    from autogcl.errors import DataError

    batch = mol_batch()
    n, e = batch.num_nodes, batch.edge_index.shape[1]
    out = pad_batch(batch, 16)
    assert out.x.shape[0] % 16 == 0 and out.x.shape[0] > n and out.edge_index.shape[1] % 32 == 0
    assert torch.equal(out.x[:n], batch.x) and torch.equal(out.edge_index[:, :e], batch.edge_index)
    assert torch.equal(out.edge_attr[:e], batch.edge_attr) and torch.equal(out.batch[:n], batch.batch)
    assert torch.equal(out.node_alive, (torch.arange(out.x.shape[0]) < n).float())
    assert bool((out.batch[n:] == batch.num_graphs - 1).all()) and bool((out.edge_index[:, e:] == n).all())
    assert out.num_graphs == batch.num_graphs and int(out.ptr[-1]) == out.x.shape[0]
    assert pad_batch(pad_batch(batch, 16), 16).x.shape[0] == out.x.shape[0] + 16  # always one padding atom at least
    with pytest.raises(DataError, match="at least 1 atom"):
        pad_batch(batch, 0)
    other = batch.clone()
    other.pos = torch.zeros(n, 3)
    with pytest.raises(DataError, match=r"also has \['pos'\]"):
        pad_batch(other, 16)


@pytest.mark.parametrize(("views", "sim"), [([1, 2], "none"), ([0, 1], "none"), ([1, 2], "mse")])
def test_a_step_on_a_padded_batch_gives_the_numbers_of_the_batch(views, sim):
    """Static views on a batch padded to 64 atoms (:func:`autogcl.data.batching.pad_batch`) against
    the same batch unpadded: the loss, L_sim where measured, every gradient and every buffer agree
    to float rounding. On a CPU the Gumbel noise of the real atoms is the same draw in both (the
    padding's rows come after theirs); the scorers are grouped, as in training."""
    from autogcl.api.pretrain import MoleculePretrainer
    from autogcl.data.batching import pad_batch

    batch = mol_batch()
    got = {}
    for pad in (False, True):
        torch.manual_seed(0)
        strategy = MoleculePretrainer("autogcl", dim=16, num_layers=3, gen_hidden=8, batch_size=8, sim_loss=sim,
                                      static_views=True).build_strategy()
        for m in strategy.modules().values():
            m.train()
        got[pad] = _step(strategy, pad_batch(batch, 64) if pad else batch, views)
    _same_step(got[True], got[False])


def test_padding_atoms_never_count_as_kept_nor_are_forced():
    """Graph 1's real atoms are all dropped and its padding atoms (``node_alive`` 0) are drawn
    "keep" with the highest keep logits: forced keep still keeps the real atom of highest keep
    logit, as it would without the padding."""
    from autogcl.augment import MoleculeViewGenerator
    from autogcl.data.molecules import VOCAB
    from autogcl.models.mol_gin import MolNodeScorer

    gen = MoleculeViewGenerator(MolNodeScorer(3, VOCAB, hidden=8), add_mask=True)
    keep, drop = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
    sample = torch.tensor([keep, drop, drop, drop, keep, keep])  # graph 0: node 0; graph 1: nodes 1-3 + pads 4, 5
    logit = torch.tensor([0.0, 0.1, 0.7, 0.3, 5.0, 9.0])
    batch = torch.tensor([0, 1, 1, 1, 1, 1])
    alive = torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    forced, fix = gen._forced_keep(sample, logit, batch, 2, alive)
    fixed = sample.index_add(0, forced, fix)
    assert torch.equal(fixed[:4, 0], torch.tensor([1.0, 0.0, 1.0, 0.0]))  # node 2, the real one of highest logit
    without, _ = gen._forced_keep(sample[:4], logit[:4], batch[:4], 2)
    assert torch.equal(forced, without)


def _bns(k=2, features=3, momentum=0.1):
    """``k`` BatchNorms of random weights and running statistics (seeded)."""
    torch.manual_seed(2)
    bns = [SegmentBatchNorm(features, momentum=momentum) for _ in range(k)]
    for bn in bns:
        with torch.no_grad():
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
    return bns


def test_the_grouped_batchnorm_over_alive_rows_equals_it_over_those_rows_one_row_included():
    """The generators' grouped BatchNorm with padding rows: the numbers of the rows in the view
    alone, for many rows and for a single one (the running statistics, unchanged, as RowBatchNorm)."""
    from autogcl.models.mol_gin import _grouped_batch_norm

    torch.manual_seed(3)
    h = torch.randn(7, 6) * 2 + 1
    for alive in (torch.tensor([1.0, 1, 0, 1, 1, 0, 0]), torch.tensor([0.0, 0, 1, 0, 0, 0, 0])):
        a, b = _bns(), _bns()
        keep = alive.bool()
        got = _grouped_batch_norm(a, h, alive)[keep]
        want = _grouped_batch_norm(b, h[keep])
        torch.testing.assert_close(got, want, **TOL)
        for x, y in zip(a, b):
            torch.testing.assert_close(x.running_mean, y.running_mean, **TOL)
            torch.testing.assert_close(x.running_var, y.running_var, **TOL)
            assert int(x.num_batches_tracked) == int(y.num_batches_tracked) == int(keep.sum() > 1)


def test_weighed_statistics_are_summed_in_float32_under_bfloat16():
    """Under bfloat16 autocast the weighed BatchNorms and L_sim sum in float32, as the unweighed
    ones do (bfloat16 sums of 3,000 rows lose the count itself: 3,000 ones add up to 3,008)."""
    from autogcl.losses import similarity_loss
    from autogcl.models.mol_gin import _grouped_batch_norm

    torch.manual_seed(4)
    n = 3000
    h = (torch.randn(n, 6) * 3 + 30).bfloat16()
    alive = (torch.arange(n) < n - 40).float()
    keep = alive.bool()
    got = _grouped_batch_norm(_bns(), h, alive)[keep].float()
    want = _grouped_batch_norm(_bns(), h[keep].float())  # float32 statistics and output
    torch.testing.assert_close(got, want, rtol=0, atol=0.02)  # bfloat16's rounding of values near 1
    s1 = torch.nn.functional.one_hot(torch.randint(3, (n,)), 3).bfloat16()
    s2 = torch.nn.functional.one_hot(torch.randint(3, (n,)), 3).bfloat16()
    unweighed = similarity_loss(s1[keep].float(), s2[keep].float(), "mse")
    assert float(similarity_loss(s1, s2, "mse", alive)) == pytest.approx(float(unweighed), abs=1e-6)
