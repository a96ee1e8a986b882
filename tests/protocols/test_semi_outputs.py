"""`autogcl semi` leaves the trained estimator (autogcl.load reads it) and its test predictions in every fold folder."""

from __future__ import annotations

import csv
import json

import numpy as np
import torch
from torch_geometric.loader import DataLoader

from autogcl.cli import main
from autogcl.data import load_tu
import autogcl


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
    model = autogcl.load(unit / "model.pt")  # the estimator's own file gives the same probabilities
    assert type(model) is autogcl.SemiSupervised and model.hparams["classifier"] == "resgcn"
    np.testing.assert_allclose(model.predict_proba(ds[test]).numpy(), probs, rtol=1e-4, atol=1e-6)
    with torch.no_grad():  # and so does its classifier as a plain module, on PyG's batches
        again = torch.cat([model.classifier.eval()(b).exp() for b in DataLoader(ds[test], batch_size=64)]).numpy()
    np.testing.assert_allclose(again, probs, rtol=1e-4, atol=1e-6)
    with open(unit / "metrics.csv", encoding="utf-8", newline="") as f:
        last = list(csv.DictReader(f))[-1]
    accuracy = np.mean([int(r["pred"]) == int(r["label"]) for r in rows])
    assert accuracy == float(last["test_acc"])  # the last epoch's test accuracy, recomputed from the file
    blob = torch.load(unit / "model.pt", weights_only=True)
    assert {k.split(".")[0] for k in blob["state_dict"]} == {"classifier", "gen1", "gen2"}
    assert [r["epoch"] for r in blob["history"]] == [1, 2]  # the fold's rows, val and test accuracy included
    assert blob["history"][-1]["test_acc"] == float(last["test_acc"])
