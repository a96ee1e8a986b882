"""The GraphCL augmentation ablation: config validation and a tiny run through the CLI."""

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
    assert main(["ablate", "graphcl-aug", "--dataset", "MUTAG", "--epochs", "1", "--pretrain-epochs", "1",
                 "--fold-limit", "2", "--augs", "node_drop,attr_mask", "--ratios", "0,0.2",
                 "--data-root", str(data_root), "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "| node_drop | " in text and "| attr_mask | " in text and "| MUTAG | " in text
    assert (out / "ablation.md").read_text().startswith("### graphcl_cl with one augmentation")
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [
        "aug-attr_mask-r0.2", "aug-node_drop-r0", "aug-node_drop-r0.2"]


