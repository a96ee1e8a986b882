"""The view-visualisation protocol: the generator learning through the classifier, the
per-classifier defaults and the CLI classifier choice (no data files needed, except the CLI test)."""

import pytest
import torch

from autogcl.errors import ConfigError
from autogcl.protocols.views import (
    ViewsConfig,
    make_models,
)
from tests.conftest import superpixel_batch


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


def test_cli_classifier_choice(data_root, mnist_root, tmp_path, capsys):
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
