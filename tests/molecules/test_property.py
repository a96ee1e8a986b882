"""autogcl.PropertyPredictor: the default molecular property predictor (the fine-tuned GIN
blended with a forest on RDKit features) learns through its public calls, blends as it says,
round-trips through save/load, and refuses a damaged folder by name."""

from __future__ import annotations

import numpy as np
import pytest

import autogcl
from autogcl.errors import ConfigError, DataError

pytest.importorskip("rdkit")


@pytest.fixture(scope="module")
def logp_data(bbbp):
    """The 80 BBBP molecules with their Crippen logP (a property RDKit computes): 60 to train, 20 held out."""
    from rdkit import Chem
    from rdkit.Chem import Crippen

    smiles, _ = bbbp
    keep = [s for s in smiles if Chem.MolFromSmiles(s) is not None]
    y = np.array([Crippen.MolLogP(Chem.MolFromSmiles(s)) for s in keep])
    return keep[:60], y[:60], keep[60:], y[60:]


FAST = {"epochs": 3, "batch_size": 16}


def test_the_forest_member_learns_a_property_it_has_not_seen_the_molecules_of(logp_data):
    tr_s, tr_y, te_s, te_y = logp_data
    model = autogcl.PropertyPredictor(members=("forest",), n_trees=100).fit(tr_s, tr_y)
    assert model.task_ == "regression" and model.tasks == ["task0"]
    scores = model.score(te_s, te_y)
    assert scores["r2"] > 0.5, scores  # logP from descriptors that include RDKit's own logP estimate


def test_the_blend_is_the_mean_of_its_members_and_its_spread_is_their_std(logp_data, tmp_path):
    tr_s, tr_y, te_s, te_y = logp_data
    model = autogcl.PropertyPredictor(finetune=FAST, n_trees=50).fit(tr_s, tr_y, validation=(te_s[:10], te_y[:10]),
                                                                     device="cpu", progress=False)
    parts, index = model.predict_members(te_s)
    assert model.members_ == ("gnn", "forest", "svr") and model.members is None  # the default of a regression
    assert set(parts) == {"gnn", "forest", "svr"} and index.tolist() == list(range(len(te_s)))
    values, std, _ = model.predict(te_s, return_std=True)
    stack = np.stack([parts["gnn"], parts["forest"], parts["svr"]])
    np.testing.assert_allclose(values, stack.mean(0), rtol=0, atol=1e-5)
    np.testing.assert_allclose(std, stack.std(0), rtol=0, atol=1e-5)
    assert set(model.fit_seconds) == {"gnn", "forest", "svr", "total"}
    # save and load give the same predictions (the GIN on the same threads: 1e-5)
    model.save(tmp_path / "p")
    again = autogcl.PropertyPredictor.load(tmp_path / "p")
    np.testing.assert_allclose(again.predict(te_s)[0], values, rtol=0, atol=1e-5)
    assert again.tasks == model.tasks and again.get_params() == model.get_params()
    # a damaged member file is refused by name
    f = tmp_path / "p" / "forest.joblib"
    f.write_bytes(f.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(DataError, match=r"forest\.joblib: damaged or replaced"):
        autogcl.PropertyPredictor.load(tmp_path / "p")


def test_classification_gives_probabilities_and_learns_its_molecules(bbbp):
    smiles, y = bbbp
    model = autogcl.PropertyPredictor(n_trees=100).fit(smiles, y)  # the default members of classification
    assert model.task_ == "classification" and model.members_ == ("forest",)
    values, _ = model.predict(smiles)
    assert values.shape == (len(smiles), 1) and ((values >= 0) & (values <= 1)).all()
    assert model.score(smiles, y)["roc_auc"] > 0.9  # its own molecules


def test_misuse_gets_clear_answers(logp_data, bbbp):
    tr_s, tr_y, te_s, te_y = logp_data
    with pytest.raises(ConfigError, match="not fitted yet"):
        autogcl.PropertyPredictor().predict(te_s)
    with pytest.raises(ConfigError, match="unknown member 'svm'"):
        autogcl.PropertyPredictor(members=("svm",))
    model = autogcl.PropertyPredictor(members=("forest",), n_trees=10).fit(tr_s, tr_y)
    with pytest.raises(DataError, match=r"y has 2 task column\(s\); this predictor was fitted on 1"):
        model.score(te_s, np.stack([te_y, te_y], 1))
    with pytest.raises(DataError, match="not a saved PropertyPredictor"):
        autogcl.PropertyPredictor.load(bbbp[0][0])


def test_the_command_line_gives_the_numbers_of_python(logp_data, tmp_path, capsys):
    """``autogcl property fit`` + ``predict`` on a CSV give the predictions (and spread) of
    PropertyPredictor(...).fit(...).predict(...) with the same options (the same computation on the
    same thread count: 1e-5 covers the CSV's 6 significant digits)."""
    import csv

    from autogcl.cli import main

    tr_s, tr_y, te_s, _ = logp_data
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    with open(train, "w", newline="") as f:
        csv.writer(f).writerows([["smiles", "logp"], *[[s, f"{v:.6f}"] for s, v in zip(tr_s, tr_y)]])
    with open(test, "w", newline="") as f:
        csv.writer(f).writerows([["smiles"], *[[s] for s in te_s]])
    assert main(["property", "fit", str(train), "--label-cols", "logp", "--epochs", "2", "--n-trees", "30",
                 "--out", str(tmp_path / "m"), "--no-progress"]) == 0
    assert main(["property", "predict", str(tmp_path / "m"), str(test), "--out", str(tmp_path / "p.csv")]) == 0
    with open(tmp_path / "p.csv") as f:
        rows = list(csv.DictReader(f))
    y = np.array([float(f"{v:.6f}") for v in tr_y])  # the file's values
    ours = autogcl.PropertyPredictor(finetune={"epochs": 2}, n_trees=30).fit(tr_s, y, device="cpu", progress=False)
    values, std, index = ours.predict(te_s, return_std=True)
    assert [int(r["index"]) for r in rows] == index.tolist()
    np.testing.assert_allclose([float(r["pred_logp"]) for r in rows], values[:, 0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose([float(r["std_logp"]) for r in rows], std[:, 0], rtol=1e-5, atol=1e-5)


def test_the_svr_member_learns_a_regression_round_trips_and_refuses_classes(logp_data, bbbp, tmp_path):
    tr_s, tr_y, te_s, te_y = logp_data
    model = autogcl.PropertyPredictor(members=("svr", "forest"), n_trees=30).fit(tr_s, tr_y)
    parts, _ = model.predict_members(te_s)
    assert set(parts) == {"svr", "forest"}
    assert autogcl.PropertyPredictor(members=("svr",)).fit(tr_s, tr_y).score(te_s, te_y)["r2"] > 0.5
    model.save(tmp_path / "s")
    np.testing.assert_allclose(autogcl.PropertyPredictor.load(tmp_path / "s").predict(te_s)[0],
                               model.predict(te_s)[0], rtol=0, atol=1e-6)
    with pytest.raises(ConfigError, match="the svr member predicts numbers"):
        autogcl.PropertyPredictor(members=("svr",)).fit(*bbbp)


def test_a_second_fit_fits_new_members_as_a_fresh_predictor_would(logp_data):
    """docs/api.md: a second PropertyPredictor.fit fits new members, with the tasks of its own
    data; nothing of the first fit is kept (forest: the same seed gives the same trees, 1e-12)."""
    tr_s, tr_y, te_s, _ = logp_data
    twice = autogcl.PropertyPredictor(members=("forest",), n_trees=30)
    twice.fit(tr_s[:30], -tr_y[:30], tasks=["first"])
    twice.fit(tr_s[30:], tr_y[30:])
    fresh = autogcl.PropertyPredictor(members=("forest",), n_trees=30).fit(tr_s[30:], tr_y[30:])
    assert twice.tasks == fresh.tasks == ["task0"]
    np.testing.assert_allclose(twice.predict(te_s)[0], fresh.predict(te_s)[0], rtol=0, atol=1e-12)
