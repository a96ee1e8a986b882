"""The molecule API: SMILES to graphs with bad entries, the shipped encoder's embeddings,
fine-tuning to a predictor, and save/load."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
import torch

pytest.importorskip("rdkit", reason="the molecule API needs RDKit (pip install rdkit)")

import autogcl  # noqa: E402
from autogcl.errors import DataError  # noqa: E402
from autogcl.models.mol_gin import load_encoder, save_encoder  # noqa: E402
from autogcl.molecules import MoleculeEncoder, MoleculePredictor, from_smiles  # noqa: E402

from .conftest import SHIPPED  # noqa: E402


def test_from_smiles_skips_bad_entries_and_reports_them_by_index(caplog):
    with caplog.at_level(logging.WARNING, logger="autogcl.molecules"):
        mols = from_smiles(["CCO", "bad((", None, "c1ccccc1O", "   ", "[Na+].[Cl-]"])
    assert len(mols) == 3 and mols.num_input == 6
    assert mols.index.tolist() == [0, 3, 5] and mols.smiles == ["CCO", "c1ccccc1O", "[Na+].[Cl-]"]
    assert [(s.index, s.smiles) for s in mols.skipped] == [(1, "bad(("), (2, None), (4, "   ")]
    assert "3 of 6 SMILES skipped" in caplog.text and "SMILES 1 ('bad((')" in caplog.text
    assert mols[0].x.dtype == torch.long and mols[0].x.tolist() == [[5, 0], [5, 0], [7, 0]]  # C, C, O
    assert mols[0].edge_attr.shape == (4, 2)  # two bonds, both directions


def test_from_smiles_is_fatal_only_when_nothing_parses():
    with pytest.raises(DataError, match=r"none of the 2 SMILES could be parsed: SMILES 0 \('C1CC'\)"):
        from_smiles(["C1CC", "xyz"])
    with pytest.raises(DataError, match="empty list"):
        from_smiles([])
    assert len(from_smiles("CCO")) == 1  # one string is one molecule


def test_labels_are_checked_and_follow_the_kept_molecules():
    mols = from_smiles(["CCO", "bad((", "CCN"], y=[[1, float("nan")], [0, 0], [0, 1]])
    assert [g.y.shape for g in mols] == [(1, 2), (1, 2)]
    assert mols[1].y.tolist() == [[0.0, 1.0]] and math.isnan(mols[0].y[0, 1])
    with pytest.raises(DataError, match=r"shape \(2,\).*3 rows"):
        from_smiles(["CCO", "CCN", "CCC"], y=[1, 0])
    assert from_smiles(["CCO", "CCN"], y=[1.5, -2])[1].y.tolist() == [[-2.0]]  # numbers: a regression target
    with pytest.raises(DataError, match=r"y\[1\] = inf \(SMILES 1\) is not a finite number"):
        from_smiles(["CCO", "CCN"], y=[1, float("inf")])
    with pytest.raises(DataError, match=r"y\[0, 1\] = -inf"):
        from_smiles(["CCO", "CCN"], y=[[1, -float("inf")], [0, 0]])


def test_shipped_encoder_loads_by_name_with_the_files_weights(encoder):
    state, arch, meta = load_encoder(SHIPPED)
    assert encoder.out_channels == arch["dim"] == 300 and encoder.meta["molecules_seen"] == meta["molecules_seen"]
    mine = encoder.encoder.state_dict()
    assert set(mine) == set(state) and all(torch.equal(mine[k], state[k]) for k in state)
    assert autogcl.MoleculeEncoder is MoleculeEncoder and "autogcl-moses-fullx1" in autogcl.pretrained_encoders()
    same = autogcl.load(SHIPPED)  # the generic loader hands molecule files to their class
    assert isinstance(same, MoleculeEncoder) and torch.equal(same.encoder.gnn.atoms.atom.weight,
                                                            encoder.encoder.gnn.atoms.atom.weight)


def test_embed_shape_index_and_determinism(encoder, bbbp):
    smiles = bbbp[0][:20] + ["not a molecule"]
    emb, kept = encoder.embed(smiles)
    assert emb.shape == (20, 300) and emb.dtype == np.float32 and kept.tolist() == list(range(20))
    again, _ = encoder.embed(smiles)
    assert np.array_equal(emb, again)
    alone, _ = encoder.embed(smiles[3])  # a molecule's embedding does not depend on its batch
    np.testing.assert_allclose(alone[0], emb[3], rtol=1e-5, atol=1e-5)
    assert not np.allclose(emb[0], emb[1])  # different molecules, different embeddings


def test_finetune_and_predict_multitask_with_missing_labels(encoder, tox21):
    smiles, y, tasks = tox21
    before = {k: v.clone() for k, v in encoder.state_dict().items()}
    pred = encoder.finetune(smiles, y, tasks=tasks, epochs=6, batch_size=16, seed=0, progress=False)
    assert all(torch.equal(v, encoder.state_dict()[k]) for k, v in before.items())  # the encoder is untouched
    assert [r["epoch"] for r in pred.history] == list(range(1, 7))
    assert pred.history[-1]["loss"] < pred.history[0]["loss"]
    probs, kept = pred.predict(smiles + ["bad(("])
    assert probs.shape == (60, 12) and kept.tolist() == list(range(60)) and pred.tasks == tasks
    assert ((probs > 0) & (probs < 1)).all()
    labels = np.asarray(y)
    assert np.isnan(labels).any()  # the slice has missing labels
    auc, scored = autogcl.roc_auc(labels, probs)
    assert scored >= 5 and auc > 0.6  # fitted to its training molecules
    twin = encoder.finetune(smiles, y, tasks=tasks, epochs=6, batch_size=16, seed=0, progress=False)
    assert np.array_equal(twin.predict(smiles)[0], probs)  # a seed fixes a run


def test_finetune_refuses_bad_labels(encoder):
    with pytest.raises(DataError, match="every label is missing"):
        encoder.finetune(["CCO", "CCN"], [float("nan")] * 2, epochs=1, progress=False)
    with pytest.raises(DataError, match="2 task names for 1 label"):
        encoder.finetune(["CCO", "CCN"], [0, 1], tasks=["a", "b"], epochs=1, progress=False)


def test_predictor_save_load_round_trip_is_bit_exact(encoder, bbbp, tmp_path):
    smiles, y = bbbp
    pred = encoder.finetune(smiles, y, tasks=["p_np"], epochs=1, seed=1, progress=False)
    probs, _ = pred.predict(smiles)
    path = pred.save(tmp_path / "predictor.pt")
    back = MoleculePredictor.load(path)
    assert back.tasks == ["p_np"] and back.history == pred.history
    a, b = pred.model.state_dict(), back.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert np.array_equal(back.predict(smiles)[0], probs)
    assert isinstance(autogcl.load(path), MoleculePredictor)


def test_files_of_another_kind_or_architecture_are_clear_errors(encoder, tmp_path):
    with pytest.raises(DataError, match="a molecule encoder.*not a fine-tuned molecule predictor"):
        MoleculePredictor.load(SHIPPED)
    pred = MoleculePredictor(2, dim=8, num_layers=1)
    with pytest.raises(DataError, match="a fine-tuned molecule predictor.*not a molecule encoder"):
        MoleculeEncoder.load(pred.save(tmp_path / "p.pt"))
    model = autogcl.AutoGCL(4, hidden=8, num_layers=1)
    with pytest.raises(DataError, match="AutoGCL/GraphCL model.*autogcl.load.*not a molecule encoder"):
        MoleculeEncoder.load(model.save(tmp_path / "tu.pt"))
    small = MoleculeEncoder(dim=8, num_layers=1)
    wrong = tmp_path / "wrong.pt"  # weights of a 1 x 8 GIN declared as the shipped 5 x 300 one
    save_encoder(small.encoder, wrong, {})
    blob = torch.load(wrong, weights_only=True)
    blob["encoder"] = encoder.config
    torch.save(blob, wrong)
    with pytest.raises(DataError, match="(do|does) not fit the molecule GIN"):
        MoleculeEncoder.load(wrong)
    with pytest.raises(DataError, match="no such encoder file, nor a shipped encoder's name.*autogcl-moses-fullx1"):
        MoleculeEncoder.load("autogcl-moses-huge")


def test_encoder_save_round_trip(encoder, tmp_path):
    path = encoder.save(tmp_path / "enc.pt")
    back = MoleculeEncoder.load(path)
    smiles = ["CCO", "c1ccccc1O"]
    assert np.array_equal(back.embed(smiles)[0], encoder.embed(smiles)[0]) and back.meta == encoder.meta
