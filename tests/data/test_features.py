import pytest
import torch

from autogcl.data.features import build_features, parse_recipe
from autogcl.errors import ConfigError, DataError
from tests.conftest import undirected


def test_parse_recipe():
    r = parse_recipe("deg+odeg100")
    assert r.degree and r.onehot_max_degree == 100 and not r.constant and not r.attr
    assert parse_recipe("constant").constant
    with pytest.raises(ConfigError, match="unknown token 'odeg'"):
        parse_recipe("deg+odeg")


def test_degree_features_with_labels():
    ei = undirected([[0, 1], [0, 2], [0, 3]])  # star: degrees 3, 1, 1, 1
    labels = torch.tensor([[2], [3], [3], [4]])
    x = build_features(parse_recipe("deg+odeg2"), 4, ei, labels)
    assert x.shape == (4, 3 + 1 + 3)  # 3 label values, degree, one-hot degree capped at 2
    assert x[:, :3].argmax(1).tolist() == [0, 1, 1, 2]
    assert x[:, 3].tolist() == [3, 1, 1, 1]
    assert x[:, 4:].argmax(1).tolist() == [2, 1, 1, 1]  # degree 3 capped at 2


def test_constant_and_no_feature_errors():
    ei = undirected([[0, 1]])
    assert build_features(parse_recipe("constant"), 2, ei).tolist() == [[1.0], [1.0]]
    with pytest.raises(ConfigError, match="feature token 'attr': TOY has no continuous node attributes"):
        build_features(parse_recipe("attr"), 2, ei, dataset="TOY")
    assert build_features(parse_recipe("attr"), 2, ei, node_attributes=torch.ones(2, 3)).shape == (2, 3)


def test_node_features_transform_matches_the_reader_recipe():
    from torch_geometric.data import Data

    from autogcl.data.features import NodeFeatures, build_features

    e = torch.tensor([[0, 1, 1, 2, 1, 3], [1, 0, 2, 1, 3, 1]])
    x = torch.eye(4)[:, :2]
    out = NodeFeatures("deg+odeg3")(Data(x=x, edge_index=e))
    expected = build_features(parse_recipe("deg+odeg3"), 4, e, node_labels=torch.tensor([[0], [1], [0], [0]]))
    assert out.x.shape == (4, 2 + 1 + 4)
    assert torch.equal(out.x[:, 2:], expected[:, 2:]) and torch.equal(out.x[:, :2], x)
    assert out.x[:, 2].tolist() == [1.0, 3.0, 1.0, 1.0]
    no_x = NodeFeatures("odeg2")(Data(edge_index=e, num_nodes=5))  # an isolated node: degree 0
    assert no_x.x.shape == (5, 3) and no_x.x[4].tolist() == [1.0, 0.0, 0.0]
    assert torch.equal(NodeFeatures("constant")(Data(x=x, edge_index=e)).x, torch.ones(4, 1))
    with pytest.raises(ConfigError, match="attr"):
        NodeFeatures("attr+deg")
    with pytest.raises(DataError, match="without nodes"):
        NodeFeatures()(Data(edge_index=torch.empty(2, 0, dtype=torch.long), num_nodes=0))
