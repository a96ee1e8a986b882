import torch
from torch_geometric.loader import DataLoader

from autogcl.models import ContrastModel, GINEncoder


def test_encoder_shapes_and_pooling(batch):
    enc = GINEncoder(batch.num_features, hidden=8, num_layers=5)
    out = enc(batch)
    assert out.shape == (batch.num_graphs, 40)
    model = ContrastModel(enc)
    assert model(batch).shape == (batch.num_graphs, 40)
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            assert torch.count_nonzero(m.bias) == 0


def test_embed_is_eval_mode_and_order_preserving(batch):
    enc = GINEncoder(batch.num_features, hidden=8, num_layers=2)
    enc(batch)  # one training-mode pass moves the BatchNorm running statistics
    graphs = batch.to_data_list()
    emb, y = enc.embed(DataLoader(graphs, batch_size=2))
    assert enc.training  # restored after embedding
    enc.eval()
    with torch.no_grad():
        full = enc(batch)  # eval mode: batch composition does not matter
    assert isinstance(emb, torch.Tensor) and emb.device.type == "cpu"
    assert torch.allclose(emb, full, atol=1e-5)
    assert y.tolist() == batch.y.tolist()
