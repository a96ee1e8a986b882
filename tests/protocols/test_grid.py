"""Hyper-parameter grids: parsing, validation, the choice by validation score only, and a
small MUTAG grid from the command line."""

import json

import pytest

from autogcl.cli import main
from autogcl.errors import ConfigError
from autogcl.protocols.grid import expand, grid_report, parse_grid, point_name
from autogcl.protocols.semi import SemiConfig
from autogcl.protocols.unsupervised import UnsupervisedConfig


def test_cross_product_in_the_order_given_with_option_types():
    points = parse_grid(UnsupervisedConfig, ["lr=0.001,0.01", "add-mask=false,true", "--dropped=remove"])
    assert points == [{"lr": 0.001, "add_mask": False, "dropped": "remove"},
                      {"lr": 0.001, "add_mask": True, "dropped": "remove"},
                      {"lr": 0.01, "add_mask": False, "dropped": "remove"},
                      {"lr": 0.01, "add_mask": True, "dropped": "remove"}]
    assert point_name(points[1]) == "lr=0.001,add_mask=True,dropped=remove"
    assert parse_grid(UnsupervisedConfig, None) == [{}]


def test_grid_points_are_validated_like_the_command_line():
    cfg = UnsupervisedConfig()
    names = [n for n, _ in expand(cfg, ["tau=0.2,0.5"])]
    assert names == ["tau=0.2", "tau=0.5"]
    assert [c.temperature for _, c in expand(cfg, ["tau=0.2,0.5"])] == [0.2, 0.5]
    assert expand(cfg, None) == [("", cfg)]
    with pytest.raises(ConfigError, match="--lr must lie in"):
        expand(cfg, ["lr=0.01,-1"])
    with pytest.raises(ConfigError, match="unknown similarity loss 'l1'"):
        expand(cfg, ["sim_loss=mse,l1"])
    with pytest.raises(ConfigError, match="label_rate"):  # a semi option listed among the valid ones
        parse_grid(SemiConfig, ["labelrate=0.1"])


@pytest.mark.parametrize("spec, message", [
    ("lam", "expected KEY=V1,V2"),
    ("=1,2", "expected KEY=V1,V2"),
    ("lr=", "expected KEY=V1,V2"),
    ("bogus=1,2", "'bogus' is not an option here"),
    ("dataset=MUTAG,NCI1", "dataset cannot vary within a grid"),
    ("select=val,test_max", "select cannot vary"),
    ("eval_epochs=10,20", "list options cannot vary"),
    ("lr=fast", "a value of lr cannot be read"),
    ("add_mask=maybe", "a value of add_mask cannot be read"),
    ("lr=0.1,0.1", "a value is given twice"),
])
def test_bad_grid_specs_are_named(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_grid(UnsupervisedConfig, [spec])
    with pytest.raises(ConfigError, match="names lr twice"):
        parse_grid(UnsupervisedConfig, ["lr=0.1", "lr=0.2"])


def fake(scores, tests, maxes):
    results = [{"selections": {"val": {"score": s, "acc": t}, "test_max": {"acc": m}}}
               for s, t, m in zip(scores, tests, maxes)]
    summary = {"val": {"mean": 100 * sum(tests) / len(tests), "std": 0.0},
               "test_max": {"mean": 100 * sum(maxes) / len(maxes), "std": 0.0}}
    return summary, results


def test_the_choice_reads_validation_scores_never_test_figures():
    # b has the better test figures under both selections, a the better validation score
    a, b = fake([0.80, 0.82], [0.70, 0.72], [0.75, 0.76]), fake([0.78, 0.79], [0.90, 0.91], [0.95, 0.96])
    text, record = grid_report("toy", [("a", *a), ("b", *b)])
    assert record["chosen"] == "a"
    assert record["rows"][0]["validation_score"] == pytest.approx(81.0)
    assert "| a | 81.00 | 71.00 ± 0.00 | 75.50 ± 0.00 | 2 | **chosen** |" in text
    with pytest.raises(ConfigError, match="no unit recorded a validation score"):
        grid_report("old", [("a", a[0], [{"selections": {"val": {"acc": 0.7}}}])])
    with pytest.raises(ConfigError, match="no unit recorded a validation score"):  # the released split
        grid_report("released", [("a", a[0], [{"selections": {"test_max": {"acc": 0.7}}}])])


def test_unsupervised_grid_from_the_command_line(data_root, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["unsupervised", "--dataset", "MUTAG", "--epochs", "2", "--eval-epochs", "1,2", "--seeds", "2",
                 "--jobs", "1", "--data-root", str(data_root), "--out", str(out), "--no-progress",
                 "--grid", "lr=0.001,0.01"])
    assert code == 0
    record = json.loads((out / "grid" / "MUTAG-autogcl.json").read_text())
    assert [r["point"] for r in record["rows"]] == ["lr=0.001", "lr=0.01"]
    means = {}
    for point in ("lr=0.001", "lr=0.01"):
        res = [json.loads((out / "grid" / point / "MUTAG-autogcl" / f"seed{s}" / "result.json").read_text())
               for s in (0, 1)]
        assert {r["seed"] for r in res} == {0, 1}
        cfg = json.loads((out / "grid" / point / "MUTAG-autogcl" / "seed0" / "config.json").read_text())
        assert cfg["lr"] == float(point.split("=")[1])
        # the score the choice reads is the SVM inner-CV accuracy at the val-selected epoch
        for r in res:
            assert r["selections"]["val"]["score"] == r["evaluations"][str(r["selections"]["val"]["epoch"])]["val_acc"]
        means[point] = sum(r["selections"]["val"]["score"] for r in res) / 2
    assert record["chosen"] == max(means, key=means.get)
    printed = capsys.readouterr().out
    assert "### MUTAG-autogcl" in printed and "**chosen**" in printed
    assert (out / "grid" / "MUTAG-autogcl.md").read_text().strip() in printed


def test_semi_grid_picks_per_row_from_validation_folds(data_root, tmp_path, capsys):
    out = tmp_path / "semi"
    assert main(["semi", "--dataset", "MUTAG", "--row", "labeled", "--epochs", "2", "--fold-limit", "2",
                 "--data-root", str(data_root), "--out", str(out), "--no-progress", "--grid", "lr=0.01,0.001"]) == 0
    record = json.loads((out / "grid" / "MUTAG-labeled.json").read_text())
    means = {}
    for point in ("lr=0.01", "lr=0.001"):
        res = [json.loads((out / "grid" / point / "MUTAG-labeled" / "seed0" / f"fold{f}" / "result.json").read_text())
               for f in (0, 1)]
        means[point] = sum(r["selections"]["val"]["score"] for r in res) / 2
    assert record["chosen"] == max(means, key=means.get)
    assert [r["units"] for r in record["rows"]] == [2, 2]


def test_finetune_grid(data_root, tmp_path, capsys):
    lines = (data_root / "moleculenet" / "bbbp.csv").read_text().splitlines()
    csv = tmp_path / "tiny.csv"
    csv.write_text("\n".join(lines[:1] + lines[1:41] + lines[-40:]) + "\n")
    out = tmp_path / "ft"
    assert main(["transfer", "finetune", "--csv", str(csv), "--label-cols", "p_np", "--epochs", "2", "--seeds", "1",
                 "--out", str(out), "--no-progress", "--workers", "1", "--grid", "dropout=0,0.5"]) == 0
    record = json.loads((out / "grid" / "no_pretrain-tiny.json").read_text())
    scores = {p: json.loads((out / "grid" / p / "no_pretrain" / "tiny" / "seed0" / "result.json").read_text())
              ["selections"]["val"]["val_auc"] for p in ("dropout=0", "dropout=0.5")}
    assert record["chosen"] == max(scores, key=scores.get)
