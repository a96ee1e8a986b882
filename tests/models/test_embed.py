import torch
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader

from autogcl.models import GINEncoder
from autogcl.models.embed import embed, module_device
from tests.conftest import make_batch, undirected


def test_embed_labels_and_mode():
    enc = GINEncoder(4, hidden=8, num_layers=2)
    emb, y = embed(enc, DataLoader(make_batch().to_data_list(), batch_size=3))
    assert emb.shape == (4, 16) and y.tolist() == [0, 1, 0, 1] and enc.training
    assert module_device(enc) == torch.device("cpu") and module_device(torch.nn.ReLU()) == torch.device("cpu")


def test_unlabeled_and_node_labeled_graphs_give_no_labels():
    enc = GINEncoder(2, hidden=4, num_layers=1)
    unlabeled = [Data(x=torch.rand(3, 2), edge_index=undirected([[0, 1], [1, 2]])) for _ in range(3)]
    assert embed(enc, DataLoader(unlabeled, batch_size=2))[1] is None
    node_labeled = [Data(x=torch.rand(3, 2), edge_index=undirected([[0, 1]]), y=torch.arange(3)) for _ in range(3)]
    emb, y = embed(enc, DataLoader(node_labeled, batch_size=2))
    assert emb.shape == (3, 4) and y is None
