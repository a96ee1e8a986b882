"""Fine-tuning protocol: ROC-AUC over tasks, selections, end to end on a slice of BBBP."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autogcl.cli import main
from autogcl.protocols import transfer as T


def test_roc_auc_skips_single_class_and_missing():
    y = np.array([[1, 0, np.nan], [0, 0, 1], [1, 0, np.nan], [0, np.nan, 1]], dtype=float)
    s = np.array([[0.9, 0.1, 0.0], [0.2, 0.3, 0.5], [0.8, 0.2, 0.0], [0.4, 0.5, 0.1]])
    auc, n = T.roc_auc(y, s)
    assert n == 1 and auc == 1.0  # task 2 has one class only, task 3 only positives
    s[0, 0] = 0.1  # one positive now ranks below both negatives
    assert T.roc_auc(y, s) == (0.5, 1)
    auc, n = T.roc_auc(y[:, 1:], s[:, 1:])
    assert n == 0 and math.isnan(auc)


def test_selections_use_val_by_default_and_record_test_max():
    rows = [{"epoch": 1, "val_auc": 0.6, "test_auc": 0.9}, {"epoch": 2, "val_auc": 0.8, "test_auc": 0.7},
            {"epoch": 3, "val_auc": float("nan"), "test_auc": 0.5}]
    sel = T.select(rows)
    assert sel["val"] == {"epoch": 2, "auc": 0.7, "val_auc": 0.8, "score": 0.8, "criterion": "validation ROC-AUC"}
    assert sel["test_max"] == {"epoch": 1, "auc": 0.9, "criterion": "best test ROC-AUC"}


@pytest.fixture
def tiny_csv(data_root, tmp_path):
    lines = (data_root / "moleculenet" / "bbbp.csv").read_text().splitlines()
    p = tmp_path / "tiny.csv"
    p.write_text("\n".join(lines[:1] + lines[1:61] + lines[-60:] + ["C1CC,1"]) + "\n")  # both classes + a bad row
    return p


def test_finetune_one_epoch_end_to_end(tiny_csv, tmp_path):
    out = tmp_path / "runs"
    cfg = T.FinetuneConfig(csv=str(tiny_csv), label_cols=["p_np"], epochs=1, dim=16, num_layers=2)
    s = T.run_sweep(cfg, [0], out, "no_pretrain", show_progress=False, workers=1)
    unit = out / "no_pretrain" / "tiny" / "seed0"
    assert (unit / "result.json").is_file() and (unit / "metrics.csv").is_file()
    split = T.atomic.read_json(out / "no_pretrain" / "tiny" / "split.json")
    assert sum(split["sizes"].values()) == 120 and s["num_molecules"] == 120 and s["skipped_smiles"] == 1
    assert set(s) >= {"val", "test_max"} and s["selection"] == "val"
    dataset_json = T.atomic.read_json(out / "no_pretrain" / "tiny" / "dataset.json")
    assert dataset_json["skipped"][0]["row"] == 122
    with pytest.raises(T.ConfigError, match="--resume"):
        T.run_sweep(cfg, [0], out, "no_pretrain", show_progress=False, workers=1)


def test_cli_pretrain_then_finetune(tiny_csv, tmp_path, capsys):
    corpus = tmp_path / "corpus.smi"
    corpus.write_text("\n".join(["CCO", "c1ccccc1O", "CC(=O)Nc1ccccc1", "bad((", "CCN(CC)CC", "OCC(O)CO"] * 6) + "\n")
    pre = tmp_path / "pre"
    assert main(["transfer", "pretrain", "--corpus", str(corpus), "--epochs", "1", "--batch-size", "8",
                 "--chunk-size", "20", "--out", str(pre), "--workers", "1", "--no-progress"]) == 0
    res = T.atomic.read_json(pre / "result.json")
    assert res["corpus"]["skipped"] == 6 and res["corpus"]["molecules"] == 30 and res["steps"] == 3
    assert (pre / "encoder.pt").is_file()
    out = tmp_path / "ft"
    assert main(["transfer", "finetune", "--csv", str(tiny_csv), "--label-cols", "p_np", "--checkpoint",
                 str(pre / "encoder.pt"), "--epochs", "1", "--seeds", "1", "--out", str(out), "--no-progress"]) == 0
    s = T.atomic.read_json(out / "pre" / "tiny" / "summary.json")
    assert s["pretrained"] and s["pretrain_method"] == "autogcl"
    assert s["pretrain"] == {"epochs": 1, "molecules_seen": 24, "corpus_molecules": 30}  # 3 steps of 8
    assert "| tiny | pre | 1 | 1 |" in capsys.readouterr().out
    assert main(["report", str(out)]) == 0
    assert "Transfer" in (out / "report.md").read_text()


def test_cli_errors(tmp_path, capsys):
    assert main(["transfer", "finetune", "--dataset", "bbbq", "--out", str(tmp_path)]) == 2
    assert "unknown MoleculeNet dataset" in capsys.readouterr().err
    assert main(["transfer", "finetune", "--checkpoint", str(tmp_path / "none.pt"), "--data-root",
                 str(tmp_path), "--out", str(tmp_path)]) == 2


def test_resume_keeps_finished_seeds_and_adds_new_ones(tiny_csv, tmp_path):
    out = tmp_path / "runs"
    cfg = T.FinetuneConfig(csv=str(tiny_csv), label_cols=["p_np"], epochs=1, dim=8, num_layers=1)
    first = T.run_sweep(cfg, [0], out, "t", show_progress=False, workers=1)
    both = T.run_sweep(cfg, [0, 1], out, "t", show_progress=False, workers=1, resume=True)
    assert both["n_seeds"] == 2 and both["test_max"]["values"][0] == first["test_max"]["values"][0]


def test_empty_validation_auc_gives_no_val_selection():
    rows = [{"epoch": 1, "val_auc": float("nan"), "test_auc": 0.7}]
    sel = T.select(rows)
    assert sel["val"]["epoch"] is None and math.isnan(sel["val"]["auc"]) and sel["test_max"]["auc"] == 0.7


def test_a_split_with_an_empty_part_is_refused(tmp_path):
    p = tmp_path / "acyclic.csv"
    p.write_text("smiles,y\n" + "".join(f"{'C' * (i + 1)}O,{i % 2}\n" for i in range(12)))  # one scaffold
    cfg = T.FinetuneConfig(csv=str(p), label_cols=["y"], epochs=1, dim=8, num_layers=1)
    with pytest.raises(T.DataError, match="leaves a part empty"):
        T.run_sweep(cfg, [0], tmp_path / "runs", "t", show_progress=False, workers=1)


@pytest.mark.parametrize("name,seen", [("autogcl-moses-fullx1.pt", 1582080), ("autogcl-moses200k.pt", 399360)])
def test_shipped_encoder_is_the_one_a_unit_fine_tunes(name, seen):
    from pathlib import Path

    from autogcl.protocols.transfer import FinetuneConfig, encoder_of, recipe

    shipped = Path(__file__).resolve().parents[2] / "pretrained" / name
    cfg = FinetuneConfig(checkpoint=str(shipped))
    enc = encoder_of(cfg)
    assert enc.meta["method"] == "autogcl" and enc.meta["molecules_seen"] == seen and enc.out_channels == 300
    assert recipe(cfg)["from_scratch"] is False and recipe(FinetuneConfig())["from_scratch"] is True


def test_label_columns_need_a_csv():
    from autogcl.errors import ConfigError
    from autogcl.protocols.transfer import FinetuneConfig

    with pytest.raises(ConfigError, match="--label-cols"):
        FinetuneConfig(dataset="bbbp", label_cols=["p_np"])


def test_a_unit_of_the_shipped_encoder_resumes_from_another_checkout(tiny_csv, tmp_path):
    """A finished unit records the shipped encoder by its name; one that a run from another
    checkout recorded by its path there (as every run did before) is kept by --resume, not
    refused nor trained again; another encoder's unit is still refused."""
    import json

    from autogcl.molecules import PRETRAINED_DIR
    from autogcl.protocols.configs import checkpoint_path

    out = tmp_path / "runs"
    cfg = T.FinetuneConfig(csv=str(tiny_csv), label_cols=["p_np"], epochs=1,
                           checkpoint=checkpoint_path(str(PRETRAINED_DIR / "autogcl-moses-fullx1.pt")))
    first = T.run_sweep(cfg, [0], out, "t", show_progress=False, workers=1)
    stored = out / "t" / "tiny" / "seed0" / "config.json"
    assert json.loads(stored.read_text())["checkpoint"] == "autogcl-moses-fullx1"
    result = out / "t" / "tiny" / "seed0" / "result.json"
    written = result.stat().st_mtime_ns

    def recorded_as(checkpoint):
        stored.write_text(json.dumps({**json.loads(stored.read_text()), "checkpoint": checkpoint}))

    clone = tmp_path / "clone" / "pretrained"  # another checkout that is here, with the same file
    clone.mkdir(parents=True)
    (clone / "autogcl-moses-fullx1.pt").write_bytes((PRETRAINED_DIR / "autogcl-moses-fullx1.pt").read_bytes())
    for old in ("/elsewhere/checkout/pretrained/autogcl-moses-fullx1.pt",  # a clone that is gone
                str(clone / "autogcl-moses-fullx1.pt"),
                str(PRETRAINED_DIR / "autogcl-moses-fullx1.pt")):  # this checkout's path
        recorded_as(old)
        again = T.run_sweep(cfg, [0], out, "t", show_progress=False, workers=1, resume=True)
        assert again["val"]["values"] == first["val"]["values"] and result.stat().st_mtime_ns == written
    for other in ("/elsewhere/checkout/pretrained/autogcl-moses200k.pt", "/elsewhere/my/encoder.pt"):
        recorded_as(other)
        with pytest.raises(T.ConfigError, match="different configuration"):
            T.run_sweep(cfg, [0], out, "t", show_progress=False, workers=1, resume=True)


def test_a_unit_resumes_only_from_the_encoder_weights_it_fine_tuned(tiny_csv, tmp_path):
    """A fine-tuning unit records the weights of its encoder (their digest), not only the path:
    another encoder saved at that path later (a pre-training run again into the same folder) is
    refused by --resume, the same weights saved again are kept, and a unit recorded before the
    digest (its path alone) is kept as it was."""
    import json

    import torch

    from autogcl.atomic import weights_id
    from autogcl.models.mol_gin import load_encoder

    corpus = tmp_path / "corpus.smi"
    corpus.write_text("\n".join(["CCO", "c1ccccc1O", "CC(=O)Nc1ccccc1", "CCN(CC)CC", "OCC(O)CO"] * 4) + "\n")
    encoders = {}
    for seed in (0, 1):  # two encoders of the same recipe: their weights differ
        assert main(["transfer", "pretrain", "--corpus", str(corpus), "--epochs", "1", "--batch-size", "8",
                     "--chunk-size", "20", "--dim", "8", "--num-layers", "1", "--gen-hidden", "4", "--seed", str(seed),
                     "--out", str(tmp_path / f"pre{seed}"), "--workers", "1", "--no-progress"]) == 0
        encoders[seed] = (tmp_path / f"pre{seed}" / "encoder.pt").read_bytes()
    path = tmp_path / "encoder.pt"
    path.write_bytes(encoders[0])
    out = tmp_path / "runs"
    cfg = T.FinetuneConfig(csv=str(tiny_csv), label_cols=["p_np"], epochs=1, checkpoint=str(path))
    first = T.run_sweep(cfg, [0], out, "t", show_progress=False, workers=1)
    stored = out / "t" / "tiny" / "seed0" / "config.json"
    recorded = json.loads(stored.read_text())
    assert recorded[T.ENCODER_KEY] == weights_id(load_encoder(path)[0]) and recorded["checkpoint"] == str(path)
    result = out / "t" / "tiny" / "seed0" / "result.json"
    written = result.stat().st_mtime_ns

    path.write_bytes(encoders[1])  # another encoder at the same path
    with pytest.raises(T.ConfigError, match=f"different configuration \\({T.ENCODER_KEY}: "):
        T.run_sweep(cfg, [0], out, "t", show_progress=False, workers=1, resume=True)
    assert result.stat().st_mtime_ns == written  # nothing lost

    blob = torch.load(tmp_path / "pre0" / "encoder.pt", weights_only=True)
    torch.save(blob, path)  # the first encoder's weights saved again: a file of other bytes, the same encoder
    assert path.read_bytes() != encoders[1]
    again = T.run_sweep(cfg, [0], out, "t", show_progress=False, workers=1, resume=True)
    assert again["val"]["values"] == first["val"]["values"] and result.stat().st_mtime_ns == written

    path.write_bytes(encoders[1])  # a unit recorded by its path alone (before the digest) is kept as it was
    stored.write_text(json.dumps({k: v for k, v in recorded.items() if k != T.ENCODER_KEY}))
    again = T.run_sweep(cfg, [0], out, "t", show_progress=False, workers=1, resume=True)
    assert again["val"]["values"] == first["val"]["values"] and result.stat().st_mtime_ns == written
