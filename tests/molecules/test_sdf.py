"""SDF input: RDKit's SDMolSupplier records as SMILES, property fields as labels, an
unreadable record named by its number; the same SDF file works wherever a SMILES file does."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from autogcl.errors import DataError

pytest.importorskip("rdkit")

SMILES = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "CCN(CC)CC", "OCC(O)CO", "c1ccncc1", "CC(C)O", "CCCCCC"]


def write_sdf(path, smiles, fields, bad_at=()):
    """An SDF file of ``smiles`` with property ``fields`` ({name: values}); the records at
    ``bad_at`` (0-based) get an atom RDKit does not know, so they cannot be read."""
    from rdkit import Chem

    blocks = []
    for i, s in enumerate(smiles):
        mol = Chem.MolFromSmiles(s)
        block = Chem.MolToMolBlock(mol)
        if i in bad_at:
            lines = block.splitlines()
            lines[4] = lines[4][:31] + "Qq " + lines[4][34:]  # the first atom's symbol
            block = "\n".join(lines) + "\n"
        props = "".join(f">  <{k}>  ({i + 1})\n{v[i]}\n\n" for k, v in fields.items())
        blocks.append(block + props + "$$$$\n")
    path.write_text("".join(blocks))
    return path


def test_records_become_smiles_and_fields_labels(tmp_path):
    from autogcl.data.molecules import read_sdf

    sol = [-0.1 * i for i in range(len(SMILES))]
    path = write_sdf(tmp_path / "m.sdf", SMILES, {"SOL": sol, "NAME": [f"mol{i}" for i in range(len(SMILES))]})
    smiles, records, y, fields = read_sdf(path)
    assert fields == ["SOL"]  # the text field NAME is not a label
    assert records == list(range(1, len(SMILES) + 1))
    from rdkit import Chem

    assert smiles == [Chem.MolToSmiles(Chem.MolFromSmiles(s)) for s in SMILES]
    np.testing.assert_allclose(y[:, 0], sol, rtol=0, atol=1e-6)  # float32 labels


def test_an_unreadable_record_is_named_by_its_number_and_keeps_its_place(tmp_path, caplog):
    from autogcl.data.molecules import read_sdf

    path = write_sdf(tmp_path / "m.sdf", SMILES, {"SOL": list(range(len(SMILES)))}, bad_at=(2,))
    with caplog.at_level(logging.WARNING):
        smiles, records, y, _ = read_sdf(path, ["SOL"])
    assert smiles[2] == "" and np.isnan(y[2, 0]) and len(smiles) == len(SMILES)
    assert y[3, 0] == 3
    assert any("record 3 cannot be read" in r.getMessage() for r in caplog.records)


def test_a_label_that_is_not_a_number_names_record_and_field(tmp_path):
    from autogcl.data.molecules import read_sdf

    vals = list(range(len(SMILES)))
    vals[4] = "high"
    path = write_sdf(tmp_path / "m.sdf", SMILES, {"SOL": vals})
    with pytest.raises(DataError, match=r"record 5: label 'high' in field 'SOL' is not a number"):
        read_sdf(path, ["SOL"])
    with pytest.raises(DataError, match=r"no property field\(s\) \['pIC50'\]"):
        read_sdf(path, ["pIC50"])


def test_sdf_works_where_a_smiles_file_does(tmp_path, encoder):
    """embed, finetune (labels named by field), predict, score, load_molecule_csv and the
    CLI's embed all read the same SDF file, and give what the same SMILES give."""
    import autogcl
    from autogcl.cli import main

    sol = np.linspace(-3, 1, len(SMILES))
    path = write_sdf(tmp_path / "m.sdf", SMILES, {"SOL": sol}, bad_at=(5,))
    kept = [s for i, s in enumerate(SMILES) if i != 5]
    e_sdf, idx = encoder.embed(path)
    e_smi, _ = encoder.embed(kept)
    assert idx.tolist() == [0, 1, 2, 3, 4, 6, 7]
    np.testing.assert_allclose(e_sdf, e_smi, rtol=0, atol=1e-5)
    pred = encoder.finetune(str(path), y="SOL", epochs=1, batch_size=4, device="cpu")
    assert pred.tasks == ["SOL"] and pred.task == "regression"
    v_sdf, _ = pred.predict(path)
    v_smi, _ = pred.predict(kept)
    np.testing.assert_allclose(v_sdf, v_smi, rtol=0, atol=1e-5)
    s = pred.score(path, "SOL")
    assert s["tasks"] == 1 and np.isfinite(s["rmse"])
    ds = autogcl.load_molecule_csv(path, label_cols=["SOL"])
    assert len(ds) == 7 and ds.meta["rows"] == [1, 2, 3, 4, 5, 7, 8] and ds.meta["tasks"] == ["SOL"]
    out = tmp_path / "emb.csv"
    assert main(["embed", str(path), "--out", str(out), "--no-progress"]) == 0
    rows = out.read_text().splitlines()
    assert len(rows) == 8 and rows[1].startswith("0,1,")  # index 0, record 1
