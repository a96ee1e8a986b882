"""Device-resident batching: every batch a GraphStore builds equals PyG's collate of the same
graphs (every attribute, dtype and offset), a GraphLoader draws the random numbers of PyTorch's
DataLoader (so a loop that used one gives the same batches and the same later draws), subsets,
data-parallel shares, two views joined for one encoder pass, and clear errors."""

import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

from autogcl.data.batching import GraphLoader, GraphStore, pair_batches, to_device
from autogcl.errors import DataError
from tests.conftest import make_batch, undirected


def same(a, b):
    assert set(a.keys()) == set(b.keys())
    for k in a.keys():
        va, vb = a[k], b[k]
        if torch.is_tensor(va):
            assert va.dtype == vb.dtype and va.shape == vb.shape and torch.equal(va, vb), k
        else:
            assert va == vb, k
    assert a.num_graphs == b.num_graphs


def graphs(n=9, seed=0):
    """Graphs of 1 to 6 nodes (one edgeless, one with a self-loop), with x, edge_attr, a
    multi-task y, a node-level pos and a string per graph."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        nodes = 1 + i % 6
        pairs = [[j, j + 1] for j in range(nodes - 1)] + ([[0, 0]] if i == 4 else [])
        ei = undirected(pairs) if pairs else torch.empty(2, 0, dtype=torch.long)
        out.append(Data(x=torch.rand(nodes, 3, generator=g), edge_index=ei,
                        edge_attr=torch.randint(0, 4, (ei.shape[1], 2), generator=g),
                        y=torch.rand(1, 2, generator=g), pos=torch.rand(nodes, 2, generator=g), name=f"g{i}"))
    return out


def test_store_batches_equal_pyg_collate_for_any_index_list():
    data = graphs()
    store = GraphStore.from_dataset(data)
    for idx in ([0], [3, 3, 1], [8, 0, 5, 2], list(range(9)), [2]):
        same(store.batch(torch.tensor(idx)), Batch.from_data_list([data[i] for i in idx]))
    b = store.batch(torch.tensor([5, 1]))
    assert [g.name for g in b.to_data_list()] == ["g5", "g1"]  # slices and increments: the batch splits back
    assert torch.equal(b.to_data_list()[0].edge_index, data[5].edge_index)


def test_a_store_with_new_graph_values_batches_as_the_relabeled_graphs():
    data = graphs()
    store = GraphStore.from_dataset(data)
    labels = torch.arange(9) % 3 - 1
    relabeled = store.with_graph_values("y", labels)
    want = [Data(**{**g.to_dict(), "y": labels[i:i + 1]}) for i, g in enumerate(data)]
    for idx in ([0], [3, 3, 1], list(range(9))):
        same(relabeled.batch(torch.tensor(idx)), Batch.from_data_list([want[i] for i in idx]))
        same(store.batch(torch.tensor(idx)), Batch.from_data_list([data[i] for i in idx]))  # the source unchanged
    bare = [Data(x=g.x, edge_index=g.edge_index) for g in data]  # no graph-level attribute yet
    got = GraphStore.from_dataset(bare).with_graph_values("y", labels)
    same(got.batch(torch.tensor([4, 0])), Batch.from_data_list([Data(x=bare[i].x, edge_index=bare[i].edge_index,
                                                                     y=labels[i:i + 1]) for i in (4, 0)]))
    with pytest.raises(DataError, match="y needs one value per graph"):
        store.with_graph_values("y", labels[:5])


def test_store_of_a_real_dataset_and_of_its_subset(data_root):
    from autogcl.data import load_tu

    ds = load_tu("MUTAG", data_root)
    store = GraphStore.from_dataset(ds)
    assert store._tensors["x"] is ds._data.x  # no copy of the dataset's tensors
    idx = torch.randperm(len(ds), generator=torch.Generator().manual_seed(1))[:40]
    same(store.batch(idx), Batch.from_data_list([ds[int(i)] for i in idx]))
    sub = GraphStore.from_dataset(ds[torch.arange(20, 60)])
    same(sub.batch(torch.tensor([3, 0])), Batch.from_data_list([ds[23], ds[20]]))


@pytest.mark.parametrize("shuffle,drop_last", [(True, False), (True, True), (False, False)])
def test_loader_draws_what_dataloader_draws(shuffle, drop_last):
    data = graphs(23)
    runs = []
    for make in (lambda g: DataLoader(data, batch_size=5, shuffle=shuffle, drop_last=drop_last, generator=g),
                 lambda g: GraphLoader(data, batch_size=5, shuffle=shuffle, drop_last=drop_last, generator=g)):
        torch.manual_seed(7)
        gen = torch.Generator().manual_seed(3)
        epochs = [list(make(gen)) for _ in range(2)]
        runs.append((epochs, gen.get_state(), torch.rand(3)))
    (a, ga, ra), (b, gb, rb) = runs
    assert torch.equal(ga, gb) and torch.equal(ra, rb)  # the same random numbers drawn, in the same places
    assert [len(e) for e in a] == [len(e) for e in b]
    for ea, eb in zip(a, b):
        for x, y in zip(ea, eb):
            same(x, y)


def test_loader_indices_and_data_parallel_shares():
    data = graphs(12)
    store = GraphStore.from_dataset(data)
    sub = [9, 2, 7, 4, 11]
    ref = list(DataLoader([data[i] for i in sub], batch_size=2, shuffle=True, generator=torch.Generator().manual_seed(0)))
    got = list(GraphLoader(store, batch_size=2, shuffle=True, generator=torch.Generator().manual_seed(0), indices=sub))
    for x, y in zip(ref, got):
        same(x, y)
    # two processes: the same order everywhere, each global batch of 4 split in two halves
    full = list(GraphLoader(store, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(5)))
    halves = [list(GraphLoader(store, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(5),
                               rank=r, world_size=2)) for r in range(2)]
    for whole, h0, h1 in zip(full, *halves):
        assert [g.name for g in whole.to_data_list()] == [g.name for g in h0.to_data_list() + h1.to_data_list()]


@pytest.mark.parametrize("rank, world_size", [(0, 1), (1, 2)])
def test_a_pass_from_its_batch_k_is_the_rest_of_the_whole_pass(rank, world_size):
    """``batches(k)`` (a pass stopped after k steps, resumed) draws what a whole pass draws and
    serves its batches k, k+1, ...: the same graphs, and the same generator state after."""
    data = graphs(23)
    for k in (0, 2, 4, 9):
        whole_gen, part_gen = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
        whole = list(GraphLoader(data, batch_size=5, shuffle=True, generator=whole_gen, rank=rank,
                                 world_size=world_size))
        part = list(GraphLoader(data, batch_size=5, shuffle=True, generator=part_gen, rank=rank,
                                world_size=world_size).batches(k))
        assert len(part) == max(len(whole) - k, 0) and len(whole) == 5
        for x, y in zip(whole[k:], part):
            same(x, y)
        assert torch.equal(whole_gen.get_state(), part_gen.get_state())


def test_pair_batches_is_two_views_in_one_batch():
    a, b = make_batch(), make_batch()
    b.x = b.x * 2
    b.node_keep = torch.ones(b.num_nodes)
    pair = pair_batches(a, b)
    assert pair._segments == (a.num_nodes, b.num_nodes) and pair.num_graphs == a.num_graphs + b.num_graphs
    ref = Batch.from_data_list(a.to_data_list() + b.to_data_list())
    assert torch.equal(pair.x, ref.x) and torch.equal(pair.edge_index, ref.edge_index)
    assert torch.equal(pair.batch, ref.batch)
    assert torch.equal(pair.node_keep, torch.ones(a.num_nodes + b.num_nodes))  # a's nodes: kept
    odd = make_batch()
    odd.face = torch.zeros(3, 1, dtype=torch.long)
    assert pair_batches(a, odd) is None  # an attribute it cannot join: encode apart


def test_paired_encoding_gives_the_numbers_of_two_passes():
    from autogcl.models.gin import ContrastModel, GINEncoder

    torch.manual_seed(0)
    a, b = make_batch(), make_batch()
    b.x = b.x.flip(0)
    model = ContrastModel(GINEncoder(4, hidden=8, num_layers=3)).double()
    twin = ContrastModel(GINEncoder(4, hidden=8, num_layers=3)).double()
    twin.load_state_dict(model.state_dict())
    a.x, b.x = a.x.double(), b.x.double()
    z1, z2 = model.encode_pair(a, b)
    r1, r2 = twin(a), twin(b)
    assert torch.allclose(z1, r1, atol=1e-12) and torch.allclose(z2, r2, atol=1e-12)
    (z1.sum() + z2.pow(2).sum()).backward()
    (r1.sum() + r2.pow(2).sum()).backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-10)
    for k, v in model.state_dict().items():  # BatchNorm statistics updated once per view, as two passes do
        assert torch.allclose(v.double(), twin.state_dict()[k].double()), k


def test_non_finite_features_are_named_when_the_store_is_built():
    data = graphs(5)
    data[3].x[1, 2] = float("nan")
    with pytest.raises(DataError, match="graph 3 has a non-finite node feature \\(node 1 of that graph\\)"):
        GraphStore.from_dataset(data)


def test_non_finite_edge_features_are_named_when_the_store_is_built():
    data = graphs(5)
    for g in data:
        g.edge_attr = g.edge_attr.float()
    data[3].edge_attr[1, 0] = float("nan")
    with pytest.raises(DataError, match="graph 3 has a non-finite edge feature \\(edge 1 of that graph\\)"):
        GraphStore.from_dataset(data)


def test_clear_errors():
    with pytest.raises(DataError, match="no graphs given"):
        GraphStore.from_dataset([])
    with pytest.raises(DataError, match="without node features"):
        GraphStore.from_dataset([Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=3)] * 2)
    with pytest.raises(DataError, match="cannot be batched together"):
        GraphStore.from_dataset([Data(x=torch.rand(2, 3)), Data(x=torch.rand(2, 4))])
    with pytest.raises(DataError, match="indices out of range"):
        GraphLoader(graphs(3), indices=[0, 5])
    with pytest.raises(DataError, match="rank 2 is not one of 2"):
        GraphLoader(graphs(3), rank=2, world_size=2)


def test_to_device_leaves_a_batch_where_it_is():
    b = make_batch()
    assert to_device(b, torch.device("cpu")) is b and to_device(b, None) is b
