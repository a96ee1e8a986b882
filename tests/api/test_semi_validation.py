"""SemiSupervised.fit(validation=..., patience=...): the epoch chosen on validation, its weights
restored, early stopping, and the held-out share of the labeled graphs."""

import copy

import pytest
import torch

import autogcl
from autogcl.errors import ConfigError, DataError

from .test_semi import dataset, graph

#: the validation accuracy a restored model scores equals the recorded one up to float64 rounding
TOL = 1e-12


def flipped_validation():
    """Rings and stars labeled the wrong way round: the better the model learns the training
    labels, the worse its validation accuracy, so the best validation epoch comes early and
    keeping it is visible (it is not the last)."""
    graphs = [graph(4 + k % 5, k % 2, None) for k in range(12)]
    return graphs, [1 - k % 2 for k in range(12)]


def fit(epochs=12, **kw):
    torch.manual_seed(0)
    model = autogcl.SemiSupervised(hidden=16, num_layers=2, lr=0.01)
    states = {}

    def evaluate(epoch):
        states[epoch] = copy.deepcopy(model.state_dict())
        return {"probe": 1.0}

    rows = model.fit(dataset(labeled_every=3), epochs=epochs, batch_size=8, seed=0, progress=False,
                     evaluate=evaluate, **kw)
    return model, rows, states


def test_the_best_validation_epoch_is_restored_and_recorded():
    val = flipped_validation()
    model, rows, states = fit(validation=val)
    accs = [r["val_acc"] for r in rows]
    best = accs.index(max(accs)) + 1  # the first best epoch
    assert len(rows) == 12 and best < 12  # the flipped labels make an early epoch the best
    assert [r["epoch"] for r in rows if r.get("kept")] == [best]
    assert rows[best - 1]["selected_by"] == "val_acc" and all(r["probe"] == 1.0 for r in rows)
    assert model.selection["epoch"] == best and model.selection["val_acc"] == max(accs)
    assert model.selection["criterion"] == "best validation accuracy" and not model.selection["stopped_early"]
    # the model holds that epoch's weights (settled statistics included), not the last epoch's
    now = model.state_dict()
    assert all(torch.equal(now[k], states[best][k]) for k in now)
    assert any(not torch.equal(now[k], states[12][k]) for k in now)
    assert model.score(*val) == pytest.approx(max(accs), abs=TOL)
    assert model.history[-12:] == rows  # the history says which epoch was kept


def test_without_validation_the_last_epoch_stays():
    model, rows, states = fit()
    assert "val_acc" not in rows[0] and not any(r.get("kept") for r in rows) and model.selection is None
    now = model.state_dict()
    assert all(torch.equal(now[k], states[12][k]) for k in now)


def test_patience_stops_training_early():
    model, rows, _ = fit(epochs=30, validation=flipped_validation(), patience=2)
    kept = model.selection["epoch"]
    assert len(rows) == kept + 2 < 30  # two epochs without a better score, then it stops
    assert model.selection["stopped_early"] and model.selection["epochs_run"] == len(rows)
    assert max(r["val_acc"] for r in rows[kept:]) <= rows[kept - 1]["val_acc"]


def test_a_resumed_fit_keeps_the_same_best_epoch(tmp_path):
    val = flipped_validation()
    whole, rows, _ = fit(validation=val, patience=4)

    class Stop(Exception):
        pass

    torch.manual_seed(0)
    cut = autogcl.SemiSupervised(hidden=16, num_layers=2, lr=0.01)

    def interrupt(epoch):
        if epoch == 4:
            raise Stop
    with pytest.raises(Stop):
        cut.fit(dataset(labeled_every=3), epochs=12, batch_size=8, seed=0, progress=False, evaluate=interrupt,
                validation=val, patience=4, checkpoint=tmp_path / "ckpt.pt")
    torch.manual_seed(0)
    resumed = autogcl.SemiSupervised(hidden=16, num_layers=2, lr=0.01)
    again = resumed.fit(dataset(labeled_every=3), epochs=12, batch_size=8, seed=0, progress=False,
                        validation=val, patience=4, checkpoint=tmp_path / "ckpt.pt")
    assert [r["val_acc"] for r in again] == [r["val_acc"] for r in rows]
    assert resumed.selection == whole.selection
    a, b = resumed.state_dict(), whole.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_fraction_of_the_labeled_graphs_is_held_out_stratified_from_the_seed():
    graphs = dataset(labeled_every=3)  # 8 labeled graphs, 4 of each class
    model = autogcl.SemiSupervised(hidden=8, num_layers=1)
    y = model._labels(graphs, None)
    gen = torch.Generator().manual_seed(3)
    data, val_y, train_y = model._validation(graphs, y, 0.5, gen)
    held = (val_y >= 0).nonzero().view(-1)
    assert data is graphs and held.numel() == 4
    assert sorted(val_y[held].tolist()) == [0, 0, 1, 1]  # stratified
    assert torch.equal(train_y[held], torch.full((4,), -1))  # their labels are hidden from training
    assert torch.equal(train_y[train_y >= 0], y[(y >= 0) & (val_y < 0)])
    again = model._validation(graphs, y, 0.5, torch.Generator().manual_seed(3))[1]
    other = model._validation(graphs, y, 0.5, torch.Generator().manual_seed(4))[1]
    assert torch.equal(again, val_y) and not torch.equal(other, val_y)
    torch.manual_seed(0)
    rows = autogcl.SemiSupervised(hidden=8, num_layers=1).fit(graphs, epochs=3, batch_size=8, seed=3, progress=False,
                                                              validation=0.5)
    assert sum(bool(r.get("kept")) for r in rows) == 1 and all(0 <= r["val_acc"] <= 1 for r in rows)


def test_validation_and_patience_errors_are_clear():
    graphs = dataset(labeled_every=3)
    model = autogcl.SemiSupervised(hidden=8, num_layers=1)
    with pytest.raises(ConfigError, match="patience= stops on the validation score: give validation= too"):
        model.fit(graphs, epochs=1, patience=3, progress=False)
    with pytest.raises(ConfigError, match="patience must be a positive int"):
        model.fit(graphs, epochs=1, validation=0.2, patience=0, progress=False)
    with pytest.raises(ConfigError, match=r"validation=1.5: a fraction of the labeled graphs must lie in \(0, 1\)"):
        model.fit(graphs, epochs=1, validation=1.5, progress=False)
    with pytest.raises(DataError, match="8 labeled graphs leave 0 to validate on"):
        model.fit(graphs, epochs=1, validation=0.01, progress=False)
    unlabeled = [graph(5, k % 2, None) for k in range(4)]
    with pytest.raises(DataError, match="validation: none of its 4 graphs has a label"):
        model.fit(graphs, epochs=1, validation=unlabeled, progress=False)
    with pytest.raises(ConfigError, match="evaluate returned 'val_acc'"):
        model.fit(graphs, epochs=1, validation=0.5, evaluate=lambda e: {"val_acc": 0.0}, progress=False, seed=0)
