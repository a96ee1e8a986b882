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
    torch.manual_seed(0)
    bn = SegmentBatchNorm(3, momentum=momentum)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    return bn


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
        strategy = _strategy(static)
        torch.manual_seed(5)
        loss = strategy.losses(batch, views)["loss"]
        loss.backward()
        mods = strategy.modules()
        got[static] = (loss.detach(), {f"{k}.{n}": p.grad for k, m in mods.items() for n, p in m.named_parameters()},
                       {f"{k}.{n}": b for k, m in mods.items() for n, b in m.named_buffers()})
    (l0, g0, b0), (l1, g1, b1) = got[False], got[True]
    torch.testing.assert_close(l1, l0, **TOL)
    assert g0.keys() == g1.keys() and b0.keys() == b1.keys()
    scale = max(float(g.abs().max()) for g in g0.values() if g is not None)
    for k in g0:
        assert (g0[k] is None) == (g1[k] is None), k
        if g0[k] is not None:
            torch.testing.assert_close(g1[k], g0[k], rtol=1e-3, atol=1e-5 * scale, msg=k)
    for k in b0:
        torch.testing.assert_close(b1[k].float(), b0[k].float(), **TOL, msg=k)
    assert any(g is not None and g.abs().sum() > 0 for k, g in g1.items() if k.startswith("gen"))


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
