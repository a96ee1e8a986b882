"""`autogcl transfer finetune` and `autogcl semi` leave the trained model and its test
predictions in every unit folder."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("rdkit", reason="fine-tuning on molecules needs RDKit (pip install rdkit)")

from autogcl.cli import main  # noqa: E402
from autogcl.eval.metrics import roc_auc  # noqa: E402
from autogcl.molecules import MoleculePredictor  # noqa: E402


def read_csv(path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def tiny_csv(data_root, tmp_path):
    """Every 10th BBBP molecule (205; both classes in every part of the scaffold split) and a bad row."""
    from .conftest import read_slice

    n = sum(1 for _ in open(data_root / "moleculenet" / "bbbp.csv", encoding="utf-8")) - 1
    smiles, y = read_slice(data_root / "moleculenet" / "bbbp.csv", "smiles", ["p_np"], list(range(0, n, 10)))
    p = tmp_path / "tiny.csv"
    p.write_text("smiles,p_np\n" + "".join(f'"{s}",{int(v[0])}\n' for s, v in zip(smiles, y)) + "C1CC,1\n")
    return p


def test_finetune_writes_a_loadable_model_and_test_predictions(tiny_csv, tmp_path):
    out = tmp_path / "ft"
    assert main(["transfer", "finetune", "--csv", str(tiny_csv), "--checkpoint", "pretrained/autogcl-moses-fullx1.pt",
                 "--epochs", "3", "--seeds", "1", "--out", str(out), "--no-progress", "--workers", "1"]) == 0
    unit = out / "autogcl-moses-fullx1" / "tiny" / "seed0"
    split = [int(i) for i in json.loads((unit.parent / "split.json").read_text())["test"]]
    rows = read_csv(unit / "predictions.csv")
    assert list(rows[0]) == ["index", "row", "smiles", "prob_p_np", "label_p_np"]
    assert [int(r["index"]) for r in rows] == split and len(rows) == 21
    lines = tiny_csv.read_text().splitlines()
    for r in rows:  # each row names its molecule and its label as the file has them
        smiles, label = lines[int(r["row"]) - 1].rsplit(",", 1)
        assert smiles.strip('"') == r["smiles"] and label == r["label_p_np"]
    model = MoleculePredictor.load(unit / "model.pt")
    assert model.tasks == ["p_np"] and model.meta["encoder"]["method"] == "autogcl"
    probs, kept = model.predict([r["smiles"] for r in rows])
    assert kept.tolist() == list(range(len(rows)))
    np.testing.assert_allclose(probs[:, 0], [float(r["prob_p_np"]) for r in rows], rtol=1e-5)
    res = json.loads((unit / "result.json").read_text())
    assert set(res["outputs"]) == {"model.pt", "predictions.csv"}
    # the saved model is the one the val selection reports: its test ROC-AUC, from the file
    assert res["model_epoch"] == res["selections"]["val"]["epoch"]
    auc, _ = roc_auc(np.array([[float(r["label_p_np"])] for r in rows]), probs)
    assert 0 < auc == pytest.approx(res["selections"]["val"]["auc"], abs=1e-6)
