import pytest
import torch
from torch_geometric.data import Batch

from autogcl.augment import RandomAugmentor
from autogcl.augment.random import attr_mask, edge_pert, node_drop, subgraph
from tests.conftest import make_batch, undirected


def big_batch():
    """Two 10-node cycles and a 20-node path: room for every ratio to act."""
    from torch_geometric.data import Data
    cyc = undirected([[i, (i + 1) % 10] for i in range(10)])
    path = undirected([[i, i + 1] for i in range(19)])
    return Batch.from_data_list([
        Data(x=torch.arange(10.).view(-1, 1), edge_index=cyc),
        Data(x=torch.arange(10.).view(-1, 1) + 100, edge_index=cyc),
        Data(x=torch.arange(20.).view(-1, 1) + 200, edge_index=path),
    ])


def graph_of_edges_consistent(view):
    e = view.edge_index
    return bool((view.batch[e[0]] == view.batch[e[1]]).all()) and int(e.max()) < view.num_nodes


def test_node_drop_counts():
    torch.manual_seed(0)
    b = big_batch()
    v = node_drop(b, 0.2)
    assert torch.bincount(v.batch).tolist() == [8, 8, 16]
    assert graph_of_edges_consistent(v)
    # features travel with their nodes: graph 1 keeps values 100..109
    assert ((v.x[v.batch == 1] >= 100) & (v.x[v.batch == 1] < 110)).all()


def test_edge_pert_keeps_count_and_stays_inside_graphs():
    torch.manual_seed(0)
    b = big_batch()
    v = edge_pert(b, 0.2)
    assert v.edge_index.shape == b.edge_index.shape
    assert graph_of_edges_consistent(v)
    old = set(map(tuple, b.edge_index.t().tolist()))
    new = list(map(tuple, v.edge_index.t().tolist()))
    removed = len(old - set(new))
    assert removed >= int(0.2 * 20) * 2 - 3  # 4+4+7 = 15 removed, minus chance re-additions


def test_subgraph_is_connected_and_sized():
    torch.manual_seed(0)
    b = big_batch()
    v = subgraph(b, 0.2)
    assert torch.bincount(v.batch).tolist() == [8, 8, 16]
    assert graph_of_edges_consistent(v)
    # kept nodes of the path are contiguous (connected) values
    vals = sorted(v.x[v.batch == 2].view(-1).tolist())
    assert vals == list(range(int(vals[0]), int(vals[0]) + 16))


def test_attr_mask_uses_graph_mean():
    torch.manual_seed(0)
    b = big_batch()
    v = attr_mask(b, 0.2)
    changed = (v.x != b.x).view(-1)
    assert torch.bincount(b.batch[changed], minlength=3).tolist() == [2, 2, 4]
    assert torch.allclose(v.x[changed & (b.batch == 1)], torch.tensor(104.5))


@pytest.mark.parametrize("name", RandomAugmentor.names)
def test_every_augmentation_keeps_every_graph(name):
    torch.manual_seed(0)
    b = make_batch()
    v = RandomAugmentor(name, 0.5)(b)
    assert torch.bincount(v.batch, minlength=4).min() >= 1
    assert graph_of_edges_consistent(v) if v.edge_index.numel() else True


def test_unknown_augmentation():
    with pytest.raises(ValueError, match="unknown augmentation 'flip'"):
        RandomAugmentor("flip")


def test_node_drop_carries_node_level_tensors_along():
    b = make_batch()
    b.pos = b.x[:, :2] * 10
    torch.manual_seed(0)
    view = node_drop(b, 0.4)
    assert view.pos.shape[0] == view.x.shape[0] < b.num_nodes
    assert torch.equal(view.pos, view.x[:, :2] * 10)  # each position stays with its node
