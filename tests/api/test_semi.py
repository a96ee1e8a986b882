"""The semi-supervised estimator on one's own partly labeled graphs."""

import pytest
import torch
from torch_geometric.data import Data

import autogcl
from autogcl.api import SEMI_STRATEGIES
from autogcl.errors import ConfigError, DataError


def graph(n, cls, y="same"):
    """Class 0: rings; class 1: stars (distinguishable by degree)."""
    i = torch.arange(n)
    e = torch.stack([i, (i + 1) % n]) if cls == 0 else torch.stack([torch.zeros(n - 1, dtype=torch.long), i[1:]])
    g = Data(edge_index=torch.cat([e, e.flip(0)], 1), num_nodes=n)
    if y == "same":
        g.y = torch.tensor([cls])
    elif y is not None:
        g.y = torch.tensor([y])
    return g


def dataset(labeled_every=3):
    """24 graphs; every ``labeled_every``-th keeps its label, the others have no y or y = -1."""
    graphs = []
    for k in range(24):
        cls = k % 2
        y = "same" if k % labeled_every == 0 else (None if k % 4 else -1)
        graphs.append(graph(4 + k % 5, cls, y))
    return graphs


@pytest.mark.parametrize("strategy", SEMI_STRATEGIES)
def test_every_strategy_fits_predicts_and_scores_partly_labeled_graphs(strategy):
    graphs = dataset()
    torch.manual_seed(0)
    model = autogcl.SemiSupervised(hidden=16, num_layers=2, strategy=strategy, lr=0.01)
    rows = model.fit(graphs, epochs=3, pretrain_epochs=1, batch_size=8, seed=0, progress=False)
    phases = [r["phase"] for r in rows]
    assert phases == (["pretrain"] if strategy in ("naive", "graphcl") else []) + ["train"] * 3
    assert all(torch.isfinite(torch.tensor(r["loss"])) for r in rows)
    assert model.hparams["num_classes"] == 2 and model.hparams["in_channels"] == 102
    truth = torch.tensor([k % 2 for k in range(24)])
    pred = model.predict(graphs)
    assert pred.shape == (24,) and pred.dtype == torch.long
    proba = model.predict_proba(graphs)
    assert torch.allclose(proba.sum(1), torch.ones(24)) and torch.equal(proba.argmax(1), pred)
    labeled = [g for g in graphs if getattr(g, "y", None) is not None and int(g.y) >= 0]
    assert model.score(labeled) == pytest.approx(float((pred[::3] == truth[::3]).double().mean()))
    assert model.score(graphs, labels=truth) == pytest.approx(float((pred == truth).double().mean()))


def test_joint_learns_an_easy_task():
    graphs = dataset(labeled_every=3)
    torch.manual_seed(0)
    model = autogcl.SemiSupervised(hidden=16, num_layers=2, lr=0.01)
    model.fit(graphs, epochs=15, batch_size=8, seed=0, progress=False)
    truth = torch.tensor([k % 2 for k in range(24)])
    assert model.score(graphs, labels=truth) >= 0.9  # rings vs stars, a third of the labels


def test_labels_argument_overrides_y_and_is_checked():
    graphs = dataset()
    model = autogcl.SemiSupervised(hidden=8, num_layers=1)
    labels = [k % 2 if k < 6 else -1 for k in range(24)]
    model.fit(graphs, labels=labels, epochs=1, batch_size=8, seed=0, progress=False)
    with pytest.raises(DataError, match="labels has 23 entries for 24 graphs"):
        model.fit(graphs, labels=labels[:-1], epochs=1, progress=False)
    with pytest.raises(DataError, match=r"labels\[2\]: y=0.5 is not a class index"):
        model.fit(graphs, labels=[0, 1, 0.5] + [-1] * 21, epochs=1, progress=False)
    with pytest.raises(DataError, match="graph 3 has label 5, but the model has 2 classes"):
        model.fit(graphs, labels=[0, 1, 0, 5] + [-1] * 20, epochs=1, progress=False)


def test_all_unlabeled_is_a_clear_error():
    graphs = [graph(5, k % 2, None) for k in range(6)]
    with pytest.raises(DataError, match="all 6 graphs are unlabeled"):
        autogcl.SemiSupervised().fit(graphs, epochs=1, progress=False)
    with pytest.raises(DataError, match="none of the 6 graphs has a label"):
        model = autogcl.SemiSupervised(hidden=8, num_layers=1)
        model.fit(dataset(), epochs=1, batch_size=8, progress=False)
        model.score(graphs)


def test_bad_labels_in_y_name_the_graph():
    graphs = dataset()
    graphs[5].y = torch.tensor([[0, 1]])
    with pytest.raises(DataError, match="graph 5: y has 2 values"):
        autogcl.SemiSupervised().fit(graphs, epochs=1, progress=False)


def test_predict_before_fit_and_bad_options_are_clear():
    with pytest.raises(ConfigError, match="not trained yet"):
        autogcl.SemiSupervised().predict(dataset())
    with pytest.raises(ConfigError, match="unknown strategy"):
        autogcl.SemiSupervised(strategy="magic")
    with pytest.raises(ConfigError, match="num_classes"):
        autogcl.SemiSupervised(num_classes=1)


def test_save_load_and_a_batch_of_one_graph(tmp_path):
    graphs = dataset()
    torch.manual_seed(0)
    model = autogcl.SemiSupervised(hidden=8, num_layers=2)
    model.fit(graphs, epochs=2, batch_size=1, seed=0, progress=False)  # every batch holds one graph
    back = autogcl.load(model.save(tmp_path / "semi.pt"))
    assert type(back) is autogcl.SemiSupervised and back.hparams == model.hparams
    assert torch.equal(back.predict_proba(graphs), model.predict_proba(graphs))
    assert back.embed(graphs).shape == (24, 16)


def test_seed_fixes_the_fit():
    def run():
        torch.manual_seed(0)
        model = autogcl.SemiSupervised(hidden=8, num_layers=2)
        model.fit(dataset(), epochs=2, batch_size=8, seed=3, progress=False)
        return model.predict_proba(dataset())

    assert torch.equal(run(), run())
