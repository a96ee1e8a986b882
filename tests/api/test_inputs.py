"""What the estimators take: datasets, lists (labeled and unlabeled mixed), a Data, a Batch, a
DataLoader; cached preparation; the new user's traps (a one-graph fit, float64 or NaN
features, embed before fit, custom augmentations, edge features)."""

import logging

import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

import autogcl
from autogcl.augment import Compose, RandomAugmentor, RandomChoice
from autogcl.errors import ConfigError, DataError
from tests.conftest import undirected


def ring(n, feat=None, y=None, dtype=torch.float32):
    i = torch.arange(n)
    e = torch.stack([i, (i + 1) % n])
    g = Data(edge_index=torch.cat([e, e.flip(0)], 1), num_nodes=n)
    if feat is not None:
        g.x = torch.rand(n, feat).to(dtype)
    if y is not None:
        g.y = torch.tensor([y])
    return g


#: one graph's embedding alone and inside another batch differ only by float32 rounding, whose
#: last bits depend on the CPU's kernels (a sum over other rows, split another way)
BATCHING = {"rtol": 1e-5, "atol": 1e-5}


def small(**kw):
    return autogcl.AutoGCL(hidden=8, num_layers=2, **kw)


def test_a_dataloader_a_batch_a_list_and_a_dataset_give_the_same_embeddings(data_root):
    from autogcl.data import load_tu

    ds = load_tu("MUTAG", data_root)[:20]
    torch.manual_seed(0)
    model = small()
    ref = model.embed(ds)
    # the same single batch: bit-exact by construction
    assert torch.equal(model.embed([ds[i] for i in range(20)]), ref)
    assert torch.equal(model.embed(Batch.from_data_list([ds[i] for i in range(20)])), ref)
    # other batchings sum and normalise in another order: equal within float32 rounding (BATCHING)
    torch.testing.assert_close(model.embed(DataLoader(ds, batch_size=7)), ref, **BATCHING)
    torch.testing.assert_close(model.embed(ds[3]), ref[3:4], **BATCHING)


def test_fit_takes_a_dataloader_and_its_batch_size():
    graphs = [ring(n, 3) for n in range(3, 13)]
    model = small()
    rows = model.fit(DataLoader(graphs, batch_size=5, shuffle=True), epochs=1, seed=0, progress=False)
    assert len(rows) == 1 and model._batch_size(DataLoader(graphs, batch_size=5), None, 128) == 5


def test_a_list_mixing_labeled_and_unlabeled_graphs_trains_unsupervised():
    graphs = [ring(n, 3, y=(n % 2 if n % 3 else None)) for n in range(3, 13)]
    graphs[0].y = None
    model = small()
    model.fit(graphs, epochs=1, batch_size=4, seed=0, progress=False)
    assert model.embed(graphs).shape == (10, 16)
    assert model.prepare(graphs).labels.tolist()[:4] == [-1, 0, 1, -1]


def test_prepared_graphs_are_cached_per_dataset():
    graphs = [ring(n) for n in range(3, 9)]
    model = small()
    first = model.prepare(graphs)
    assert model.prepare(graphs) is first  # embed, fit and inspect reuse it
    other = list(graphs)
    assert model.prepare(other) is not first  # another list is prepared anew
    graphs.append(ring(4))
    assert model.prepare(graphs) is not first and len(model.prepare(graphs).store) == 7  # grown: prepared again
    model.clear_cache()
    assert model.prepare(other) is not first


def test_auto_model_embeds_before_fit():
    graphs = [ring(n) for n in range(3, 7)]
    torch.manual_seed(0)
    z = autogcl.AutoGCL(hidden=8, num_layers=2).embed(graphs)
    assert z.shape == (4, 16) and torch.isfinite(z).all()


def test_one_graph_or_batch_size_one_is_a_clear_error_not_a_silent_no_op(caplog):
    model = small()
    with pytest.raises(ConfigError, match="at least 2 graphs per batch.*loss of 0"):
        model.fit(ring(5, 3), epochs=1, progress=False)
    with pytest.raises(ConfigError, match="batch_size=1"):
        model.fit([ring(5, 3), ring(6, 3)], epochs=1, batch_size=1, progress=False)
    with caplog.at_level(logging.WARNING):
        model.fit([ring(n, 3) for n in range(3, 8)], epochs=1, batch_size=2, seed=0, progress=False)
    assert "last batch of every epoch holds one graph" in caplog.text


def test_every_batch_a_loader_can_make_trains_including_one_one_node_graph():
    graphs = [ring(3, 3), Data(x=torch.rand(1, 3), edge_index=torch.empty(2, 0, dtype=torch.long)),
              ring(4, 3), Data(x=torch.rand(1, 3), edge_index=torch.empty(2, 0, dtype=torch.long)), ring(5, 3)]
    for seed in range(4):  # a last batch of one 1-node graph, in any order
        for cls in (autogcl.AutoGCL, autogcl.GraphCL):
            model = cls(hidden=8, num_layers=2, **({"add_mask": True} if cls is autogcl.AutoGCL else {}))
            rows = model.fit(graphs, epochs=1, batch_size=2, seed=seed, progress=False)
            assert all(torch.isfinite(torch.tensor(r["loss"])) for r in rows)
            assert torch.isfinite(model.embed(graphs)).all()


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64, torch.int32])
def test_int_and_float64_features_train(dtype, caplog):
    graphs = [ring(n, 3, dtype=dtype) for n in range(3, 9)]
    if not dtype.is_floating_point:
        for g in graphs:
            g.x = torch.randint(0, 5, (g.num_nodes, 3), dtype=dtype)
    model = small(add_mask=True)
    with caplog.at_level(logging.WARNING):
        model.fit(graphs, epochs=1, batch_size=3, seed=0, progress=False)
    said = "are integers" in caplog.text and "one-hot encode them" in caplog.text
    assert said == (not dtype.is_floating_point)  # category ids read as numbers: said once
    assert model.embed(graphs).dtype == torch.float32
    d1, _ = model.inspect(graphs)
    assert d1.op.shape == (sum(g.num_nodes for g in graphs),)


def test_nan_features_are_refused_by_embed_as_by_fit():
    graphs = [ring(n, 3) for n in range(3, 7)]
    graphs[2].x[1, 0] = float("nan")
    model = small()
    for call in (lambda: model.embed(graphs), lambda: model.fit(graphs, epochs=1, progress=False),
                 lambda: model.inspect(graphs)):
        with pytest.raises(DataError, match="graph 2 has a non-finite node feature \\(node 1\\)"):
            call()


def test_nan_edge_features_are_refused_naming_the_graph_and_edge():
    """Read edge features (``edge_dim``) that are not finite: a DataError naming the graph and
    edge (not a NaN loss later)."""
    graphs = [ring(n, 3) for n in range(3, 7)]
    for g in graphs:
        g.edge_attr = torch.rand(g.edge_index.shape[1], 2)
    graphs[1].edge_attr[5, 1] = float("inf")
    for call in (lambda m: m.fit(graphs, epochs=1, progress=False), lambda m: m.embed(graphs)):
        with pytest.raises(DataError, match="graph 1 has a non-finite edge feature \\(edge 5\\)"):
            call(small(edge_dim="auto"))


@pytest.mark.parametrize("edge_index, match", [
    (torch.tensor([[0.0, 1.0], [1.0, 0.0]]), "integer node indices"),
    (torch.tensor([0, 1, 1, 0]), "shape 2 x E"),
    (torch.tensor([[0, 1, 2]]), "shape 2 x E"),
    (torch.tensor([[0, 7], [7, 0]]), "refers to node 7, but the graph has 4 node"),
    (torch.tensor([[0, -1], [-1, 0]]), "refers to node -1"),
    ([[0, 1], [1, 0]], "must be a torch tensor"),
])
def test_bad_edge_index_is_a_clear_error_naming_the_graph(edge_index, match):
    graphs = [ring(3, 2), Data(x=torch.rand(4, 2), edge_index=edge_index)]
    with pytest.raises(DataError, match=f"graph 1: .*{match}"):
        small().embed(graphs)


def test_edge_features_used_with_edge_dim_and_otherwise_said_to_be_ignored(caplog):
    graphs = [ring(n, 3) for n in range(3, 9)]
    for g in graphs:
        g.edge_attr = torch.rand(g.edge_index.shape[1], 2)
    with caplog.at_level(logging.WARNING):
        plain = small()
        plain.embed(graphs)
    assert "edge_attr is ignored" in caplog.text
    model = small(edge_dim="auto")
    model.fit(graphs, epochs=1, batch_size=3, seed=0, progress=False)
    assert model.hparams["edge_dim"] == 2 and model.encoder.convs[0].__class__.__name__ == "GINEConv"
    z = model.embed(graphs)
    for g in graphs:
        g.edge_attr = g.edge_attr * 5
    model.clear_cache()
    assert not torch.allclose(model.embed(graphs), z)
    with pytest.raises(DataError, match="graph 0 has no edge_attr"):
        model.embed([ring(4, 3)])
    with pytest.raises(ConfigError, match="edge_dim"):
        small(edge_dim=0)


def test_graphcl_takes_composed_augmentations_for_either_view(tmp_path):
    graphs = [ring(n, 3) for n in range(4, 12)]
    calls = []

    def spy(batch):
        calls.append(int(batch.num_graphs))
        return batch

    view = Compose([RandomAugmentor("node_drop", 0.1), RandomChoice([RandomAugmentor("attr_mask"), spy])])
    model = autogcl.GraphCL(hidden=8, num_layers=2, aug=(view, Compose([spy, RandomAugmentor("edge_pert")])))
    torch.manual_seed(0)
    model.fit(graphs, epochs=2, batch_size=4, seed=0, progress=False)
    assert len(calls) >= 4  # the second view's spy ran on every batch
    back = autogcl.load(model.save(tmp_path / "g.pt"))
    assert torch.equal(back.embed(graphs), model.embed(graphs))
    with pytest.raises(ConfigError, match="set_augmentations"):
        back.fit(graphs, epochs=1, progress=False)
    back.set_augmentations(view)
    back.fit(graphs, epochs=1, batch_size=4, progress=False)
    with pytest.raises(ConfigError, match="neither an augmentation name"):
        autogcl.GraphCL(aug=3)


def test_features_far_too_large_are_refused_and_large_ones_leave_finite_statistics():
    graphs = [ring(n, 3) for n in range(3, 9)]
    for g in graphs:
        g.x = g.x * 1e20
    with pytest.raises(DataError, match="node features up to .*scale them"):
        small().fit(graphs, epochs=1, progress=False)
    for g in graphs:
        g.x = g.x * 1e-12  # up to 1e8
    model = small()
    model.fit(graphs, epochs=1, batch_size=3, seed=0, progress=False)
    assert all(torch.isfinite(b).all() for b in model.buffers() if b.is_floating_point())
    assert torch.isfinite(model.embed([ring(5, 3)])).all()


def test_undirected_helper_is_the_conftest_one():
    assert undirected([[0, 1]]).shape == (2, 2)


def test_autogcl_takes_an_augmentation_of_ones_own_for_either_view(tmp_path):
    graphs = [ring(n, 3) for n in range(4, 12)]
    calls = []

    def spy(batch):
        calls.append(int(batch.num_graphs))
        return batch

    mine = Compose([RandomAugmentor("node_drop", 0.2), spy])
    torch.manual_seed(0)
    model = autogcl.AutoGCL(hidden=8, num_layers=2, view2=mine, view_sampling="generated")
    rows = model.fit(graphs, epochs=2, batch_size=4, seed=0, progress=False)
    assert calls == [4, 4, 4, 4] and "sim_loss" not in rows[0]  # no L_sim without two generators
    assert isinstance(model.gen1, autogcl.ViewGenerator) and not list(model.gen2.parameters())
    d1, d2 = model.inspect(graphs)
    assert d1.op.shape == (sum(g.num_nodes for g in graphs),) and d2 is None
    back = autogcl.load(model.save(tmp_path / "m.pt"))
    assert torch.equal(back.embed(graphs), model.embed(graphs))
    with pytest.raises(ConfigError, match="set_views"):
        back.fit(graphs, epochs=1, progress=False)
    back.set_views(view2=mine)
    back.fit(graphs, epochs=1, batch_size=4, progress=False)
    with pytest.raises(ConfigError, match="sim_loss='none'"):
        autogcl.AutoGCL(view1=mine, sim_loss="mse")
    with pytest.raises(ConfigError, match="learnable generator; it takes no augmentation"):
        back.set_views(view1=mine)


def test_an_in_memory_dataset_is_prepared_without_a_pass_over_its_graphs_and_the_same(data_root):
    from autogcl.data import load_tu

    ds = load_tu("MUTAG", data_root)
    torch.manual_seed(0)
    model = small()
    fast = model.prepare(ds)
    assert model._prepare_in_memory(ds) is not None  # the fast path took it
    slow = model.prepare([ds[i] for i in range(len(ds))])  # a list: the general path
    a, b = fast.store.batch(torch.arange(188)), slow.store.batch(torch.arange(188))
    for key in ("x", "edge_index", "batch", "ptr"):
        assert torch.equal(a[key], b[key]), key
    assert torch.equal(fast.labels, slow.labels) and torch.equal(a.y.view(-1), b.y.view(-1))
    # the same batches (equal above) through the same model: bit-exact by construction
    assert torch.equal(model.embed(ds), model.embed([ds[i] for i in range(len(ds))]))
    part = ds[10:30]  # a subset of a dataset: its graphs only (another batch: float32 rounding)
    torch.testing.assert_close(model.embed(part), model.embed(ds)[10:30], **BATCHING)


def test_the_fast_path_checks_what_the_general_one_checks(data_root):
    from autogcl.data import load_tu

    ds = load_tu("MUTAG", data_root)
    broken = ds.copy()
    broken._data.edge_index = broken._data.edge_index.clone()
    broken._data.edge_index[0, 40] = 50  # graph 0 has 17 nodes; edge 40 is graph 1's first
    with pytest.raises(DataError, match="graph 1: edge_index refers to node 50, but the graph has 13 node"):
        small().embed(broken)
    nan = ds.copy()
    nan._data.x = nan._data.x.clone()
    nan._data.x[20, 3] = float("nan")  # node 3 of graph 1
    with pytest.raises(DataError, match="graph 1 has a non-finite node feature \\(node 3"):
        small().embed(nan)
    with pytest.raises(DataError, match="node features, the model expects 5"):
        autogcl.AutoGCL(5, hidden=8, num_layers=1).embed(ds)
