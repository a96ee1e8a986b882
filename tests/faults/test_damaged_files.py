"""Damaged files the user hands back: a fine-tuning --checkpoint that holds only a format tag or
a weight of the wrong shape, and a run whose result.json was cut: each a one-line error (or a
report line) that names the file and what is wrong with it."""

import json

import torch

from autogcl.cli import main
from autogcl.data.molecules import VOCAB
from autogcl.models.mol_gin import ENCODER_FORMAT, MolEncoder, save_encoder


def finetune(ckpt, tmp_path):
    return main(["transfer", "finetune", "--checkpoint", str(ckpt), "--out", str(tmp_path / "o")])


def test_an_encoder_file_holding_only_its_format_tag_is_named(tmp_path, capsys):
    ckpt = tmp_path / "encoder.pt"
    torch.save({"format": ENCODER_FORMAT}, ckpt)
    assert finetune(ckpt, tmp_path) == 2
    err = capsys.readouterr().err
    assert f"autogcl: error: {ckpt}: a damaged molecule encoder (no state_dict, encoder" in err
    assert "unexpected error" not in err and err.count("\n") == 1


def test_an_encoder_with_a_weight_of_the_wrong_shape_is_named(tmp_path, capsys):
    ckpt = tmp_path / "encoder.pt"
    save_encoder(MolEncoder(VOCAB, dim=8, num_layers=2), ckpt, meta={})
    blob = torch.load(ckpt, weights_only=True)
    name = next(k for k, v in blob["state_dict"].items() if v.dim() == 2)
    blob["state_dict"][name] = torch.zeros(3, 5)
    torch.save(blob, ckpt)
    assert finetune(ckpt, tmp_path) == 2
    err = capsys.readouterr().err
    assert (f"autogcl: error: {ckpt} does not fit the molecule GIN it describes (dim 8, 2 layers): {name} has "
            f"shape (3, 5), the model's is (") in err
    assert "unexpected error" not in err and "size mismatch" not in err and err.count("\n") == 1


def test_report_names_a_unit_whose_result_was_cut(tmp_path, capsys, caplog):
    sweep = tmp_path / "MUTAG-autogcl"
    for seed, text in ((0, json.dumps({"acc": 0.9})), (1, '{"acc": 0.8')):  # seed 1's file was cut
        (sweep / f"seed{seed}").mkdir(parents=True)
        (sweep / f"seed{seed}" / "result.json").write_text(text)
    stat = {"mean": 88.0, "std": 1.0}
    (sweep / "summary.json").write_text(json.dumps(
        {"protocol": "unsupervised", "dataset": "MUTAG", "method": "autogcl", "tag": "MUTAG-autogcl", "n_seeds": 2,
         "config": {"dataset": "MUTAG", "method": "autogcl"}, "val": stat, "test_max": stat}))
    with caplog.at_level("WARNING"):
        assert main(["report", str(tmp_path)]) == 0  # the summary itself is whole: the table is written
    out = capsys.readouterr().out
    assert "88.00 ± 1.00" in out
    assert (f"{sweep / 'seed1'}: its result.json is damaged ({sweep / 'seed1' / 'result.json'}: damaged JSON"
            in caplog.text)
    assert "seed0" not in caplog.text
