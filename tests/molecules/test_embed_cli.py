"""`autogcl embed`: a SMILES file with the shipped encoder, MUTAG with a trained model, and a
saved list of graphs, to .npy and .csv."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

pytest.importorskip("rdkit", reason="embedding SMILES needs RDKit (pip install rdkit)")

import autogcl  # noqa: E402
from autogcl.cli import main  # noqa: E402
from autogcl.data import load_tu  # noqa: E402
from autogcl.molecules import from_smiles  # noqa: E402


#: the command batches the rows itself (--batch-size), the library call with its own default: the
#: same embeddings within float32 rounding, whose last bits depend on the batching and the CPU
BATCHING = {"rtol": 1e-5, "atol": 1e-5}


def read_csv(path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_smiles_csv_to_csv_and_npy_reporting_skipped_rows(encoder, bbbp, tmp_path, capsys):
    smiles = bbbp[0][:12]
    src = tmp_path / "mols.csv"
    rows = [f'm{i},"{s}"' for i, s in enumerate(smiles)]
    rows.insert(4, "bad,C1CC")  # does not parse: file line 6, row 4
    src.write_text("id,SMILES\n" + "\n".join(rows) + "\n")  # the column is found ignoring case
    assert main(["embed", str(src), "--out", str(tmp_path / "e.csv"), "--device", "cpu"]) == 0
    out, err = capsys.readouterr()
    assert "skipped 1 of 13 rows" in err and "line 6 (row 4): 'C1CC'" in err
    assert "12 x 300 embeddings" in out and "autogcl-moses-fullx1" in out
    table = read_csv(tmp_path / "e.csv")
    assert [int(r["index"]) for r in table] == [i for i in range(13) if i != 4]
    assert [r["smiles"] for r in table] == smiles and table[4]["line"] == "7"
    emb = np.array([[float(r[f"emb_{j}"]) for j in range(300)] for r in table])
    expected, _ = encoder.embed(smiles)
    np.testing.assert_allclose(emb, expected, rtol=1e-6, atol=1e-7)
    assert main(["embed", str(src), "--encoder", "autogcl-moses-fullx1", "--out", str(tmp_path / "e.npy"),
                 "--device", "cpu"]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "e.npy"), expected, **BATCHING)


def test_mutag_with_a_fitted_model(data_root, tmp_path, capsys):
    ds = load_tu("MUTAG", data_root)
    model = autogcl.AutoGCL(hidden=16, num_layers=2)
    model.fit(ds, epochs=1, seed=0, progress=False, device="cpu")
    path = model.save(tmp_path / "model.pt")
    argv = ["embed", "MUTAG", "--model", str(path), "--data-root", str(data_root), "--device", "cpu"]
    assert main(argv + ["--out", str(tmp_path / "m.npy")]) == 0
    assert "188 x 32 embeddings of MUTAG" in capsys.readouterr().out
    np.testing.assert_allclose(np.load(tmp_path / "m.npy"), model.embed(ds).numpy(), **BATCHING)
    assert main(argv + ["--out", str(tmp_path / "m.csv")]) == 0
    table = read_csv(tmp_path / "m.csv")
    assert [int(r["label"]) for r in table] == ds._data.y.tolist() and len(table[0]) == 2 + 32


def test_saved_graph_lists(encoder, tmp_path, capsys):
    mols = from_smiles(["CCO", "c1ccccc1O", "CC(=O)Nc1ccccc1"])
    torch.save(list(mols), tmp_path / "mols.pt")
    assert main(["embed", str(tmp_path / "mols.pt"), "--encoder", "autogcl-moses-fullx1", "--out",
                 str(tmp_path / "s.npy"), "--device", "cpu"]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "s.npy"), encoder.embed(mols)[0], **BATCHING)
    assert main(["embed", str(tmp_path / "mols.pt"), "--out", str(tmp_path / "s.npy")]) == 2
    assert "name the model to embed with" in capsys.readouterr().err


def test_bad_requests_are_clear_errors(tmp_path, capsys):
    model = autogcl.AutoGCL(4, hidden=8, num_layers=1)
    path = model.save(tmp_path / "model.pt")
    (tmp_path / "m.csv").write_text("smiles\nCCO\n")
    cases = [
        (["MUTAG", "--out", "x.txt"], "name a .npy or .csv file"),
        (["MUTAG", "--model", str(path), "--encoder", "x"], "not both"),
        ([str(tmp_path / "model.pt"), "--model", str(path)], "a model file (autogcl-model-1), not a dataset"),
        ([str(tmp_path / "m.csv"), "--model", str(path)], "reads graphs, not SMILES"),
        ([str(tmp_path / "m.csv"), "--smiles-col", "mol"], "no SMILES column 'mol'"),
        ([str(tmp_path / "none.csv")], "no such SMILES file"),
        (["MUTAG", "--encoder", "autogcl-moses-fullx1", "--data-root", str(tmp_path)], "not a molecule encoder"),
    ]
    for argv, message in cases:
        assert main(["embed", *argv, "--device", "cpu"]) == 2, argv
        assert message in capsys.readouterr().err, argv
    (tmp_path / "bad.csv").write_text("smiles\nC1CC\nxyz\n")
    assert main(["embed", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "b.npy")]) == 2
    assert "bad.csv" in capsys.readouterr().err and not (tmp_path / "b.npy").exists()


def test_mutag_with_the_model_of_an_unsupervised_run(data_root, tmp_path, capsys):
    """The unit's model.pt stores no feature recipe; embed takes it from config.json beside it."""
    out = tmp_path / "u"
    assert main(["unsupervised", "--dataset", "MUTAG", "--epochs", "1", "--seeds", "1", "--data-root", str(data_root),
                 "--out", str(out), "--no-progress", "--device", "cpu"]) == 0
    unit = out / "MUTAG-autogcl" / "seed0"
    assert main(["embed", "MUTAG", "--model", str(unit / "model.pt"), "--data-root", str(data_root), "--out",
                 str(tmp_path / "u.npy"), "--device", "cpu"]) == 0
    model = autogcl.load(unit / "model.pt")
    np.testing.assert_allclose(np.load(tmp_path / "u.npy"), model.embed(load_tu("MUTAG", data_root, "deg+odeg100")).numpy(),
                               **BATCHING)


def test_the_molecule_encoder_refuses_graphs_of_other_features(encoder, data_root):
    from autogcl.errors import DataError

    with pytest.raises(DataError, match=r"graph 0 is not a featurised molecule.*got x float32 \(17, 109\)"):
        encoder.embed(load_tu("MUTAG", data_root)[:3])
