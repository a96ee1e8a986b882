"""The one fine-tuning recipe (``MoleculeEncoder.finetune``): it learns (eval mode included),
the command line's ``transfer finetune`` is the same calls, and numeric targets are regression
(standardised targets, predictions in the targets' own units, saved with the model)."""

from __future__ import annotations

import csv
import json
import logging
import math
import sys

import numpy as np
import pytest
import torch

pytest.importorskip("rdkit", reason="fine-tuning on molecules needs RDKit (pip install rdkit)")

from autogcl.cli import main  # noqa: E402
from autogcl.data.moleculenet import load_molecule_csv  # noqa: E402
from autogcl.errors import ConfigError, DataError  # noqa: E402
from autogcl.molecules import MoleculeEncoder, MoleculePredictor  # noqa: E402

from .conftest import SHIPPED, read_slice  # noqa: E402


def logp(smiles: list[str]) -> list[float]:
    """RDKit's Crippen logP of each SMILES: a real numeric property every molecule has."""
    from rdkit import Chem
    from rdkit.Chem import Crippen

    return [Crippen.MolLogP(Chem.MolFromSmiles(s)) for s in smiles]


def heavy_atoms(smiles: list[str]) -> list[int]:
    from rdkit import Chem

    return [Chem.MolFromSmiles(s).GetNumHeavyAtoms() for s in smiles]


@pytest.fixture(scope="module")
def slice_csv(data_root, tmp_path_factory):
    """Every 10th BBBP molecule (205; both classes in every part of the scaffold split), with
    its label and its Crippen logP as a numeric column."""
    path = data_root / "moleculenet" / "bbbp.csv"
    n = sum(1 for _ in open(path, encoding="utf-8")) - 1
    smiles, y = read_slice(path, "smiles", ["p_np"], list(range(0, n, 10)))
    keep = [i for i, s in enumerate(smiles) if _parses(s)]
    smiles, y = [smiles[i] for i in keep], [y[i] for i in keep]
    out = tmp_path_factory.mktemp("mols") / "slice.csv"
    with open(out, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["smiles", "p_np", "logp"])
        w.writerows([s, int(v[0]), f"{p:.4f}"] for s, v, p in zip(smiles, y, logp(smiles)))
    return out


def _parses(s: str) -> bool:
    from rdkit import Chem

    return Chem.MolFromSmiles(s) is not None


def settle_batchnorm(model, batch) -> None:
    """Set every BatchNorm's running statistics to those of ``batch`` (one train-mode pass
    with a cumulative average and no dropout): eval mode then normalises as train mode does."""
    dropout = model.encoder.gnn.dropout
    model.encoder.gnn.dropout = 0.0
    for bn in model.encoder.gnn.bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.train()
    with torch.no_grad():
        out = model(batch)
    model.encoder.gnn.dropout = dropout
    return out


# ------------------------------------------------------------------ the estimator learns


def test_predictor_learns_its_training_molecules_in_eval_mode(encoder, bbbp):
    smiles, y = bbbp  # 80 molecules, both classes
    pred = encoder.finetune(smiles, y, epochs=25, batch_size=16, lr=0.001, dropout=0.1, seed=0, progress=False)
    assert pred.history[-1]["loss"] < 0.05, [r["loss"] for r in pred.history]  # near zero
    probs, kept = pred.predict(smiles)  # eval mode: running BatchNorm statistics, no dropout
    labels = np.asarray(y)[kept, 0]
    accuracy = float(((probs[:, 0] > 0.5) == (labels == 1)).mean())
    assert accuracy >= 0.95, f"eval-mode accuracy {accuracy:.3f} on the molecules it was fitted to"
    assert pred.score(smiles, y)["roc_auc"] >= 0.99


def test_predict_is_the_train_mode_forward_once_batchnorm_has_settled(encoder, bbbp):
    from autogcl.molecules import from_smiles
    from torch_geometric.data import Batch

    smiles, y = bbbp
    pred = encoder.finetune(smiles, y, epochs=3, batch_size=16, seed=0, progress=False)
    batch = Batch.from_data_list(from_smiles(smiles).graphs)
    train_mode = torch.sigmoid(settle_batchnorm(pred.model, batch)).numpy()
    probs, _ = pred.predict(smiles)
    # eval mode normalises by the unbiased variance of the same nodes, train mode by the biased one
    np.testing.assert_allclose(probs, train_mode, atol=2e-3)


# ------------------------------------------------------------------ one recipe: CLI == estimator


def test_transfer_finetune_is_the_estimator_calls_of_the_docs(slice_csv, tmp_path, monkeypatch):
    """``autogcl transfer finetune`` gives the numbers of ``MoleculeEncoder.finetune(dataset,
    preset="paper", ...)``, epoch for epoch, and keeps the same model; ``--checkpoint`` takes the
    shipped encoder's name, as ``MoleculeEncoder.load`` does."""
    out = tmp_path / "ft"
    monkeypatch.chdir(tmp_path)  # no file of that name here: the shipped one
    assert main(["transfer", "finetune", "--csv", str(slice_csv), "--label-cols", "p_np", "--checkpoint",
                 "autogcl-moses-fullx1", "--epochs", "2", "--seeds", "1", "--out", str(out), "--no-progress",
                 "--workers", "1"]) == 0
    unit = out / "autogcl-moses-fullx1" / "slice" / "seed0"
    with open(unit / "metrics.csv", encoding="utf-8") as f:
        cli_rows = list(csv.DictReader(f))

    dataset = load_molecule_csv(slice_csv, "smiles", ["p_np"], workers=1)  # docs/api.md's calls
    encoder = MoleculeEncoder.load("autogcl-moses-fullx1")
    pred = encoder.finetune(dataset, preset="paper", epochs=2, seed=0, progress=False)
    assert len(cli_rows) == len(pred.history) == 2
    for cli, ours in zip(cli_rows, pred.history):
        for key in ("loss", "val_auc", "test_auc"):
            assert float(cli[key]) == pytest.approx(ours[key], rel=1e-12, abs=0), key  # the same computation
    saved = MoleculePredictor.load(unit / "model.pt")
    assert saved.selected_epoch == pred.selected_epoch
    a, b = saved.model.state_dict(), pred.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    split = json.loads((unit.parent / "split.json").read_text())
    assert pred.hparams["split_sizes"] == {k: len(split[k]) for k in ("train", "valid", "test")}


def test_checkpoint_names_a_file_or_a_shipped_encoder(tmp_path, monkeypatch):
    from autogcl.protocols.configs import FinetuneConfig, checkpoint_path

    monkeypatch.chdir(tmp_path)
    # a shipped encoder is recorded by its name, however it is given (so its runs resume from any checkout)
    for name in ("autogcl-moses-fullx1", "autogcl-moses-fullx1.pt", str(SHIPPED), str(SHIPPED.resolve())):
        assert checkpoint_path(name) == "autogcl-moses-fullx1", name
    assert FinetuneConfig(checkpoint=checkpoint_path("autogcl-moses-fullx1")).results_tag() == "autogcl-moses-fullx1"
    assert checkpoint_path("nope") == str(tmp_path / "nope")  # neither: a path, refused when it is read
    (tmp_path / "autogcl-moses-fullx1").write_bytes(b"")  # a file of that name here comes first
    assert checkpoint_path("autogcl-moses-fullx1") == str(tmp_path / "autogcl-moses-fullx1")
    (tmp_path / "pretrained").mkdir()  # a copy of it elsewhere (another checkout's file) is the same encoder
    copy = tmp_path / "pretrained" / "autogcl-moses-fullx1.pt"
    copy.write_bytes(SHIPPED.read_bytes())
    assert checkpoint_path("pretrained/autogcl-moses-fullx1.pt") == "autogcl-moses-fullx1"
    copy.write_bytes(SHIPPED.read_bytes()[:-1] + b"x")  # other weights under its name: a file of its own, its path
    assert checkpoint_path("pretrained/autogcl-moses-fullx1.pt") == str(copy)


def test_the_paper_preset_is_the_protocols_defaults():
    from autogcl.choices import FINETUNE_PRESETS
    from autogcl.protocols.transfer import FinetuneConfig

    from autogcl.protocols.transfer import resolve_recipe

    cfg, paper = resolve_recipe(FinetuneConfig(), "classification"), FINETUNE_PRESETS["paper"]
    assert {k: getattr(cfg, k) for k in ("epochs", "batch_size", "lr", "weight_decay", "dropout", "frac")} == \
        {k: paper[k] for k in ("epochs", "batch_size", "lr", "weight_decay", "dropout", "frac")}
    # a MoleculeNet set's config stores what the runs before the readout and schedule options stored
    assert "readout" not in cfg.to_dict() and "lr_schedule" not in cfg.to_dict()
    assert paper["split"] == "scaffold" and paper["selection"] == "val"


def test_recipe_options_are_checked(encoder):
    smiles, y = ["CCO", "CCN", "CCC", "CCCl"], [0, 1, 0, 1]
    for kw, msg in [({"preset": "nature"}, "unknown preset"), ({"selection": "best"}, "unknown selection"),
                    ({"split": "kfold"}, "unknown split"), ({"task": "multiclass"}, "unknown task"),
                    ({"batch_size": 1}, "batch_size must be at least 2"),
                    ({"selection": "val"}, "needs a validation part"), ({"frac": (0.5, 0.5)}, "frac must be three")]:
        with pytest.raises(ConfigError, match=msg):
            encoder.finetune(smiles, y, epochs=1, progress=False, **kw)
    with pytest.raises(ConfigError, match="needs the molecules' SMILES"):
        from autogcl.molecules import from_smiles

        graphs = list(from_smiles(smiles, y).graphs)
        encoder.finetune(graphs, epochs=1, split="scaffold", progress=False)


def test_from_scratch_draws_the_weights_from_the_seed(bbbp):
    smiles, y = bbbp
    small = MoleculeEncoder(dim=8, num_layers=1)
    a = small.finetune(smiles, y, epochs=1, from_scratch=True, seed=3, progress=False)
    b = MoleculeEncoder(dim=8, num_layers=1).finetune(smiles, y, epochs=1, from_scratch=True, seed=3, progress=False)
    assert all(torch.equal(v, b.model.state_dict()[k]) for k, v in a.model.state_dict().items())
    c = small.finetune(smiles, y, epochs=1, seed=3, progress=False)  # from this encoder's weights instead
    assert not torch.equal(c.model.encoder.gnn.atoms.atom.weight, a.model.encoder.gnn.atoms.atom.weight)


# ------------------------------------------------------------------ regression


def test_regression_is_inferred_and_standardised_and_predicts_in_original_units(bbbp, caplog):
    smiles, _ = bbbp
    # Crippen logP per heavy atom: a mean of atom contributions, which a mean-pooled GIN can
    # learn; far from 0 and wide, where an unscaled MSE would diverge
    target = [1000.0 + 50.0 * v / n for v, n in zip(logp(smiles), heavy_atoms(smiles))]
    enc = MoleculeEncoder(dim=32, num_layers=2)
    with caplog.at_level(logging.INFO, logger="autogcl.molecules"):
        pred = enc.finetune(smiles, target, epochs=40, batch_size=16, dropout=0.0, lr=0.003, seed=0, progress=False)
    assert "fine-tuning for regression" in caplog.text and pred.task == "regression"
    t = np.asarray(target)
    assert pred.scaling["mean"][0] == pytest.approx(t.mean(), rel=1e-9)
    assert pred.scaling["std"][0] == pytest.approx(t.std(), rel=1e-9)
    values, kept = pred.predict(smiles)
    assert values.shape == (80, 1) and abs(float(values.mean()) - t.mean()) < 0.3 * t.std()  # original units
    score = pred.score(smiles, target)
    assert score["r2"] > 0.9, score  # a small learnable target, fitted on its training molecules
    assert score["rmse"] == pytest.approx(float(np.sqrt(np.mean((values[:, 0] - t[kept]) ** 2))), rel=1e-6)


def test_regression_round_trips_through_save_and_load(bbbp, tmp_path):
    smiles, _ = bbbp
    target = [[v, -2.0 * v + 7.0] for v in logp(smiles)]  # two tasks
    target[3][1] = float("nan")  # a missing label
    pred = MoleculeEncoder(dim=8, num_layers=1).finetune(smiles, target, tasks=["logp", "other"], epochs=2,
                                                         task="regression", seed=1, progress=False)
    values, _ = pred.predict(smiles)
    back = MoleculePredictor.load(pred.save(tmp_path / "reg.pt"))
    assert back.task == "regression" and back.scaling == pred.scaling and back.tasks == ["logp", "other"]
    assert np.array_equal(back.predict(smiles)[0], values)
    with torch.no_grad():  # the raw outputs are standardised values: predict maps them back
        raw = pred.model.eval()(next(iter(_batches(smiles))))
    assert raw.shape == (80, 2)
    std, mean = torch.tensor(pred.scaling["std"]), torch.tensor(pred.scaling["mean"])
    np.testing.assert_allclose(values, (raw * std + mean).numpy(), rtol=1e-5, atol=1e-5)


def test_the_readout_is_an_option_of_the_recipe_and_round_trips(bbbp, tmp_path):
    smiles, _ = bbbp
    atoms = heavy_atoms(smiles)
    pred = MoleculeEncoder(dim=8, num_layers=1).finetune(smiles, atoms, epochs=1, readout="sum", seed=0,
                                                         progress=False)
    assert pred.hparams["readout"] == "sum" and pred.model.encoder.readout == "sum"
    back = MoleculePredictor.load(pred.save(tmp_path / "sum.pt"))
    assert back.model.encoder.readout == "sum"
    assert np.array_equal(back.predict(smiles)[0], pred.predict(smiles)[0])
    default = MoleculeEncoder(dim=8, num_layers=1).finetune(smiles, atoms, epochs=1, seed=0, progress=False)
    assert default.model.encoder.readout == "mean"  # the pre-trained encoders' pooling
    with pytest.raises(ConfigError, match="unknown readout 'max'; choose from mean, sum"):
        MoleculeEncoder(dim=8, num_layers=1).finetune(smiles, atoms, epochs=1, readout="max", progress=False)


def test_the_scaled_sum_readout_keeps_the_training_atom_count_and_round_trips(bbbp, tmp_path):
    smiles, _ = bbbp
    atoms = heavy_atoms(smiles)
    split = {"train": list(range(0, 80, 2)), "valid": list(range(1, 80, 2))}
    pred = MoleculeEncoder(dim=8, num_layers=1).finetune(smiles, atoms, epochs=1, readout="scaled_sum", split=split,
                                                         seed=0, progress=False)
    # the divisor: the mean atom count of the training part (hydrogens are not atoms of the graph)
    train_atoms = np.mean([atoms[i] for i in split["train"]])
    assert pred.hparams["readout_scale"] == pytest.approx(train_atoms, rel=1e-12)
    assert pred.model.encoder.readout_scale == pred.hparams["readout_scale"]
    back = MoleculePredictor.load(pred.save(tmp_path / "scaled.pt"))
    assert back.model.encoder.readout == "scaled_sum" and back.hparams["readout_scale"] == pred.hparams["readout_scale"]
    assert np.array_equal(back.predict(smiles)[0], pred.predict(smiles)[0])


def test_a_size_additive_target_is_learned_with_the_scaled_sum_and_not_with_the_mean(bbbp):
    """Every molecule X and its doubled copy X.X (two disconnected copies): the mean readout
    gives both the same embedding, so it cannot tell their atom counts (n and 2n) apart; the
    scaled sum can, also on held-out molecules."""
    from rdkit import Chem

    base = [s for s in bbbp[0] if "." not in s]

    def doubled(part):
        mols = part + [f"{s}.{s}" for s in part]
        return mols, heavy_atoms(mols)

    train, held_out = doubled(base[::2]), doubled(base[1::2])
    assert Chem.MolFromSmiles(train[0][len(base[::2])]).GetNumHeavyAtoms() == 2 * train[1][0]
    scores = {}
    for readout in ("scaled_sum", "mean"):
        pred = MoleculeEncoder(dim=16, num_layers=2).finetune(*train, epochs=40, batch_size=16, dropout=0.0, lr=0.01,
                                                              lr_schedule="constant", readout=readout, seed=0,
                                                              progress=False)
        scores[readout] = pred.score(*held_out)["r2"]
        if readout == "mean":  # X and X.X: one prediction (to float rounding)
            values = pred.predict(held_out[0])[0][:, 0]
            half = len(values) // 2
            np.testing.assert_allclose(values[:half], values[half:], rtol=1e-4, atol=1e-4)
    assert scores["scaled_sum"] > 0.7 and scores["mean"] < 0.3, scores


def test_a_cosine_learning_rate_and_settled_batchnorm_statistics(bbbp, monkeypatch):
    from autogcl.data.batching import GraphLoader, GraphStore
    from autogcl.models.norm import settle_batchnorm
    from autogcl.molecules import from_smiles
    from autogcl.train.finetune import FinetuneStrategy

    smiles, _ = bbbp
    rates, train_epoch = [], FinetuneStrategy.train_epoch

    def recorded(self, data, epoch):
        out = train_epoch(self, data, epoch)
        rates.append(self.opt.param_groups[0]["lr"])
        return out

    monkeypatch.setattr(FinetuneStrategy, "train_epoch", recorded)
    pred = MoleculeEncoder(dim=8, num_layers=2).finetune(smiles, logp(smiles), epochs=4, lr=0.01, lr_schedule="cosine",
                                                         bn_stats="settled", seed=0, progress=False)
    assert rates == pytest.approx([0.01, 0.01 * (1 + 0.5 ** 0.5) / 2, 0.005, 0.01 * (1 - 0.5 ** 0.5) / 2], rel=1e-12)
    assert pred.hparams["lr_schedule"] == "cosine" and pred.hparams["bn_stats"] == "settled"
    # the BatchNorms hold the statistics of the final weights over the training molecules, in
    # batches of 256 (a later layer reads the earlier ones normalised per batch: batches matter)
    kept = {k: v.clone() for k, v in pred.model.state_dict().items() if "running" in k}
    store = GraphStore.from_dataset(from_smiles(smiles).graphs)
    settle_batchnorm(pred.model, GraphLoader(store, batch_size=256, generator=torch.Generator()))
    assert all(torch.equal(v, kept[k]) for k, v in pred.model.state_dict().items() if "running" in k)
    running = MoleculeEncoder(dim=8, num_layers=2).finetune(smiles, logp(smiles), epochs=4, lr=0.01, seed=0,
                                                            lr_schedule="constant", progress=False)
    assert running.hparams["lr_schedule"] == "constant" and running.hparams["bn_stats"] == "running"
    assert rates[4:] == [0.01] * 4
    assert not torch.allclose(running.model.encoder.gnn.bns[0].running_mean, kept["encoder.gnn.bns.0.running_mean"])
    for key, bad in (("lr_schedule", "step"), ("bn_stats", "batch")):
        with pytest.raises(ConfigError, match=f"unknown {key} '{bad}'; choose from"):
            MoleculeEncoder(dim=8, num_layers=1).finetune(smiles, logp(smiles), epochs=1, progress=False, **{key: bad})


def test_a_regression_has_defaults_of_its_own_and_classification_keeps_its_own(bbbp):
    from autogcl.molecules import FINETUNE_DEFAULTS, REGRESSION_DEFAULTS

    smiles, y = bbbp
    small = MoleculeEncoder(dim=8, num_layers=1)
    reg = small.finetune(smiles, logp(smiles), epochs=1, seed=0, progress=False)
    assert (reg.task, reg.hparams["dropout"], reg.hparams["lr_schedule"]) == ("regression", 0.0, "cosine")
    assert REGRESSION_DEFAULTS == {"dropout": 0.0, "lr_schedule": "cosine"}
    cls = small.finetune(smiles, y, epochs=1, seed=0, progress=False)
    assert (cls.task, cls.hparams["dropout"], cls.hparams["lr_schedule"]) == ("classification", 0.5, "constant")
    assert FINETUNE_DEFAULTS["dropout"] == 0.5 and FINETUNE_DEFAULTS["lr_schedule"] == "constant"
    given = small.finetune(smiles, logp(smiles), epochs=1, dropout=0.2, lr_schedule="constant", progress=False)
    assert (given.hparams["dropout"], given.hparams["lr_schedule"]) == (0.2, "constant")  # given values win
    paper = small.finetune(smiles, logp(smiles), preset="paper", epochs=1, split="random", progress=False)
    assert paper.hparams["dropout"] == 0.5 and paper.hparams["split"] == "random"  # and so do a preset's


def _batches(smiles):
    from torch_geometric.loader import DataLoader

    from autogcl.molecules import from_smiles

    return DataLoader(from_smiles(smiles).graphs, batch_size=len(smiles))


def test_standardisation_uses_the_training_part_only():
    from autogcl.molecules import _scaling

    y = np.array([[1.0, np.nan], [3.0, 5.0], [5.0, 5.0], [np.nan, np.nan]])
    s = _scaling(y)
    assert s["mean"] == [3.0, 5.0] and s["std"][0] == pytest.approx(np.std([1, 3, 5])) and s["std"][1] == 1.0
    none = _scaling(np.full((3, 1), np.nan))  # a task without any label: identity scaling
    assert none == {"mean": [0.0], "std": [1.0]}


def test_classification_refuses_numbers_and_names_the_row(encoder):
    with pytest.raises(DataError, match=r"row 2: label 2.5 .*not 0, 1 or missing.*task='regression'"):
        encoder.finetune(["CCO", "bad((", "CCN"], [0, 1, 2.5], task="classification", epochs=1, progress=False)
    with pytest.raises(DataError, match="not a finite number"):
        encoder.finetune(["CCO", "CCN"], [0, float("inf")], epochs=1, progress=False)


def test_integer_labels_other_than_0_1_are_regression_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="autogcl.molecules"):
        pred = MoleculeEncoder(dim=8, num_layers=1).finetune(["CCO", "CCN", "CCC", "CCCl"], [1, 2, 1, 2], epochs=1,
                                                             progress=False)
    assert pred.task == "regression" and "integers other than 0/1" in caplog.text


def test_cli_regression_on_a_numeric_column(slice_csv, tmp_path, capsys):
    out = tmp_path / "reg"
    assert main(["transfer", "finetune", "--csv", str(slice_csv), "--label-cols", "logp", "--epochs", "2",
                 "--seeds", "1", "--out", str(out), "--no-progress", "--workers", "1", "--select", "test_min"]) == 0
    printed = capsys.readouterr().out
    assert "| slice | no_pretrain | 1 | 2 |" in printed and "test_min RMSE" in printed
    ddir = out / "no_pretrain" / "slice"
    summary = json.loads((ddir / "summary.json").read_text())
    assert summary["task"] == "regression" and set(summary) >= {"val", "test_min"} and "test_max" not in summary
    res = json.loads((ddir / "seed0" / "result.json").read_text())
    assert res["task"] == "regression" and res["rmse"] == res["selections"]["test_min"]["rmse"] > 0
    assert res["selections"]["val"]["criterion"] == "validation RMSE (lowest)"
    with open(ddir / "seed0" / "metrics.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {"val_rmse", "val_mae", "val_r2", "test_rmse", "test_mae", "test_r2"} <= set(rows[0])
    model = MoleculePredictor.load(ddir / "seed0" / "model.pt")
    with open(ddir / "seed0" / "predictions.csv", encoding="utf-8") as f:
        preds = list(csv.DictReader(f))
    values, _ = model.predict([r["smiles"] for r in preds])  # in logP units, as the file has them
    np.testing.assert_allclose(values[:, 0], [float(r["pred_logp"]) for r in preds], rtol=1e-4, atol=1e-4)
    assert main(["report", str(out)]) == 0
    assert "test_min RMSE" in (out / "report.md").read_text()


def test_cli_selection_must_be_the_tasks(slice_csv, tmp_path, capsys):
    assert main(["transfer", "finetune", "--csv", str(slice_csv), "--label-cols", "logp", "--epochs", "1",
                 "--seeds", "1", "--out", str(tmp_path), "--no-progress", "--workers", "1", "--select",
                 "test_max"]) == 2
    assert "not a selection of regression" in capsys.readouterr().err
    assert main(["transfer", "finetune", "--csv", str(slice_csv), "--label-cols", "logp", "--task",
                 "classification", "--epochs", "1", "--seeds", "1", "--out", str(tmp_path), "--no-progress",
                 "--workers", "1"]) == 2
    assert "column 'logp' is not 0, 1 or missing" in capsys.readouterr().err
    assert main(["transfer", "finetune", "--csv", str(slice_csv), "--label-cols", "logp", "--grid", "lr=0.001,0.01",
                 "--epochs", "1", "--seeds", "1", "--out", str(tmp_path / "g"), "--no-progress", "--workers", "1"]) == 2
    assert "--grid picks a configuration by the ROC-AUC" in capsys.readouterr().err


# ------------------------------------------------------------------ foot-guns


def test_rdkit_reason_for_a_bad_smiles_is_passed_on(caplog):
    from autogcl.molecules import from_smiles

    with caplog.at_level(logging.WARNING, logger="autogcl.molecules"):
        mols = from_smiles(["CCO", "C1CC", "N(C)(C)(C)(C)C", "c1cccc1"])
    reasons = [s.reason for s in mols.skipped]
    assert "unclosed ring" in reasons[0]
    assert "valence" in reasons[1].lower() and "kekulize" in reasons[2].lower()
    assert "unclosed ring" in caplog.text
    # a syntax error: the reason and where, one line, not the colon that introduces RDKit's picture
    (bad,) = from_smiles(["CCO", "CC(C"]).skipped
    assert bad.reason.endswith("extra open parentheses while parsing: CC(C; check for mistakes around position 3")


def test_a_csv_path_is_read_not_parsed_as_a_smiles(encoder, slice_csv, tmp_path):
    emb, kept = encoder.embed(str(slice_csv))
    with open(slice_csv, encoding="utf-8") as f:
        n = sum(1 for _ in f) - 1
    assert emb.shape == (n, 300) and kept.tolist() == list(range(n))
    first, _ = encoder.embed([next(csv.DictReader(open(slice_csv, encoding="utf-8")))["smiles"]])
    np.testing.assert_allclose(emb[0], first[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(DataError, match=r"missing\.csv: no such file \(a path of a SMILES or SDF file"):
        encoder.embed(str(tmp_path / "missing.csv"))
    pred = MoleculePredictor(1, dim=8, num_layers=1)
    assert pred.predict(slice_csv)[0].shape == (n, 1)  # a Path too


# ------------------------------------------------------------------ the docs' regression run


def sizes(run: dict) -> str:
    return " / ".join(str(run["split_sizes"][k]) for k in ("train", "valid", "test"))


def test_regression_logp_script_writes_the_record_the_docs_show(data_root, tmp_path):
    import importlib.util

    from tests.conftest import REPO

    sys.path.insert(0, str(REPO / "scripts" / "docs"))  # scripts/docs/docsgen: the documentation's generators
    from docsgen.tables import regression_block

    lines = (data_root / "moleculenet" / "bbbp.csv").read_text(encoding="utf-8").splitlines()
    (tmp_path / "data" / "moleculenet").mkdir(parents=True)
    (tmp_path / "data" / "moleculenet" / "tiny.csv").write_text("\n".join(lines[:1] + lines[1::25]) + "\n")
    spec = importlib.util.spec_from_file_location("regression_logp", REPO / "scripts" / "studies" / "regression_logp.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "docs" / "results" / "regression_logp.json"
    assert script.main(["--data-root", str(tmp_path / "data"), "--dataset", "tiny", "--epochs", "1",
                        "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["target"] == "Crippen MolLogP" and record["epochs"] == 1 and record["selected_epoch"] == 1
    assert sum(record["split_sizes"].values()) == record["molecules"] and set(record["test"]) == {"rmse", "mae", "r2"}
    assert record["test"]["r2"] == record["history"][0]["test_r2"]
    scratch = record["from_scratch"]  # the same recipe, seed and split from random weights
    assert scratch["from_scratch"] and scratch["split_sizes"] == record["split_sizes"]
    assert scratch["test"]["r2"] != record["test"]["r2"] and "random_split" not in record
    assert record["runtime"]["device"] == "cpu" and record["torch_threads"] == 1 and record["code_commit"]
    block = regression_block(tmp_path)
    assert f"{record['test']['r2']:.3f}" in block and "regression_logp.json" in block
    assert f"| random weights (no pre-training) | {sizes(scratch)} |" in block


def test_regression_pilots_keep_no_test_score_and_the_docs_list_them(tmp_path):
    from tests.conftest import REPO

    sys.path.insert(0, str(REPO / "scripts" / "docs"))  # docsgen
    sys.path.insert(0, str(REPO / "scripts" / "studies"))
    import regression_pilots
    from docsgen.tables import regression_pilots as rows_of

    pilot = {"name": "p", "epochs": 2, "settings": {"readout": "scaled_sum", "dropout": 0.0, "lr": 0.001,
                                                    "lr_schedule": "cosine", "bn_stats": "running"},
             "history": [{"epoch": 1, "loss": 0.5, "val_r2": 0.25, "val_rmse": 2.0, "test_r2": 0.9},
                         {"epoch": 2, "loss": 0.25, "val_r2": 0.5, "val_rmse": 1.5, "test_r2": 0.1}]}
    (tmp_path / "p.json").write_text(json.dumps(pilot))
    out = tmp_path / "docs" / "results" / "regression_logp_pilots.json"
    regression_pilots.collect([str(tmp_path / "p.json")], out)
    kept = json.loads(out.read_text())["pilots"][0]["history"]
    assert all("test_r2" not in r for r in kept) and kept[1]["val_r2"] == 0.5
    lines = rows_of(tmp_path)
    assert "| scaled_sum | 0.0 | 0.001 | cosine | running | 2 | 0.500 (2) | 0.375 | 0.250 |" in lines
    assert rows_of(tmp_path / "nothing") == []


def test_a_validation_part_of_one_class_says_the_last_epoch_is_kept(bbbp, caplog):
    """``selection="val"`` with no validation ROC-AUC in any epoch (every validation label of
    one class): the last epoch's model is kept, and the log says so; a validation part of both
    classes selects by it without a word."""
    smiles = bbbp[0][:30]
    split = {"train": list(range(20)), "valid": list(range(20, 25)), "test": list(range(25, 30))}
    for valid_labels, warned in (([0, 0, 0, 0, 0], True), ([0, 1, 0, 1, 0], False)):
        y = [k % 2 for k in range(20)] + valid_labels + [0, 1, 0, 1, 1]
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="autogcl"):
            pred = MoleculeEncoder(dim=8, num_layers=1).finetune(smiles, y, split=split, selection="val", epochs=3,
                                                                 seed=0, progress=False)
        said = "selection='val' found no epoch with a val_auc" in caplog.text
        assert said == warned, caplog.text
        if warned:
            assert pred.selected_epoch == 3 and all(math.isnan(r["val_auc"]) for r in pred.history)


def test_cli_csv_regression_runs_the_python_default_recipe_on_a_split_file(slice_csv, tmp_path, monkeypatch):
    """``transfer finetune --csv`` with numeric labels runs MoleculeEncoder.finetune's own
    regression defaults (no dropout, cosine schedule, mean readout; 4 epochs here), not the paper's
    classification protocol, on the parts of ``--split-file``: the same numbers as the
    estimator given the same split, epoch for epoch (the same computation: rel 1e-12); the
    options --readout and --lr-schedule are the estimator's."""
    from autogcl.choices import FINETUNE_DEFAULTS, REGRESSION_DEFAULTS

    dataset = load_molecule_csv(slice_csv, "smiles", ["logp"], workers=1)
    n = len(dataset)
    order = np.random.default_rng(0).permutation(n)
    parts = {"train": sorted(order[:n - 40].tolist()), "val": sorted(order[n - 40:n - 20].tolist()),
             "test": sorted(order[n - 20:].tolist())}
    split_file = tmp_path / "splits.json"
    split_file.write_text(json.dumps([parts]))  # chemprop's --splits-file form
    out = tmp_path / "ft"
    monkeypatch.chdir(tmp_path)
    assert main(["transfer", "finetune", "--csv", str(slice_csv), "--label-cols", "logp", "--checkpoint",
                 "autogcl-moses-fullx1", "--split-file", str(split_file), "--epochs", "4", "--seeds", "1", "--out", str(out),
                 "--no-progress", "--workers", "1"]) == 0
    unit = out / "autogcl-moses-fullx1" / "slice" / "seed0"
    config = json.loads((unit / "config.json").read_text())
    assert config["dropout"] == REGRESSION_DEFAULTS["dropout"] and config["batch_size"] == FINETUNE_DEFAULTS["batch_size"]
    assert config["lr_schedule"] == "cosine" and config["readout"] == "mean"
    split = json.loads((unit.parent / "split.json").read_text())
    assert split["kind"] == "file" and split["valid"] == parts["val"] and split["test"] == parts["test"]
    with open(unit / "metrics.csv", encoding="utf-8") as f:
        cli_rows = list(csv.DictReader(f))
    pred = MoleculeEncoder.load("autogcl-moses-fullx1").finetune(
        dataset, split={"train": parts["train"], "valid": parts["val"], "test": parts["test"]}, selection="val",
        epochs=4, seed=0, progress=False)
    assert len(cli_rows) == len(pred.history) == 4
    for cli, ours in zip(cli_rows, pred.history):
        for key in ("loss", "val_rmse", "test_rmse"):
            assert float(cli[key]) == pytest.approx(ours[key], rel=1e-12, abs=0), key
    res = json.loads((unit / "result.json").read_text())
    assert res["model_epoch"] == pred.selected_epoch

    bad = tmp_path / "overlap.json"
    bad.write_text(json.dumps({"train": [0, 1, 2], "valid": [2, 3], "test": [4]}))
    assert main(["transfer", "finetune", "--csv", str(slice_csv), "--label-cols", "logp", "--split-file", str(bad),
                 "--seeds", "1", "--out", str(tmp_path / "bad"), "--no-progress", "--workers", "1"]) == 2


def test_a_validation_part_too_small_to_choose_an_epoch_is_warned_about(caplog):
    """selection='val' on a validation part of a few molecules says it is too small (counting the
    rarer class for classification), and a large enough one says nothing."""
    import logging

    from autogcl.molecules import SMALL_VALIDATION, _warn_small_validation

    with caplog.at_level(logging.WARNING):
        assert _warn_small_validation(np.array([[0.0], [1.0]] * 18), "classification")  # 36 molecules, 18 positives
    assert "18 molecule(s) of its rarer class" in caplog.text and "selection='last'" in caplog.text
    big = np.array([[0.0], [1.0]] * SMALL_VALIDATION["classification"])
    assert not _warn_small_validation(big, "classification")
    assert _warn_small_validation(np.arange(50.0).reshape(-1, 1), "regression")
    assert not _warn_small_validation(np.arange(100.0).reshape(-1, 1), "regression")
    skewed = np.array([[1.0]] * 200 + [[0.0]] * 5)  # many molecules, but 5 of one class
    assert _warn_small_validation(skewed, "classification")


def test_finetune_warns_when_its_validation_part_is_too_small(bbbp, caplog):
    import logging

    smiles, y = bbbp
    with caplog.at_level(logging.WARNING, logger="autogcl.molecules"):
        MoleculeEncoder().finetune(smiles, y, split="random", selection="val", epochs=1, from_scratch=True,
                                   progress=False, device="cpu")
    assert "too few to choose an epoch on" in caplog.text


def test_a_binary_column_with_a_stray_value_says_what_decided_regression(caplog):
    """A 0/1 column with one stray value is inferred as a regression with a warning that names
    the value and its row and says how to force either task; a column of numbers says nothing
    of the kind."""
    import logging

    from autogcl.data.molecules import label_task

    y = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 0] * 3 + [2.0], dtype=float).reshape(-1, 1)
    with caplog.at_level(logging.WARNING):
        assert label_task(y, None, "train.csv", rows=list(range(2, 33)), names=["active"]) == "regression"
    assert "inferred regression from 1 label(s) other than 0/1 among 31 (row 32 column 'active': 2.0)" in caplog.text
    assert "task='classification'" in caplog.text and "task='regression'" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert label_task(np.linspace(-2, 3, 40).reshape(-1, 1), None) == "regression"
    assert "inferred regression" not in caplog.text
