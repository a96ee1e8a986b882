"""The view-visualisation models: the superpixel classifier, node-weighted views, the
geometry-keeping generator and the per-classifier defaults (no data files needed)."""

import pytest
import torch
from torch_geometric.data import Batch, Data

from autogcl.augment.learnable import DROP, KEEP, MASK, GeometryKeepingGenerator
from autogcl.augment.ops import keep_nodes
from autogcl.errors import ConfigError
from autogcl.eval.views import (
    ViewsConfig,
    make_models,
)
from autogcl.models.relpos import RelPosNet


def superpixel_batch(n_graphs=3, n=12, k=3, seed=0) -> Batch:
    """Graphs shaped like MNIST superpixels: x = [intensity, row, col] in [0, 1], pos in
    pixels, symmetric kNN edges."""
    g = torch.Generator().manual_seed(seed)
    graphs = []
    for c in range(n_graphs):
        x = torch.rand(n, 3, generator=g)
        d = torch.cdist(x[:, 1:], x[:, 1:]) + torch.eye(n) * 1e9
        nbr = d.topk(k, largest=False).indices
        e = torch.stack([torch.arange(n).repeat_interleave(k), nbr.reshape(-1)])
        e = torch.unique(torch.cat([e, e.flip(0)], 1), dim=1)
        graphs.append(Data(x=x, edge_index=e, pos=x[:, 1:] * 28, y=torch.tensor([c % 2])))
    return Batch.from_data_list(graphs)


@pytest.mark.parametrize("aggr", ["mean", "max"])
def test_weight_zero_is_removal(aggr):
    torch.manual_seed(0)
    batch = superpixel_batch()
    model = RelPosNet(3, 2, hidden=16, num_layers=3, aggr=aggr)
    model.train()
    for _ in range(3):  # non-trivial BatchNorm running statistics
        model(batch)
    model.eval()
    keep = torch.rand(batch.num_nodes) > 0.4
    keep[batch.ptr[:-1]] = True  # every graph keeps a node
    weighted = batch.clone()
    weighted.node_weight = keep.float()
    removed = keep_nodes(batch, keep)
    assert torch.allclose(model(weighted), model(removed), atol=1e-5)
    assert not torch.allclose(model(batch), model(removed), atol=1e-3)


def test_dropped_nodes_get_a_gradient_with_mean_aggregation():
    torch.manual_seed(0)
    batch = superpixel_batch()
    model = RelPosNet(3, 2, hidden=16, num_layers=2)
    w = (torch.rand(batch.num_nodes) > 0.5).float().requires_grad_()
    batch.node_weight = w
    model(batch).sum().backward()
    assert (w.grad[w.detach() == 0] != 0).all()


def test_geometry_keeping_generator_views():
    torch.manual_seed(0)
    batch = superpixel_batch(n=20)
    for dropped in ("weight", "remove", "isolate"):
        gen = GeometryKeepingGenerator(3, 16, 2, add_mask=True, dropped=dropped, mask_token="feature")
        view, s = gen(batch)
        drop, mask = s[:, DROP] > 0, s[:, MASK] > 0
        assert drop.any() and mask.any() and (s[:, KEEP] > 0).any()
        retained = ~drop
        if dropped == "weight":
            assert view.num_nodes == batch.num_nodes
            assert torch.equal(view.node_weight.detach(), retained.float())
            xs, orig = view.x, batch.x
        elif dropped == "remove":
            assert view.num_nodes == int(retained.sum())
            assert torch.equal(view.pos, batch.pos[retained])  # pos follows the removed nodes
            xs, orig, mask = view.x, batch.x[retained], mask[retained]
        else:
            assert (view.x[drop] == 0).all()
            xs, orig = view.x, batch.x
        if dropped != "remove":
            xs, orig, mask = xs[retained], orig[retained], mask[retained]
        assert torch.equal(xs[:, 1:], orig[:, 1:])  # positions survive masking
        assert torch.allclose(xs[mask, 0], batch.x[:, 0].mean())  # intensity -> mean intensity
        assert torch.equal(xs[~mask, 0], orig[~mask, 0])


def test_generator_learns_from_the_classifier_through_node_weights():
    torch.manual_seed(0)
    batch = superpixel_batch()
    cfg = ViewsConfig(dataset="MNIST")
    model, gens = make_models(cfg, 3, 2)
    view, _ = gens[0](batch)
    torch.nn.functional.nll_loss(model(view), batch.y).backward()
    grads = [p.grad for p in gens[0].parameters()]
    assert all(g is not None for g in grads) and sum(float(g.abs().sum()) for g in grads) > 0


def test_config_defaults_per_classifier():
    mnist = ViewsConfig()
    assert (mnist.classifier, mnist.lr, mnist.gen_lr, mnist.hidden, mnist.batch_size, mnist.warmup_epochs,
            mnist.dropped, mnist.lam) == ("relpos", 0.001, 0.01, 64, 64, 1, "weight", 0.3)
    tu = ViewsConfig(dataset="MUTAG")
    assert (tu.classifier, tu.lr, tu.hidden, tu.batch_size, tu.warmup_epochs, tu.dropped, tu.lam) == (
        "resgcn", 0.01, 128, 128, 0, "remove", 1.0)
    assert ViewsConfig(classifier="resgcn", lr=0.003).lr == 0.003
    with pytest.raises(ConfigError, match="positions"):
        ViewsConfig(dataset="MUTAG", classifier="relpos")
    with pytest.raises(ConfigError, match="node weights"):
        ViewsConfig(classifier="resgcn", dropped="weight")
    with pytest.raises(ConfigError, match="unknown classifier"):
        ViewsConfig(classifier="gat")


def test_cli_classifier_choice(data_root, tmp_path, capsys):
    import json

    from autogcl.cli import main

    assert main(["visualize", "views", "--dataset", "MUTAG", "--classifier", "relpos",
                 "--data-root", str(data_root), "--out", str(tmp_path / "x")]) == 2
    assert "needs superpixel positions" in capsys.readouterr().err
    out = tmp_path / "resgcn"  # ResGCN on superpixels still runs (the former default)
    assert main(["visualize", "views", "--classifier", "resgcn", "--data-root", str(data_root), "--limit", "40",
                 "--max-epochs", "1", "--examples", "2", "--out", str(out), "--no-progress"]) == 0
    cfg = json.loads((out / "views.json").read_text())["config"]
    assert (cfg["classifier"], cfg["dropped"], cfg["lr"], cfg["warmup_epochs"]) == ("resgcn", "remove", 0.01, 0)
