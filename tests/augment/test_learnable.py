import inspect

import pytest
import torch

from autogcl.augment import ViewGenerator
from autogcl.augment.learnable import DROP, KEEP, MASK, GeometryKeepingGenerator
from autogcl.data.mnist import POS_COLS
from tests.conftest import superpixel_batch


def test_gradients_reach_generator_weights_through_the_view(batch):
    torch.manual_seed(0)
    gen = ViewGenerator(batch.num_features, hidden=16)
    view, _sample = gen(batch)
    view.x.sum().backward()
    grads = [p.grad for p in gen.parameters()]
    assert all(g is not None for g in grads)
    assert sum(float(g.abs().sum()) for g in grads) > 0


@pytest.mark.parametrize("dropped", ["isolate", "remove"])
@pytest.mark.parametrize("add_mask", [False, True])
def test_no_graph_loses_all_nodes(batch, dropped, add_mask):
    gen = ViewGenerator(batch.num_features, hidden=16, add_mask=add_mask, dropped=dropped)
    with torch.no_grad():  # make dropping very likely: every graph would lose all its nodes
        gen.scorer.bns[-1].bias[:] = torch.tensor([-50.0, 50.0, -50.0][: gen.num_ops])
        gen.scorer.bns[-1].weight[:] = 0.0
    for seed in range(5):
        torch.manual_seed(seed)
        view, sample = gen(batch)
        kept = sample[:, KEEP] + (sample[:, MASK] if add_mask else 0)
        per_graph = torch.bincount(batch.batch[kept > 0], minlength=batch.num_graphs)
        assert (per_graph == 1).all()
        if dropped == "remove":
            assert view.num_nodes == batch.num_graphs
            assert torch.bincount(view.batch, minlength=batch.num_graphs).tolist() == [1, 1, 1, 1]


def test_forced_keep_keeps_its_gradient_path(batch):
    gen = ViewGenerator(batch.num_features, hidden=16)
    with torch.no_grad():
        gen.scorer.bns[-1].bias[:] = torch.tensor([-50.0, 50.0])
        gen.scorer.bns[-1].weight[:] = 1.0
    torch.manual_seed(0)
    view, _sample = gen(batch)
    view.x.sum().backward()
    assert gen.scorer.convs[0].nn[0].weight.grad.abs().sum() > 0


@pytest.mark.parametrize("dropped", ["isolate", "remove"])
def test_no_edge_touches_a_dropped_node(batch, dropped):
    torch.manual_seed(1)
    gen = ViewGenerator(batch.num_features, hidden=16, dropped=dropped)
    view, sample = gen(batch)
    dropped_nodes = sample[:, DROP] > 0
    assert dropped_nodes.any() and (~dropped_nodes).any()
    if dropped == "isolate":
        assert view.num_nodes == batch.num_nodes
        assert not dropped_nodes[view.edge_index].any()
        assert (view.x[dropped_nodes] == 0).all()
        # every edge whose both ends are kept survives
        e = batch.edge_index
        both_kept = ~dropped_nodes[e[0]] & ~dropped_nodes[e[1]]
        assert view.edge_index.shape[1] == int(both_kept.sum())
    else:
        assert view.num_nodes == int((~dropped_nodes).sum())
        assert view.edge_index.max() < view.num_nodes
        assert torch.equal(view.batch, batch.batch[~dropped_nodes])
        assert torch.allclose(view.x, batch.x[~dropped_nodes])


@pytest.mark.parametrize("token", ["scalar", "feature"])
def test_masked_nodes_carry_the_token(batch, token):
    torch.manual_seed(3)
    gen = ViewGenerator(batch.num_features, hidden=16, add_mask=True, mask_token=token)
    view, sample = gen(batch)
    masked = sample[:, MASK] > 0
    kept = sample[:, KEEP] > 0
    assert masked.any()
    expect = batch.x.mean() if token == "scalar" else batch.x.mean(0)
    assert torch.allclose(view.x[masked], expect.expand(int(masked.sum()), batch.num_features))
    assert torch.allclose(view.x[kept], batch.x[kept])
    # a masked node keeps its edges
    assert view.edge_index.numel() > 0


def test_sample_is_one_hot(batch):
    gen = ViewGenerator(batch.num_features, hidden=16, add_mask=True)
    _, sample = gen(batch)
    assert sample.shape == (batch.num_nodes, 3)
    # straight-through values are exact: (1 - s) + s rounds to 1 and (0 - s) + s to 0 for s in [0, 1]
    assert torch.equal(sample.detach().sum(1), torch.ones(batch.num_nodes))


def test_masked_nodes_count_as_retained(batch):
    """A graph whose nodes are all masked keeps them: no node is forced to keep."""
    gen = ViewGenerator(batch.num_features, hidden=16, add_mask=True)
    with torch.no_grad():
        gen.scorer.bns[-1].bias[:] = torch.tensor([-50.0, -50.0, 50.0])
        gen.scorer.bns[-1].weight[:] = 0.0
    view, sample = gen(batch)
    assert (sample[:, MASK] == 1).all() and view.edge_index.shape == batch.edge_index.shape


def test_geometry_keeping_generator_views():
    torch.manual_seed(0)
    batch = superpixel_batch(n=20)
    for dropped in ("weight", "remove", "isolate"):
        gen = GeometryKeepingGenerator(3, 16, 2, add_mask=True, dropped=dropped, mask_token="feature", geometry=POS_COLS)
        view, s = gen(batch)
        drop, mask = s[:, DROP] > 0, s[:, MASK] > 0
        assert drop.any() and mask.any() and (s[:, KEEP] > 0).any()
        retained = ~drop
        if dropped == "weight":
            assert view.num_nodes == batch.num_nodes
            assert torch.equal(view.node_weight.detach(), retained.float())  # exact 0/1 (straight-through)
            xs, orig = view.x, batch.x
        elif dropped == "remove":
            assert view.num_nodes == int(retained.sum())
            assert torch.equal(view.pos, batch.pos[retained])  # pos follows the removed nodes
            xs, orig, mask = view.x, batch.x[retained], mask[retained]
        else:
            assert (view.x[drop] == 0).all()
            xs, orig = view.x, batch.x
        if dropped != "remove":
            xs, orig, mask = xs[retained], orig[retained], mask[retained]
        assert torch.equal(xs[:, 1:], orig[:, 1:])  # positions survive masking
        assert torch.allclose(xs[mask, 0], batch.x[:, 0].mean())  # intensity -> mean intensity
        assert torch.equal(xs[~mask, 0], orig[~mask, 0])


def test_remove_nodes_gives_keep_nodes_tensors_bit_for_bit():
    from torch_geometric.data import Batch

    from autogcl.augment.learnable import remove_nodes
    from autogcl.augment.ops import keep_nodes
    from autogcl.data.molecules import smiles_to_graph

    batch = Batch.from_data_list([smiles_to_graph(s) for s in ["CCO", "c1ccccc1", "[Na+]", "CC(=O)N", "CCN"]])
    batch.node_keep = torch.rand(batch.num_nodes)
    gen = torch.Generator().manual_seed(0)
    masks = [torch.rand(batch.num_nodes, generator=gen) > p for p in (0.2, 0.5, 0.8)]
    masks.append(batch.batch != 2)  # a graph left empty
    for keep in masks:
        want = keep_nodes(batch, keep)
        got, idx = remove_nodes(batch, keep)
        assert torch.equal(idx, keep.nonzero().view(-1))
        for key in ("x", "edge_index", "edge_attr", "batch", "ptr", "node_keep"):
            assert torch.equal(got[key], want[key]), key
        assert got.num_graphs == want.num_graphs


def test_remove_nodes_waits_for_the_device_twice():
    """Node removal reads back only the numbers of kept atoms and of kept bonds (its two
    ``nonzero``): the per-graph counts of the view's ``ptr`` are summed on the device."""
    from torch_geometric.data import Batch

    from autogcl.augment.learnable import remove_nodes
    from autogcl.data.molecules import smiles_to_graph
    from autogcl.devices import host_waits

    batch = Batch.from_data_list([smiles_to_graph(s) for s in ["CCO", "c1ccccc1", "CC(=O)N"]])
    keep = torch.arange(batch.num_nodes) % 3 != 0
    with host_waits() as waits:
        remove_nodes(batch, keep)
    lines, first = inspect.getsourcelines(remove_nodes)
    nonzero = [f"augment/learnable.py:{first + i}" for i, line in enumerate(lines) if ".nonzero()" in line]
    assert len(nonzero) == 2 and sorted(waits.items()) == [(("aten::nonzero", where), 1) for where in nonzero]
    with host_waits() as waits:
        int(torch.tensor([1, 2]).sum()), torch.arange(4)[torch.arange(4) > 1]  # noqa: B018 (the counter counts both)
    assert {op for op, _ in waits} == {"aten::_local_scalar_dense", "aten::index"} and sum(waits.values()) == 2


@pytest.mark.parametrize("add_mask", [False, True])
def test_forced_keep_equals_the_index_put_reference(batch, add_mask):
    from tests.train.test_pretrain_step import reference_sample

    gen = ViewGenerator(batch.num_features, hidden=16, add_mask=add_mask)
    with torch.no_grad():  # most graphs would lose every node: the forced keep acts
        gen.scorer.bns[-1].bias[:] = torch.tensor([-3.0, 3.0, -3.0][: gen.num_ops])
    logits = gen.scores(batch)
    for seed in range(5):
        torch.manual_seed(seed)
        got = gen.sample(batch, logits=logits)
        torch.manual_seed(seed)
        want = reference_sample(gen, batch, logits=logits)
        # the forced rows: (keep + row) - row there, row + (keep - row) here (equal to rounding)
        torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
        w = torch.randn_like(want)
        g_got, = torch.autograd.grad((got * w).sum(), logits, retain_graph=True)
        g_want, = torch.autograd.grad((want * w).sum(), logits, retain_graph=True)
        torch.testing.assert_close(g_got, g_want, rtol=1e-6, atol=1e-7)
