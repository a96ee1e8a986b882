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


def test_in_place_relus_give_the_same_numbers_and_gradients(batch):
    from torch_geometric.nn import global_add_pool

    def reference(enc, data):  # the layer recipe written out, nothing in place
        x, pooled = data.x.float(), []
        for conv, bn in zip(enc.convs, enc.bns):
            lin1, _, lin2 = conv.nn
            h = conv.propagate(data.edge_index, x=(x, x), size=None) + (1 + conv.eps) * x
            x = bn(torch.relu(lin2(torch.relu(lin1(h)))))
            pooled.append(global_add_pool(x, data.batch, size=data.num_graphs))
        return torch.cat(pooled, dim=1)

    import copy

    torch.manual_seed(0)
    enc = GINEncoder(batch.num_features, hidden=8, num_layers=3)
    ref = copy.deepcopy(enc)
    out, want = enc(batch), reference(ref, batch)
    assert torch.equal(out, want)  # the same operations, some in place: bit-exact by construction
    (out ** 2).sum().backward()
    (want ** 2).sum().backward()
    assert all(torch.equal(a.grad, b.grad) for a, b in zip(enc.parameters(), ref.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(enc.state_dict().values(), ref.state_dict().values()))
