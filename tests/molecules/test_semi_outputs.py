"""`autogcl semi` leaves the trained classifier and its test predictions in every fold folder."""

from __future__ import annotations

import csv
import json

import numpy as np
import torch
from torch_geometric.loader import DataLoader

from autogcl.cli import main
from autogcl.data import load_tu
from autogcl.protocols.semi import load_model


def test_semi_writes_a_loadable_classifier_and_test_predictions(data_root, tmp_path):
    out = tmp_path / "semi"
    assert main(["semi", "--dataset", "MUTAG", "--row", "joint", "--epochs", "2", "--fold-limit", "1",
                 "--data-root", str(data_root), "--out", str(out), "--no-progress", "--device", "cpu"]) == 0
    unit = out / "MUTAG-joint" / "seed0" / "fold0"
    test = json.loads((unit.parent / "splits.json").read_text())["folds"][0]["test"]
    with open(unit / "predictions.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["index", "label", "pred", "prob_0", "prob_1"]
    assert [int(r["index"]) for r in rows] == test
    ds = load_tu("MUTAG", data_root, "deg+odeg100")
    assert [int(r["label"]) for r in rows] == [int(ds[i].y) for i in test]
    probs = np.array([[float(r["prob_0"]), float(r["prob_1"])] for r in rows])
    assert [int(r["pred"]) for r in rows] == probs.argmax(1).tolist()
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-5)
    model = load_model(unit / "model.pt")  # the saved classifier gives the same probabilities
    with torch.no_grad():
        again = torch.cat([model(b).exp() for b in DataLoader(ds[test], batch_size=64)]).numpy()
    np.testing.assert_allclose(again, probs, rtol=1e-4, atol=1e-6)
    with open(unit / "metrics.csv", encoding="utf-8", newline="") as f:
        last = list(csv.DictReader(f))[-1]
    accuracy = np.mean([int(r["pred"]) == int(r["label"]) for r in rows])
    assert accuracy == float(last["test_acc"])  # the last epoch's test accuracy, recomputed from the file
    blob = torch.load(unit / "model.pt", weights_only=True)
    assert set(blob["generators"]) == {"gen1", "gen2"}


def test_load_model_refuses_other_files(tmp_path):
    import pytest

    from autogcl.errors import DataError

    torch.save({"format": "autogcl-model-1"}, tmp_path / "other.pt")
    with pytest.raises(DataError, match="not a semi-supervised classifier"):
        load_model(tmp_path / "other.pt")
    with pytest.raises(DataError, match="not a readable model file"):
        load_model(tmp_path / "missing.pt")
