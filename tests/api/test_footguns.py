"""No silent foot-guns: an untrained model's embeddings, TU-style labels without class 0, a
graph without ``edge_index``, an augmentation that changes the features, string labels in
the linear probe, progress outside a terminal."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

import autogcl
from autogcl.errors import DataError


def ring(n: int, y=None, feat: int | None = 3) -> Data:
    i = torch.arange(n)
    e = torch.stack([i, (i + 1) % n])
    g = Data(edge_index=torch.cat([e, e.flip(0)], 1), num_nodes=n)
    if feat:
        g.x = torch.rand(n, feat)
    if y is not None:
        g.y = torch.tensor([y])
    return g


UNTRAINED = "embed before fit: the model is untrained"


def test_embed_before_fit_warns_once_and_a_fitted_or_loaded_model_does_not(caplog, tmp_path):
    graphs = [ring(n) for n in range(3, 9)]
    model = autogcl.GraphCL(hidden=4, num_layers=2)
    with caplog.at_level(logging.WARNING, logger="autogcl"):
        model.embed(graphs)
        model.embed(graphs)
    assert sum(UNTRAINED in r.getMessage() for r in caplog.records) == 1
    model.fit(graphs, epochs=1, batch_size=3, progress=False, device="cpu")
    path = model.save(tmp_path / "m.pt")
    fresh = autogcl.GraphCL(3, hidden=4, num_layers=2)
    fresh.load_state_dict(model.state_dict())
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="autogcl"):
        model.embed(graphs)
        autogcl.load(path).embed(graphs)
        fresh.embed(graphs)
    assert not any(UNTRAINED in r.getMessage() for r in caplog.records)


def test_labels_without_class_0_are_refused_showing_the_mapping():
    graphs = [ring(n, y=1 + n % 2) for n in range(3, 11)]
    with pytest.raises(DataError, match=r"the labels are \[1, 2\], with no class 0 .*relabel them "
                                        r"\(1 -> 0, 2 -> 1; e.g. y - 1"):
        autogcl.SemiSupervised(hidden=4, num_layers=1).fit(graphs, epochs=1, progress=False)
    model = autogcl.SemiSupervised(hidden=4, num_layers=1, num_classes=3)  # a class count given: kept as they are
    model.fit(graphs, epochs=1, progress=False, device="cpu")
    assert model.predict_proba(graphs).shape == (8, 3)
    autogcl.GraphCL(hidden=4, num_layers=1).fit(graphs, epochs=1, progress=False)  # labels unused: no check


def test_labels_without_class_0_on_the_fast_path_of_a_dataset(data_root):
    from autogcl.data import load_tu

    ds = load_tu("MUTAG", data_root)[:20]
    ds._data.y = ds._data.y + 1
    with pytest.raises(DataError, match=r"no class 0"):
        autogcl.SemiSupervised(hidden=4, num_layers=1).fit(ds, epochs=1, progress=False)


def test_check_class_zero_only_speaks_when_nothing_is_class_0():
    from autogcl.api.base import check_class_zero

    assert check_class_zero([0, 1, -1], "x") is None
    assert check_class_zero([-1, -1], "x") is None
    assert "3 -> 0, 5 -> 1" in check_class_zero([5, 3, -1, 3], "x")


def test_a_graph_without_edge_index_is_an_edgeless_graph():
    plain = [ring(n, feat=None) for n in range(3, 7)]
    bare = Data(num_nodes=4)  # no x, no edge_index at all
    model = autogcl.AutoGCL(hidden=4, num_layers=2)
    model.fit(plain + [bare], epochs=1, batch_size=5, progress=False, device="cpu")
    z = model.embed([bare, Data(num_nodes=4, edge_index=torch.empty(2, 0, dtype=torch.long))])
    # the same as an explicitly edgeless graph: identical inputs in two rows of one batch, which a
    # BLAS kernel may still compute in different blocks (another summation order): float32 rounding
    torch.testing.assert_close(z[0], z[1], rtol=1e-5, atol=1e-6)
    with_x = Data(x=torch.rand(3, 2))
    assert autogcl.GraphCL(hidden=4, num_layers=1).embed([with_x]).shape == (1, 4)


def test_linear_probe_takes_class_names():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(40, 4, generator=gen)
    names = np.array(["inactive", "active"] * 20, dtype=object)
    x[names == "active"] += 4.0
    probe = autogcl.LinearProbe(folds=2, epochs=30, lr=0.1, device="cpu")
    by_name = probe(x, names)
    by_index = probe(x, (names == "inactive").astype(int))  # sorted names: active 0, inactive 1
    assert by_name["acc"] == by_index["acc"] and by_name["acc"] > 0.9  # the same labels, the same fit: bit-exact
    names[:4] = None  # unlabeled
    assert probe(x, names)["unlabeled_left_out"] == 4
    assert autogcl.SVMEvaluator(folds=2, inner_folds=2)(x, list(names))["unlabeled_left_out"] == 4


def test_linear_probe_with_labels_1_and_2_trains_two_classes():
    x = torch.randn(20, 3, generator=torch.Generator().manual_seed(1))
    res = autogcl.LinearProbe(folds=2, epochs=10, device="cpu")(x, np.array([1, 2] * 10))
    assert 0.0 <= res["acc"] <= 1.0


def test_fit_logs_every_epoch_at_info_when_no_bar_is_shown(caplog):
    graphs = [ring(n) for n in range(3, 9)]
    model = autogcl.GraphCL(hidden=4, num_layers=1)
    with caplog.at_level(logging.INFO, logger="autogcl"):
        model.fit(graphs, epochs=2, batch_size=3, progress=False, device="cpu")
    lines = [r.getMessage() for r in caplog.records if r.name == "autogcl.train.loop"]
    assert any(line.startswith("GraphCL: epoch 1/2, loss") for line in lines)
    assert any(line.startswith("GraphCL: epoch 2/2, loss") for line in lines)


def test_semi_supervised_labels_given_apart_without_a_class_0_are_refused_with_the_mapping():
    graphs = [ring(n) for n in range(3, 9)]
    with pytest.raises(DataError, match=r"no class 0.*1 -> 0, 2 -> 1"):
        autogcl.SemiSupervised(3, hidden=4, num_layers=2, strategy="supervised").fit(
            graphs, labels=[1, 2, 1, 2, -1, -1], epochs=1, progress=False, device="cpu")


def test_semi_supervised_embed_before_fit_warns(caplog):
    model = autogcl.SemiSupervised(3, 2, hidden=4, num_layers=2, strategy="supervised")
    with caplog.at_level(logging.WARNING, logger="autogcl"):
        model.embed([ring(4), ring(5)])
    assert "untrained" in caplog.text


def test_a_checkpoint_of_another_model_or_estimator_is_refused_naming_what_differs(tmp_path):
    """``fit(checkpoint=...)`` given the file of another architecture or estimator: a ConfigError
    naming the file and the part that differs (not torch's state-dict or optimizer error), and
    the file stays as it was."""
    from autogcl.errors import ConfigError

    graphs = [ring(n) for n in range(4, 12)]
    ck = tmp_path / "ck.pt"
    autogcl.AutoGCL(3, hidden=8, num_layers=2).fit(graphs, epochs=1, batch_size=4, checkpoint=ck, progress=False)
    written = ck.read_bytes()
    with pytest.raises(ConfigError, match=r"ck\.pt does not fit this fit's module 'model' \(size mismatch for encoder"):
        autogcl.AutoGCL(3, hidden=16, num_layers=2).fit(graphs, epochs=2, batch_size=4, checkpoint=ck, progress=False)
    with pytest.raises(ConfigError, match=r"another kind of training: its modules are \['gen1', 'gen2', 'model'\], "
                                          r"this fit's \['model'\]"):
        autogcl.GraphCL(3, hidden=8, num_layers=2).fit(graphs, epochs=2, batch_size=4, checkpoint=ck, progress=False)
    assert ck.read_bytes() == written
    # the same settings resume it
    rows = autogcl.AutoGCL(3, hidden=8, num_layers=2).fit(graphs, epochs=2, batch_size=4, checkpoint=ck,
                                                          progress=False)
    assert len(rows) == 2
    # a strategy whose module and optimizer share a name ("model": the joint semi-supervised one)
    labeled = [ring(n, y=n % 2) for n in range(4, 12)]
    semi = tmp_path / "semi.pt"
    autogcl.SemiSupervised(3, 2, hidden=8, num_layers=2).fit(labeled, epochs=1, batch_size=4, checkpoint=semi,
                                                             progress=False)
    rows = autogcl.SemiSupervised(3, 2, hidden=8, num_layers=2).fit(labeled, epochs=2, batch_size=4, checkpoint=semi,
                                                                    progress=False)
    assert [r["epoch"] for r in rows] == [1, 2]


def test_an_evaluate_that_returns_no_dict_is_refused_saying_what_it_must_return():
    from autogcl.errors import ConfigError

    graphs = [ring(n) for n in range(4, 12)]
    with pytest.raises(ConfigError, match=r"evaluate\(1\) returned a float \(0\.5\); it must return a dict"):
        autogcl.AutoGCL(3, hidden=8, num_layers=2).fit(graphs, epochs=1, batch_size=4, evaluate=lambda e: 0.5,
                                                      progress=False)
    rows = autogcl.AutoGCL(3, hidden=8, num_layers=2).fit(graphs, epochs=1, batch_size=4, progress=False,
                                                          evaluate=lambda e: {"probe": 0.5})
    assert rows[0]["probe"] == 0.5


def test_a_seed_that_is_no_int_and_tracking_without_a_log_dir_are_said(caplog, monkeypatch):
    from autogcl.errors import ConfigError
    from autogcl.train.tracking import LOG_DIR_ENV

    graphs = [ring(n) for n in range(4, 12)]
    for seed in ("a", 1.5, True, -1):
        with pytest.raises(ConfigError, match=r"seed must be an int in \[0, 2\*\*32\), a torch.Generator or None"):
            autogcl.GraphCL(3, hidden=8, num_layers=2).fit(graphs, epochs=1, batch_size=4, seed=seed, progress=False)
    monkeypatch.delenv(LOG_DIR_ENV, raising=False)
    for tracking, said in (("tensorboard", True), (None, False)):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="autogcl"):
            autogcl.GraphCL(3, hidden=8, num_layers=2).fit(graphs, epochs=1, batch_size=4, seed=np.int64(3),
                                                          tracking=tracking, progress=False)
        assert ("tracking='tensorboard' without log_dir: nothing is logged" in caplog.text) == said, caplog.text


def test_a_width_mismatch_of_made_features_says_the_recipe_made_them():
    """Graphs without x get the recipe's features: a model of another width names the recipe,
    not only the numbers (the user's graphs have no features at all)."""
    graphs = [ring(n, feat=None) for n in range(4, 10)]
    with pytest.raises(DataError, match=r"graph 0 has \d+ node features \(made by the node-feature recipe 'auto': "
                                        r"the graph has no x\), the model expects 7"):
        autogcl.AutoGCL(7, hidden=8, num_layers=2).fit(graphs, epochs=1, progress=False)
    with pytest.raises(DataError, match=r"graph 1 has 4 node features, the model expects 3$"):
        autogcl.AutoGCL(hidden=8, num_layers=2).fit([ring(5), ring(6, feat=4)], epochs=1, progress=False)
