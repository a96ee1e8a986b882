import torch

from autogcl.augment.ops import (
    first_argmax_per_group,
    graph_sizes,
    isolate_nodes,
    keep_nodes,
    rank_within_group,
)
from tests.conftest import make_batch


def test_graph_sizes_and_ranks():
    batch = make_batch()
    assert graph_sizes(batch.batch, 4).tolist() == [3, 5, 1, 5]
    torch.manual_seed(0)
    rank = rank_within_group(batch.batch, 4)
    for g, n in enumerate([3, 5, 1, 5]):
        assert sorted(rank[batch.batch == g].tolist()) == list(range(n))  # a permutation per graph


def test_first_argmax_per_group_treats_nan_as_lowest():
    score = torch.tensor([0.1, 0.9, 0.9, float("nan"), 0.2])
    group = torch.tensor([0, 0, 0, 1, 1])
    assert first_argmax_per_group(score, group, 2).tolist() == [1, 4]


def test_keep_and_isolate_nodes():
    batch = make_batch()
    keep = torch.ones(batch.num_nodes, dtype=torch.bool)
    keep[[0, 3]] = False  # a triangle node and the first node of the path
    kept = keep_nodes(batch, keep)
    assert kept.num_nodes == batch.num_nodes - 2 and kept.ptr.tolist() == [0, 2, 6, 7, 12]
    assert int(kept.edge_index.max()) < kept.num_nodes
    iso = isolate_nodes(batch, keep, batch.x)
    assert iso.num_nodes == batch.num_nodes and not keep[iso.edge_index].logical_not().any()
