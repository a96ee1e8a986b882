import torch

from autogcl.models.resgcn import ResGCN


def test_outputs_and_representation(batch):
    torch.manual_seed(0)
    model = ResGCN(batch.num_features, num_classes=3, hidden=16)
    out = model(batch)
    assert out.shape == (batch.num_graphs, 3)
    assert torch.allclose(out.exp().sum(1), torch.ones(batch.num_graphs), atol=1e-5)
    assert model.represent(batch).shape == (batch.num_graphs, 16)


def test_learns_a_tiny_task(batch):
    torch.manual_seed(0)
    model = ResGCN(batch.num_features, num_classes=2, hidden=16)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(50):
        opt.zero_grad()
        loss = torch.nn.functional.nll_loss(model(batch), batch.y)
        loss.backward()
        opt.step()
    assert loss.item() < 0.1
