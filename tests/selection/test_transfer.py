"""Transfer fine-tuning picks its epoch by the validation ROC-AUC alone (``val``);
``test_max`` by the test ROC-AUC, named as such; a NaN score never wins."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from autogcl.protocols import transfer as T
from tests.selection.tables import (
    EPOCHS,
    ROW_TEST_MAX_EPOCH,
    ROW_VAL_EPOCH,
    TEST_MAX,
    VAL_TEST,
    ByPart,
    table_rows,
)


def rows(table=EPOCHS):
    return table_rows("val_auc", "test_auc", table)


def test_select_val_reads_the_validation_auc_and_test_max_the_test_auc():
    sel = T.select(rows())
    assert sel["val"]["epoch"] == ROW_VAL_EPOCH and sel["val"]["auc"] == VAL_TEST
    assert sel["val"]["score"] == sel["val"]["val_auc"] == EPOCHS[20][0]
    assert sel["test_max"]["epoch"] == ROW_TEST_MAX_EPOCH and sel["test_max"]["auc"] == TEST_MAX
    assert "validation" in sel["val"]["criterion"] and "test" not in sel["val"]["criterion"]
    assert "test" in sel["test_max"]["criterion"]


def test_a_nan_score_never_wins_and_all_nan_selects_nothing():
    nan = math.nan
    sel = T.select(rows({1: (nan, 0.99), 2: (0.6, nan), 3: (0.5, 0.7)}))
    assert sel["val"]["epoch"] == 2 and math.isnan(sel["val"]["auc"])  # the validation best, whatever its test
    assert sel["test_max"]["epoch"] == 1 and sel["test_max"]["auc"] == 0.99
    none = T.select(rows({1: (nan, nan), 2: (nan, nan)}))
    assert none["val"]["epoch"] is none["test_max"]["epoch"] is None
    assert math.isnan(none["val"]["auc"]) and math.isnan(none["val"]["score"]) and math.isnan(none["test_max"]["auc"])
    assert none["val"]["criterion"] == "validation ROC-AUC" and none["test_max"]["criterion"] == "best test ROC-AUC"
    assert math.isnan(none["val"]["val_auc"])
    low = T.select(rows({1: (-0.5, 0.1), 2: (-0.2, 0.2)}))  # scores below 0 still select (no 0 floor)
    assert low["val"]["epoch"] == 2


@pytest.fixture
def tiny_csv(data_root, tmp_path):
    lines = (data_root / "moleculenet" / "bbbp.csv").read_text().splitlines()
    p = tmp_path / "tiny.csv"
    p.write_text("\n".join(lines[:1] + lines[1:61] + lines[-60:]) + "\n")
    return p


@pytest.mark.parametrize("select", ["val", "test_max"])
def test_a_seed_reports_the_epoch_its_selection_names(tiny_csv, tmp_path, monkeypatch, select):
    val = [v for v, _ in EPOCHS.values()]
    test = [t for _, t in EPOCHS.values()]
    # the scores of the table for the validation and test parts, told apart by the molecules scored
    def predict(model, loader):
        assert isinstance(model, T.MolPredictor)
        return loader.indices.numpy(), None
    monkeypatch.setattr(T, "predict", predict)
    # model.pt and predictions.csv read the real predictions: not this test's subject
    monkeypatch.setattr(T, "write_outputs", lambda *args, **kwargs: None)

    def part_of(indices, scores):
        split = T.atomic.read_json(tmp_path / "t" / "tiny" / "split.json")
        return next((k for k in ("valid", "test") if sorted(split[k]) == sorted(indices.tolist())), None)
    monkeypatch.setattr(T, "roc_auc", ByPart(part_of, {"valid": val, "test": test}, lambda v: (v, 1)))
    cfg = T.FinetuneConfig(csv=str(tiny_csv), label_cols=["p_np"], epochs=len(EPOCHS), dim=8, num_layers=1,
                           select=select)
    s = T.run_sweep(cfg, [0], tmp_path, "t", show_progress=False, workers=1)
    res = T.atomic.read_json(tmp_path / "t" / "tiny" / "seed0" / "result.json")
    assert res["selection"] == s["selection"] == select
    # the result records the rule behind its figure: each selection names its criterion
    assert all(sel["criterion"] for sel in res["selections"].values())
    assert "test" not in res["selections"]["val"]["criterion"]
    assert res["selections"]["val"]["epoch"] == ROW_VAL_EPOCH and res["selections"]["val"]["auc"] == VAL_TEST
    assert res["selections"]["test_max"]["epoch"] == ROW_TEST_MAX_EPOCH
    assert res["auc"] == (VAL_TEST if select == "val" else TEST_MAX)
    assert (res["protocol"], res["dataset"], res["seed"], res["pretrained"]) == ("transfer", "tiny", 0, False)
    assert s["val"]["values"] == [pytest.approx(100 * VAL_TEST)] and s["test_max"]["values"] == [pytest.approx(95)]


def test_summarize_keeps_each_selection_apart():
    rs = [{"seed": i, "train_time_s": 1.0, "selections": {"val": {"auc": v}, "test_max": {"auc": t}}}
          for i, (v, t) in enumerate([(0.6, 0.9), (0.7, 0.95)])]
    s = T.summarize(rs)
    assert s["val"]["mean"] == pytest.approx(65.0) and s["val"]["std"] == pytest.approx(5.0)  # ddof=0
    assert s["test_max"]["mean"] == pytest.approx(92.5) and s["seeds"] == [0, 1] and s["n_seeds"] == 2
    assert s["train_time_s"] == 1.0
    assert np.allclose(s["test_max"]["values"], [90, 95])


class NodeCount(torch.nn.Module):
    """Two task scores per graph: its number of nodes and minus it."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(1))

    def forward(self, batch):
        n = torch.bincount(batch.batch, minlength=batch.num_graphs).float()
        return torch.stack([n, -n], 1) * self.w


def test_predict_returns_labels_then_scores_graph_by_graph():
    from torch_geometric.data import Data
    from torch_geometric.loader import DataLoader

    sizes, labels = [3, 1, 4, 2, 5], [[1.0, np.nan], [0.0, 1.0], [1.0, 0.0], [np.nan, 1.0], [0.0, 0.0]]
    graphs = [Data(x=torch.zeros(n, 1), edge_index=torch.empty(2, 0, dtype=torch.long), y=torch.tensor([lab]))
              for n, lab in zip(sizes, labels)]
    y, scores = T.predict(NodeCount(), DataLoader(graphs, batch_size=2))
    assert y.shape == scores.shape == (5, 2)
    assert np.array_equal(y, np.array(labels), equal_nan=True)
    assert np.array_equal(scores, np.array([[n, -n] for n in sizes], dtype=np.float32))
