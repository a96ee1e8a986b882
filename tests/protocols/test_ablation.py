"""The GraphCL augmentation ablation: config validation and a tiny run through the CLI."""

import json

import pytest

from autogcl.cli import main
from autogcl.errors import ConfigError
from autogcl.protocols.ablation import AblationConfig


def test_config_validates_names_and_ratios():
    assert AblationConfig(dataset="MUTAG,PROTEINS").dataset == ["MUTAG", "PROTEINS"]
    with pytest.raises(ConfigError, match="unknown augmentation 'flip'"):
        AblationConfig(augs=["flip"])
    with pytest.raises(ConfigError, match="--ratios"):
        AblationConfig(ratios=[0.2, 1.0])
    with pytest.raises(ConfigError, match="--row"):
        AblationConfig(row="joint")


def test_ablation_command_runs(data_root, tmp_path, capsys):
    out = tmp_path / "abl"
    assert main(["ablate", "graphcl-aug", "--dataset", "MUTAG", "--epochs", "4", "--pretrain-epochs", "1",
                 "--fold-limit", "2", "--augs", "node_drop,attr_mask", "--ratios", "0,0.2",
                 "--data-root", str(data_root), "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [
        "aug-attr_mask-r0.2", "aug-node_drop-r0", "aug-node_drop-r0.2"]

    def cell(folder, aug, ratio):
        """The table's cell, recomputed from the folds' result files: val / test_max means."""
        runs = sorted((out / folder).glob("MUTAG-graphcl_cl*/seed0/fold*/result.json"))
        res = [json.loads(p.read_text()) for p in runs]
        assert len(res) == 2 and all(r["row"] == "graphcl_cl" for r in res)
        cfgs = [json.loads((p.parent / "config.json").read_text()) for p in runs]
        assert {(c["aug"], c["aug_ratio"]) for c in cfgs} == {(aug, ratio)}  # the variant the cell names
        val, tmax = ([100 * r["selections"][s]["acc"] for r in res] for s in ("val", "test_max"))
        return f"{sum(val) / 2:.2f} / {sum(tmax) / 2:.2f} (2 folds)"

    lines = text.splitlines()
    assert f"| node_drop | {cell('aug-node_drop-r0.2', 'node_drop', 0.2)} |" in lines
    assert f"| attr_mask | {cell('aug-attr_mask-r0.2', 'attr_mask', 0.2)} |" in lines
    # the ratio table reuses the 0.2 run of the augmentation table
    assert (f"| MUTAG | {cell('aug-node_drop-r0', 'node_drop', 0.0)} | {cell('aug-node_drop-r0.2', 'node_drop', 0.2)} |"
            in lines)
    md = [line for line in (out / "ablation.md").read_text().splitlines() if line.startswith("| ")]
    assert len(md) == 5 and all(line in lines for line in md)  # the file holds the printed tables
