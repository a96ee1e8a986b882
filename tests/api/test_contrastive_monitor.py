"""AutoGCL/GraphCL.fit(monitor=..., patience=...): the epoch of the best score evaluate returns
is kept (its weights restored), and training stops after patience epochs without a better one."""

import copy

import pytest
import torch

import autogcl
from autogcl.errors import ConfigError

from .test_semi import graph


def fit(cls, epochs=8, **kw):
    graphs = [graph(4 + k % 5, k % 2) for k in range(16)]
    torch.manual_seed(0)
    model = cls(hidden=8, num_layers=2)
    states = {}

    def evaluate(epoch):  # a score that peaks at epoch 3
        states[epoch] = copy.deepcopy(model.state_dict())
        return {"score": -abs(epoch - 3) / 10}

    rows = model.fit(graphs, epochs=epochs, batch_size=8, seed=0, progress=False, evaluate=evaluate, **kw)
    return model, rows, states


@pytest.mark.parametrize("cls", [autogcl.GraphCL, autogcl.AutoGCL])
def test_the_best_monitored_epoch_is_restored(cls):
    model, rows, states = fit(cls, monitor="score")
    assert len(rows) == 8 and [r["epoch"] for r in rows if r.get("kept")] == [3]
    assert rows[2]["selected_by"] == "score" and model.selection["epoch"] == 3 and model.selection["score"] == 0.0
    now = model.state_dict()
    assert all(torch.equal(now[k], states[3][k]) for k in now)
    assert any(not torch.equal(now[k], states[8][k]) for k in now)  # not the last epoch's


def test_patience_stops_a_contrastive_fit():
    model, rows, _ = fit(autogcl.GraphCL, epochs=20, monitor="score", patience=2)
    assert len(rows) == 5 and model.selection["stopped_early"] and model.selection["epoch"] == 3


def test_without_monitor_the_last_epoch_stays_and_errors_are_clear():
    model, rows, states = fit(autogcl.GraphCL)
    now = model.state_dict()
    assert all(torch.equal(now[k], states[8][k]) for k in now) and model.selection is None
    with pytest.raises(ConfigError, match="monitor= names a score that evaluate= returns"):
        autogcl.GraphCL(hidden=8, num_layers=1).fit([graph(4, 0), graph(5, 1)], epochs=1, monitor="val")
    with pytest.raises(ConfigError, match="monitor= names a score that evaluate= returns"):
        autogcl.GraphCL(hidden=8, num_layers=1).fit([graph(4, 0), graph(5, 1)], epochs=1, patience=2,
                                                    evaluate=lambda e: {"val": 1.0})
