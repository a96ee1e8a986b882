"""Issue 59's molecule rules, each through the public call: a single molecule's scores, labels
beyond float32, a ``y`` of the wrong task count, overlapping split parts, text labels with a
``label_map``, and an encoder's name given to ``MoleculePredictor.load``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

pytest.importorskip("rdkit", reason="molecules need RDKit (pip install rdkit)")

from autogcl.cli import main  # noqa: E402
from autogcl.errors import ConfigError, DataError  # noqa: E402
from autogcl.eval.metrics import regression_scores  # noqa: E402
from autogcl.molecules import MoleculeEncoder, MoleculePredictor  # noqa: E402

SMILES = ["CCO", "CCN", "CCC", "c1ccccc1", "CC(=O)O", "CCCl", "OCCO", "c1ccncc1", "CC(C)O", "C1CCCCC1",
          "CCOC", "NCCN", "c1ccoc1", "CCS", "CC#N", "C1CCNCC1"]


def small_predictor(num_tasks: int = 1, task: str = "regression") -> MoleculePredictor:
    """A small predictor with fixed random weights (its scores are checked against its own predictions)."""
    import torch

    torch.manual_seed(0)
    return MoleculePredictor(num_tasks, dim=8, num_layers=1, task=task, tasks=[f"t{i}" for i in range(num_tasks)])


# ------------------------------------------------------------------ 1. one molecule's scores


def test_score_of_a_single_molecule_gives_rmse_and_mae_and_a_nan_r2():
    pred = small_predictor()
    values, _ = pred.predict(["CCO"])
    scores = pred.score(["CCO"], [2.5])
    err = abs(float(values[0, 0]) - 2.5)  # the same float32 prediction, scored in float64: exact
    assert scores["tasks"] == 1
    assert scores["rmse"] == pytest.approx(err, rel=1e-12) and scores["mae"] == pytest.approx(err, rel=1e-12)
    assert math.isnan(scores["r2"])  # R² needs two labels


def test_regression_scores_count_one_label_for_rmse_and_mae_and_two_for_r2():
    y = np.array([[1.0, 2.0], [np.nan, 4.0], [np.nan, 7.0]])
    pred = np.array([[3.0, 2.5], [9.0, 3.0], [9.0, 7.0]])
    scores, n = regression_scores(y, pred)
    assert n == 2
    rmse1 = math.sqrt((0.25 + 1.0 + 0.0) / 3)  # task 1 (three labels)
    assert scores["rmse"] == pytest.approx((2.0 + rmse1) / 2, rel=1e-12)
    assert scores["mae"] == pytest.approx((2.0 + 1.5 / 3) / 2, rel=1e-12)
    ss_tot = (2 - 13 / 3) ** 2 + (4 - 13 / 3) ** 2 + (7 - 13 / 3) ** 2
    assert scores["r2"] == pytest.approx(1 - 1.25 / ss_tot, rel=1e-12)  # task 1 only
    # tasks with two labels or more: the figures of before (each task's score, averaged)
    both, n2 = regression_scores(y[:, 1:], pred[:, 1:])
    assert n2 == 1 and both["rmse"] == pytest.approx(rmse1, rel=1e-12)
    none, n0 = regression_scores(np.full((2, 1), np.nan), np.zeros((2, 1)))
    assert n0 == 0 and all(math.isnan(v) for v in none.values())


# ------------------------------------------------------------------ 2. labels beyond float32


def test_labels_beyond_float32_are_refused_in_python_and_in_files(tmp_path):
    enc = MoleculeEncoder(dim=8, num_layers=1)
    with pytest.raises(DataError, match=r"label y\[1\] = 1e\+39 \(SMILES 1\) is outside float32's range"):
        enc.finetune(SMILES[:4], [1.0, 1e39, 2.0, 3.0], epochs=1, progress=False)
    with pytest.raises(DataError, match=r"label y\[2, 1\] = -1e\+300 .*float32"):
        small_predictor(2).score(SMILES[:3], [[1, 2], [3, 4], [5, -1e300]])
    path = tmp_path / "big.csv"
    path.write_text("smiles,v\nCCO,1.5\nCCN,3.5e38\nCCC,2\n")
    with pytest.raises(DataError, match=r"big.csv:3: label '3.5e38' in column 'v' is outside float32's range"):
        enc.finetune(path, "v", epochs=1, progress=False)
    # the largest float32 is a label
    assert small_predictor().score(["CCO"], [float(np.finfo(np.float32).max)])["tasks"] == 1


# ------------------------------------------------------------------ 3. a y of the wrong task count


def test_score_with_the_wrong_task_count_names_y_and_both_counts():
    pred = small_predictor(2)
    with pytest.raises(DataError, match=r"y has 1 task column\(s\); this predictor was fitted on 2 task\(s\) "
                                        r"\(t0, t1\)"):
        pred.score(["CCO", "CCN"], [1.0, 2.0])
    with pytest.raises(DataError, match=r"y has 3 task column\(s\); this predictor was fitted on 2"):
        pred.score(["CCO", "CCN"], np.ones((2, 3)))


def test_property_predictor_score_uses_the_same_task_count_rule():
    from autogcl.api.property import PropertyPredictor

    y = [float(len(s)) for s in SMILES]
    prop = PropertyPredictor("regression", members=("forest",), n_trees=5).fit(SMILES, y, progress=False)
    with pytest.raises(DataError, match=r"y has 2 task column\(s\); this predictor was fitted on 1 task\(s\) "
                                        r"\(task0\)"):
        prop.score(SMILES[:3], [[1.0, 2.0]] * 3)


# ------------------------------------------------------------------ 4. overlapping split parts


def test_overlapping_split_parts_are_refused_naming_the_molecule_and_both_parts(tmp_path):
    from autogcl.protocols.transfer import read_split_file

    y = [float(len(s)) for s in SMILES]
    split = {"train": list(range(10)), "valid": [12, 9, 11], "test": [13, 14, 15]}
    with pytest.raises(DataError, match=r"split: molecule 9 is in both 'train' and 'valid' \(1 shared\)"):
        MoleculeEncoder(dim=8, num_layers=1).finetune(SMILES, y, split=split, epochs=1, progress=False)
    split = {"train": list(range(10)), "valid": [10, 11], "test": [11, 12, 13]}
    with pytest.raises(DataError, match=r"molecule 11 is in both 'valid' and 'test'"):
        MoleculeEncoder(dim=8, num_layers=1).finetune(SMILES, y, split=split, epochs=1, progress=False)
    path = tmp_path / "split.json"
    path.write_text(json.dumps({"train": [0, 1, 2], "valid": [3, 4], "test": [4, 5]}))
    with pytest.raises(DataError, match=r"split.json: molecule 4 is in both 'valid' and 'test' \(1 shared\)"):
        read_split_file(path, 6)


# ------------------------------------------------------------------ 5. text labels and label_map


def test_text_labels_name_label_map_and_a_label_map_trains_as_the_numbers(tmp_path):
    numbers = [k % 2 for k in range(len(SMILES))]
    text = ["active" if v else "inactive" for v in numbers]
    enc = MoleculeEncoder(dim=8, num_layers=1)
    with pytest.raises(DataError, match=r"text labels \(such as 'inactive'\) need label_map, e.g. "
                                        r"label_map=\{'inactive': 1"):
        enc.finetune(SMILES, text, epochs=1, progress=False)
    with pytest.raises(DataError, match=r"label y\[0\] = 'inactive' \(SMILES 0\) is not a number .*label_map"):
        enc.finetune(SMILES, np.array(text), epochs=1, progress=False)
    kw = {"epochs": 2, "batch_size": 4, "seed": 0, "progress": False}
    want = enc.finetune(SMILES, numbers, **kw).predict(SMILES)[0]
    got = enc.finetune(SMILES, text, label_map={"inactive": 0, "active": 1}, **kw)
    assert got.task == "classification"
    np.testing.assert_array_equal(got.predict(SMILES)[0], want)  # the same numbers: the same computation
    path = tmp_path / "act.csv"
    path.write_text("smiles,act\n" + "".join(f"{s},{t}\n" for s, t in zip(SMILES, text)))
    with pytest.raises(DataError, match=r"act.csv:2: label 'inactive' in column 'act' is not a number .*label_map.*"
                                        r"--label-map inactive=1"):
        enc.finetune(path, "act", epochs=1, progress=False)
    from_file = enc.finetune(path, "act", label_map="inactive=0,active=1", **kw)
    np.testing.assert_array_equal(from_file.predict(SMILES)[0], want)
    assert got.score(SMILES, text, label_map={"inactive": 0, "active": 1}) == got.score(SMILES, numbers)
    with pytest.raises(ConfigError, match="TEXT=NUMBER"):
        enc.finetune(SMILES, text, label_map="inactive:0", epochs=1, progress=False)
    with pytest.raises(ConfigError, match=r"label_map\['active'\] = 'yes' is not a number"):
        enc.finetune(SMILES, text, label_map={"active": "yes"}, epochs=1, progress=False)


def test_cli_label_map_reads_text_labels_of_a_csv(tmp_path, monkeypatch, capsys):
    from autogcl.protocols.configs import FinetuneConfig

    path = tmp_path / "act.csv"
    text = ["active" if k % 2 else "inactive" for k in range(len(SMILES))]
    path.write_text("smiles,act\n" + "".join(f"{s},{t}\n" for s, t in zip(SMILES, text)))
    monkeypatch.chdir(tmp_path)
    common = ["transfer", "finetune", "--csv", str(path), "--epochs", "1", "--seeds", "1", "--no-progress",
              "--workers", "1"]
    assert main(common + ["--out", str(tmp_path / "bad")]) == 2
    assert "--label-map inactive=1" in capsys.readouterr().err
    assert main(common + ["--out", str(tmp_path / "ok"), "--label-map", "inactive=0,active=1"]) == 0
    config = json.loads(next((tmp_path / "ok").rglob("config.json")).read_text())
    assert config["label_map"] == {"inactive": 0.0, "active": 1.0}
    # an older config.json (no label_map) is the same configuration as one without --label-map
    assert "label_map" not in FinetuneConfig(csv=str(path)).to_dict()
    with pytest.raises(ConfigError, match="--label-map is for --csv"):
        FinetuneConfig(label_map="a=1")


# ------------------------------------------------------------------ 6. an encoder's name


def test_predictor_load_of_an_encoder_name_says_how_to_load_and_fine_tune_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError, match=r"'autogcl-moses-fullx1' is the name of a shipped pre-trained encoder.*"
                                        r"MoleculeEncoder.load\('autogcl-moses-fullx1'\).*finetune.*PropertyPredictor"):
        MoleculePredictor.load("autogcl-moses-fullx1")
    with pytest.raises(DataError, match="no such file"):
        MoleculePredictor.load("autogcl-moses-fullx9")
