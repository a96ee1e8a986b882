"""Augmentors on a single Data and on a Batch, as PyG transforms, composed; the generator's
names leave nn.Module's alone; batches of one 1-node graph train."""

import pytest
import torch
from torch import nn
from torch_geometric.data import Batch, Data
from torch_geometric.transforms import BaseTransform

import autogcl
from autogcl.augment import Compose, GeneratedView, RandomAugmentor, RandomChoice, ViewGenerator, node_drop
from autogcl.errors import ConfigError, DataError
from autogcl.models import GINEncoder
from tests.conftest import make_batch, undirected


def graph(n=6, feat=3, dtype=torch.float32):
    e = undirected([[i, (i + 1) % n] for i in range(n)])
    return Data(x=torch.rand(n, feat).to(dtype), edge_index=e)


def test_generator_apply_is_nn_module_apply():
    gen = ViewGenerator(3, hidden=8)
    seen = []
    out = gen.apply(lambda m: seen.append(type(m).__name__))
    assert out is gen and "NodeScorer" in seen and "Linear" in seen
    assert ViewGenerator.apply is nn.Module.apply
    assert not any(name in vars(ViewGenerator) for name in dir(nn.Module) if not name.startswith("__")
                   and name not in ("forward", "extra_repr"))


@pytest.mark.parametrize("dropped", ["isolate", "remove"])
def test_a_batch_of_one_one_node_graph_trains(dropped):
    one = Batch.from_data_list([Data(x=torch.rand(1, 3), edge_index=torch.empty(2, 0, dtype=torch.long))])
    gen, enc = ViewGenerator(3, hidden=8, add_mask=True, dropped=dropped), GINEncoder(3, 8, 2)
    gen.train(), enc.train()
    before = enc.bns[0].running_mean.clone()
    view, sample = gen(one)
    z = enc(view)
    z.sum().backward()
    assert torch.isfinite(z).all() and sample.shape == (1, 3)
    assert torch.equal(enc.bns[0].running_mean, before)  # a single row leaves the running statistics alone


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64, torch.float16])
def test_generator_reads_any_numeric_features(dtype):
    data = Batch.from_data_list([graph(5, 3, dtype), graph(4, 3, dtype)])
    if dtype == torch.int64:
        data.x = (data.x * 10).long()
    view, sample = ViewGenerator(3, hidden=8)(data)
    assert sample.shape == (9, 2) and view.x.dtype == torch.float32


def test_augmentors_take_a_data_and_return_a_data():
    torch.manual_seed(0)
    g = graph(8)
    gen = ViewGenerator(3, hidden=8, dropped="remove")
    for aug in (RandomAugmentor("node_drop", 0.25), RandomAugmentor("random4"), node_drop,
                Compose([RandomAugmentor("edge_pert", 0.2), RandomAugmentor("attr_mask", 0.2)]),
                RandomChoice([RandomAugmentor("node_drop"), RandomAugmentor("subgraph")]), GeneratedView(gen)):
        view = aug(g)
        assert type(view) is Data and view.x.shape[1] == 3, aug
        assert "batch" not in view and view.edge_index.max() < view.num_nodes
    view, sample = gen(g)
    assert type(view) is Data and sample.shape == (8, 2)
    assert gen.inspect(g).op.shape == (8,) and gen.probabilities(g).shape == (8, 2)
    assert g.num_nodes == 8 and g.x.shape == (8, 3)  # the input is untouched
    assert node_drop(g, 0.25).num_nodes == 6


def test_augmentors_are_pyg_transforms_on_a_batch():
    batch = make_batch()
    for aug in (RandomAugmentor("subgraph"), Compose([RandomAugmentor("node_drop")]), GeneratedView(ViewGenerator(4))):
        assert isinstance(aug, BaseTransform)
        out = aug(batch)
        assert isinstance(out, Batch) and int(out.num_graphs) == 4
        assert torch.equal(torch.unique(out.batch), torch.arange(4))  # no graph loses all its nodes
    assert isinstance(ViewGenerator(4).as_transform(), GeneratedView)


def test_compose_applies_in_order_and_random_choice_draws():
    calls = []

    def tag(name):
        def aug(b):
            calls.append(name)
            return b
        return aug

    batch = make_batch()
    Compose([tag("a"), tag("b"), tag("c")])(batch)
    assert calls == ["a", "b", "c"]
    calls.clear()
    torch.manual_seed(0)
    choice = RandomChoice([tag("a"), tag("b"), tag("c")], num_choices=2)
    for _ in range(20):
        choice(batch)
    assert len(calls) == 40 and set(calls) == {"a", "b", "c"}
    with pytest.raises(ConfigError, match="num_choices"):
        RandomChoice([tag("a")], num_choices=2)
    with pytest.raises(ConfigError, match="at least one"):
        Compose([])
    with pytest.raises(ConfigError, match="not an augmentation"):
        Compose(["node_drop"])


def test_augmentor_on_a_graph_without_x_is_a_clear_error():
    bare = Data(edge_index=undirected([[0, 1]]), num_nodes=2)
    for aug in (RandomAugmentor("node_drop"), Compose([RandomAugmentor("node_drop")]), ViewGenerator(3),
                GeneratedView(ViewGenerator(3))):
        with pytest.raises(DataError, match=r"no node features \(x is None\)"):
            aug(bare)
    with pytest.raises(DataError, match="expected a PyG Data"):
        RandomAugmentor("node_drop")(torch.zeros(3, 3))


def test_gine_encoder_reads_edge_features():
    torch.manual_seed(0)
    g = graph(6)
    g.edge_attr = torch.rand(g.edge_index.shape[1], 2)
    batch = Batch.from_data_list([g, g])
    enc = GINEncoder(3, 8, 2, edge_dim=2).eval()
    z = enc(batch)
    batch.edge_attr = batch.edge_attr * 3
    assert not torch.allclose(enc(batch), z)  # edge features change the embedding
    plain = GINEncoder(3, 8, 2).eval()
    assert torch.allclose(plain(batch), plain(Batch.from_data_list([graph_copy(g), graph_copy(g)])))
    del batch.edge_attr
    with pytest.raises(DataError, match="no edge_attr"):
        enc(batch)
    with pytest.raises(DataError, match="edge_dim=3"):
        GINEncoder(3, 8, 2, edge_dim=3)(Batch.from_data_list([g]))
    assert autogcl.GINEncoder is GINEncoder


def graph_copy(g):
    return Data(x=g.x, edge_index=g.edge_index)
