"""PyG transforms as augmentations: a per-graph transform runs on every graph of a batch apart
(never linking graphs), a view that changes the width of ``x`` is an error naming the
transform, and attr_mask on integer features says what it does."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch_geometric.transforms as T
from torch_geometric.data import Batch, Data

import autogcl
from autogcl.augment import CheckedAugmentation, PerGraph, as_augmentation
from autogcl.augment.ops import split_graphs
from autogcl.errors import DataError


def ring(n: int, feat: int = 3, y: int = 0) -> Data:
    i = torch.arange(n)
    e = torch.stack([i, (i + 1) % n])
    return Data(x=torch.rand(n, feat), edge_index=torch.cat([e, e.flip(0)], 1), y=torch.tensor([y]),
                edge_attr=torch.rand(2 * n, 2))


GRAPHS = [ring(n, y=n) for n in (3, 5, 4)]


def test_split_graphs_gives_back_the_batched_graphs_even_after_nodes_were_dropped():
    batch = Batch.from_data_list(GRAPHS)
    for a, b in zip(GRAPHS, split_graphs(batch)):
        for key in ("x", "edge_index", "edge_attr", "y"):
            assert torch.equal(a[key], b[key]), key
    torch.manual_seed(0)
    view = autogcl.node_drop(batch, 0.4)  # its slice records are stale
    parts = split_graphs(view)
    assert [g.num_nodes for g in parts] == torch.bincount(view.batch).tolist()
    assert torch.equal(Batch.from_data_list(parts).edge_index, view.edge_index[:, torch.argsort(
        view.batch[view.edge_index[0]], stable=True)])


def test_virtual_node_runs_per_graph_and_links_no_two_graphs():
    batch = Batch.from_data_list(GRAPHS)
    view = as_augmentation(T.VirtualNode())(batch)
    assert isinstance(as_augmentation(T.VirtualNode()), CheckedAugmentation)
    assert torch.bincount(view.batch).tolist() == [4, 6, 5]  # one virtual node per graph
    src, dst = view.edge_index
    assert torch.equal(view.batch[src], view.batch[dst])  # no edge between two graphs
    expected = Batch.from_data_list([T.VirtualNode()(g.clone()) for g in GRAPHS])
    assert torch.equal(view.edge_index, expected.edge_index) and torch.equal(view.x, expected.x)


def test_half_hop_runs_per_graph_and_its_own_refusal_is_named():
    torch.manual_seed(0)
    plain = [Data(x=g.x, edge_index=g.edge_index) for g in GRAPHS]
    view = as_augmentation(T.HalfHop())(Batch.from_data_list(plain))
    assert view.num_graphs == 3 and view.x.shape[0] == view.batch.numel()
    src, dst = view.edge_index
    assert torch.equal(view.batch[src], view.batch[dst])
    with pytest.raises(DataError, match=r"augmentation HalfHop\(alpha=0.5, p=1.0\) failed on a batch of 3 graphs "
                                        r"\(ValueError: .*edge_attr"):
        as_augmentation(T.HalfHop())(Batch.from_data_list(GRAPHS))


def test_a_transform_that_changes_the_width_of_x_is_named():
    with pytest.raises(DataError, match=r"augmentation LocalDegreeProfile\(\) changes the width of the node features "
                                        r"x from 3 to 8.*dataset's transform"):
        as_augmentation(T.LocalDegreeProfile())(Batch.from_data_list(GRAPHS))

    def widen(batch):
        out = batch.clone()
        out.x = torch.cat([out.x, out.x], 1)
        return out

    with pytest.raises(DataError, match="augmentation <function .*widen.* from 3 to 6"):
        autogcl.Compose([autogcl.RandomAugmentor("node_drop"), widen])(Batch.from_data_list(GRAPHS))
    with pytest.raises(DataError, match=r"widen.* from 3 to 6"):
        autogcl.GraphCL(hidden=4, num_layers=1, aug=widen).fit(GRAPHS, epochs=1, progress=False)


def test_a_view_whose_nodes_do_not_match_its_batch_vector_is_named():
    def add_row(batch):
        out = batch.clone()
        out.x = torch.cat([out.x, out.x[:1]])
        return out

    with pytest.raises(DataError, match=r"add_row.* x has 13 rows for 12 nodes"):
        as_augmentation(add_row)(Batch.from_data_list(GRAPHS))


def test_estimators_train_with_per_graph_transforms_and_keep_their_record():
    graphs = [ring(n) for n in range(3, 11)]
    torch.manual_seed(0)
    model = autogcl.GraphCL(hidden=4, num_layers=2, aug=(T.VirtualNode(), T.HalfHop()))
    model.fit(graphs, epochs=1, batch_size=4, progress=False, device="cpu")
    assert model.hparams["aug"] == ["custom:VirtualNode()", "custom:HalfHop(alpha=0.5, p=1.0)"]
    mixed = autogcl.AutoGCL(hidden=4, num_layers=2, view2=T.VirtualNode())
    mixed.fit(graphs, epochs=1, batch_size=4, progress=False, device="cpu")
    assert mixed.hparams["view2"] == "custom:VirtualNode()"
    with pytest.raises(DataError, match="LocalDegreeProfile"):
        autogcl.AutoGCL(hidden=4, num_layers=2, view1=T.LocalDegreeProfile()).fit(graphs, epochs=1, progress=False)


def test_autogcls_own_augmentations_are_not_wrapped():
    own = autogcl.RandomAugmentor("node_drop")
    assert as_augmentation(own) is own
    assert isinstance(autogcl.Compose([T.VirtualNode()]).augmentations[0], CheckedAugmentation)
    assert repr(autogcl.Compose([T.VirtualNode()])) == "Compose([VirtualNode()])"
    assert repr(PerGraph(T.VirtualNode())) == "PerGraph(VirtualNode())"


def test_attr_mask_on_integer_features_warns_unless_molecule_graphs():
    g = Data(x=torch.ones(4, 3, dtype=torch.long), edge_index=torch.tensor([[0, 1], [1, 0]]))
    with pytest.warns(UserWarning, match=r"attr_mask: x holds integers \(torch.int64\).*x is unchanged"):
        view = autogcl.attr_mask(g, 0.5)
    assert torch.equal(view.x, g.x) and int(view.node_mask.sum()) == 2
    mol = Data(x=torch.ones(4, 2, dtype=torch.long), edge_index=torch.tensor([[0, 1], [1, 0]]),
               edge_attr=torch.zeros(2, 2, dtype=torch.long))  # atom and bond ids: the molecule way, silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        autogcl.attr_mask(mol, 0.5)
