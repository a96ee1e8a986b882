"""End to end: every row of the semi-supervised protocol on MUTAG, 3 epochs, 2 folds."""

import csv
import json

import pytest

import autogcl
from autogcl.api.semi import SemiSupervised
from autogcl.cli import main
from autogcl.data import load_tu
from autogcl.protocols import semi as S
from tests.conftest import break_at


def test_every_row_runs_and_writes_results(data_root, tmp_path):
    out = tmp_path / "semi"
    ds = load_tu("MUTAG", data_root)
    varied = 0  # folds whose validation accuracy changed over the epochs: the selection had a choice
    for row in S.ROWS:
        cfg = S.SemiConfig(dataset="MUTAG", row=row, epochs=3, pretrain_epochs=2)
        summary = S.run_sweep(cfg, ds, [0], out, fold_limit=2, show_progress=False)
        assert summary["row"] == row and summary["n_folds"] == 2
        folds = [json.loads((out / f"MUTAG-{row}" / "seed0" / f"fold{k}" / "result.json").read_text()) for k in (0, 1)]
        for k, r in enumerate(folds):
            with open(out / f"MUTAG-{row}" / "seed0" / f"fold{k}" / "metrics.csv") as f:
                rows = list(csv.DictReader(f))
            assert [x["phase"] for x in rows].count("pretrain") == (2 if row in ("graphcl_cl", "naive") else 0)
            train = [x for x in rows if x["phase"] == "train"]
            assert [int(x["epoch"]) for x in train] == [1, 2, 3]
            assert all(float(x["loss"]) == float(x["loss"]) for x in rows)  # finite losses
            # both selections, recomputed from the per-epoch accuracies beside them (first best on ties)
            val, test = [float(x["val_acc"]) for x in train], [float(x["test_acc"]) for x in train]
            assert r["selections"]["val"]["epoch"] == 1 + val.index(max(val))
            assert r["selections"]["val"]["acc"] == test[val.index(max(val))] == r["acc"]
            assert r["selections"]["test_max"]["acc"] == max(test)
            varied += len(set(val)) > 1
        assert summary["val"]["values"] == [100 * r["selections"]["val"]["acc"] for r in folds]
        assert summary["test_max"]["values"] == [100 * r["selections"]["test_max"]["acc"] for r in folds]
        fold = out / f"MUTAG-{row}" / "seed0" / "fold1"
        res = folds[1]
        assert res["row"] == row and set(res["selections"]) == {"val", "test_max"}
        assert res["sizes"] == {"labeled": 18, "unlabeled": 132, "val": 19, "test": 19}
        assert res["runtime"]["device"] == "cpu" and res["runtime"]["torch_threads"] >= 1
        stored = json.loads((fold / "config.json").read_text())
        assert stored["runtime"] == res["runtime"] and S.SemiConfig.from_dict(stored) == cfg
        header = (fold / "metrics.csv").read_text().splitlines()[0].split(",")
        assert {"loss", "labeled_acc", "val_acc", "test_acc", "time_s"} <= set(header)
        assert not list(fold.glob("checkpoint*.pt"))  # a finished fold keeps no checkpoint
    assert varied >= len(S.ROWS)  # at least half the folds
    splits = json.loads((out / "MUTAG-joint" / "seed0" / "splits.json").read_text())
    assert splits["fold_seed"] == 12345 and len(splits["folds"]) == 2


def test_cli_runs_rows_and_reports(data_root, tmp_path, capsys):
    out = tmp_path / "semi"
    argv = ["semi", "--dataset", "MUTAG", "--row", "labeled,joint", "--epochs", "1", "--fold-limit", "2",
            "--data-root", str(data_root), "--out", str(out), "--no-progress", "--device", "cpu"]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "| labeled |" in table and "| joint |" in table
    assert main(["report", str(out)]) == 0
    assert "MUTAG test_max" in capsys.readouterr().out and (out / "report.md").is_file()


@pytest.mark.parametrize("row,phase,epoch", [("naive", "pretrain", 2), ("joint", "train", 2)])
def test_an_interrupted_fold_resumes_where_it_stopped(data_root, tmp_path, monkeypatch, row, phase, epoch):
    ds = load_tu("MUTAG", data_root)
    cfg = S.SemiConfig(dataset="MUTAG", row=row, epochs=3, pretrain_epochs=3)
    S.run_sweep(cfg, ds, [0], tmp_path / "ref", fold_limit=1, show_progress=False)

    real_make = SemiSupervised.make_strategies

    def make_then_break(self):
        pre, strat, reads = real_make(self)
        break_at(pre if phase == "pretrain" else strat, epoch)
        return pre, strat, reads

    monkeypatch.setattr(SemiSupervised, "make_strategies", make_then_break)
    with pytest.raises(KeyboardInterrupt):
        S.run_sweep(cfg, ds, [0], tmp_path / "cut", fold_limit=1, show_progress=False)
    partial = tmp_path / "cut" / f"MUTAG-{row}" / "seed0" / ".fold0.partial"
    assert partial.is_dir() and list(partial.glob("checkpoint*.pt"))
    monkeypatch.setattr(SemiSupervised, "make_strategies", real_make)
    S.run_sweep(cfg, ds, [0], tmp_path / "cut", resume=True, fold_limit=1, show_progress=False)

    def rows(root):
        lines = (root / f"MUTAG-{row}" / "seed0" / "fold0" / "metrics.csv").read_text().splitlines()
        head = lines[0].split(",")
        keep = [i for i, k in enumerate(head) if not k.endswith("time_s")]
        return [[line.split(",")[i] for i in keep] for line in lines]
    assert rows(tmp_path / "cut") == rows(tmp_path / "ref")


def test_interrupted_run_resumes_without_redoing_finished_folds(data_root, tmp_path, monkeypatch):
    ds = load_tu("MUTAG", data_root)
    cfg = S.SemiConfig(dataset="MUTAG", row="labeled", epochs=2)
    real = S.run_fold
    calls = []

    def breaks_on_second_fold(unit, dataset, split, *args, **kwargs):
        calls.append(split.fold)
        if split.fold == 1:
            raise KeyboardInterrupt
        return real(unit, dataset, split, *args, **kwargs)

    monkeypatch.setattr(S, "run_fold", breaks_on_second_fold)
    with pytest.raises(KeyboardInterrupt):
        S.run_sweep(cfg, ds, [0], tmp_path, fold_limit=3, show_progress=False)
    first = (tmp_path / "MUTAG-labeled" / "seed0" / "fold0" / "result.json").stat().st_mtime_ns
    calls.clear()
    monkeypatch.setattr(S, "run_fold", lambda *a, **k: calls.append(a[2].fold) or real(*a, **k))
    summary = S.run_sweep(cfg, ds, [0], tmp_path, resume=True, fold_limit=3, show_progress=False)
    assert calls == [1, 2] and summary["n_folds"] == 3
    assert (tmp_path / "MUTAG-labeled" / "seed0" / "fold0" / "result.json").stat().st_mtime_ns == first


def test_a_smaller_fold_limit_resumes_a_sweep_and_keeps_its_saved_splits(data_root, tmp_path, monkeypatch):
    """``--fold-limit 1 --resume`` after a run with ``--fold-limit 2``: nothing trains again, the
    summary reads fold 0, and splits.json keeps both saved folds (it was refused as "differs"
    before); a split file that really differs is still refused."""
    import json

    from autogcl.errors import ConfigError

    ds = load_tu("MUTAG", data_root)
    cfg = S.SemiConfig(dataset="MUTAG", row="labeled", epochs=1)
    S.run_sweep(cfg, ds, [0], tmp_path, fold_limit=2, show_progress=False)
    split_file = tmp_path / "MUTAG-labeled" / "seed0" / "splits.json"
    saved = json.loads(split_file.read_text())
    calls = []
    real = S.run_fold
    monkeypatch.setattr(S, "run_fold", lambda *a, **k: calls.append(a[2].fold) or real(*a, **k))
    summary = S.run_sweep(cfg, ds, [0], tmp_path, resume=True, fold_limit=1, show_progress=False)
    assert calls == [] and summary["n_folds"] == 1
    assert json.loads(split_file.read_text()) == saved and len(saved["folds"]) == 2
    S.run_sweep(cfg, ds, [0], tmp_path, resume=True, fold_limit=3, show_progress=False)
    assert calls == [2] and len(json.loads(split_file.read_text())["folds"]) == 3
    saved["folds"][1]["labeled"] = saved["folds"][1]["labeled"][1:]
    split_file.write_text(json.dumps(saved))
    with pytest.raises(ConfigError, match="differs from the splits"):
        S.run_sweep(cfg, ds, [0], tmp_path, resume=True, fold_limit=1, show_progress=False)


def test_released_split_records_test_max_only(data_root, tmp_path, capsys):
    from autogcl.errors import ConfigError

    with pytest.raises(ConfigError, match="--select test_max"):
        S.SemiConfig(dataset="MUTAG", row="labeled", split="released")
    assert "split" not in S.SemiConfig(dataset="MUTAG").to_dict()  # earlier runs' config.json still resume
    out = tmp_path / "semi"
    argv = ["semi", "--dataset", "MUTAG", "--row", "labeled", "--epochs", "2", "--fold-limit", "2",
            "--split", "released", "--select", "test_max", "--data-root", str(data_root), "--out", str(out),
            "--no-progress", "--device", "cpu"]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "| labeled (released split) | - (no validation fold) (2 folds) |" in table
    fold = out / "MUTAG-labeled-released_split" / "seed0" / "fold0"
    res = json.loads((fold / "result.json").read_text())
    assert set(res["selections"]) == {"test_max"} and res["acc"] == res["selections"]["test_max"]["acc"]
    assert res["sizes"] == {"labeled": 18, "unlabeled": 151, "val": 0, "test": 19}
    assert "val_acc" not in (fold / "metrics.csv").read_text().splitlines()[0].split(",")
    summary = json.loads((out / "MUTAG-labeled-released_split" / "summary.json").read_text())
    assert summary["val"]["undefined"] == "no validation fold" and summary["test_max"]["mean"] > 0
    assert json.loads((fold / "config.json").read_text())["split"] == "released"


def test_unknown_row_is_a_clear_error(data_root, tmp_path, capsys):
    assert main(["semi", "--dataset", "MUTAG", "--row", "jiont", "--data-root", str(data_root),
                 "--out", str(tmp_path)]) == 2
    assert "unknown row 'jiont'" in capsys.readouterr().err


# ------------------------------------------------------------------ the protocol is the estimator per fold

import csv as _csv  # noqa: E402
import re  # noqa: E402

from tests.conftest import REPO  # noqa: E402

GUIDE_LINE = 'name, epochs, n_folds = "MUTAG", 3, 2'


def guide_semi_example() -> str:
    """The docs/api.md example that makes the paper's semi-supervised numbers with the estimator."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "docs" / "api.md").read_text(encoding="utf-8"), flags=re.S)
    (block,) = [b for b in blocks if "SemiSupervised.paper" in b and GUIDE_LINE in b]
    return block


def cli_curves(data_root, out, name, row, epochs, folds) -> dict:
    assert main(["semi", "--dataset", name, "--row", row, "--epochs", str(epochs), "--fold-limit", str(folds),
                 "--data-root", str(data_root), "--out", str(out), "--no-progress", "--device", "cpu"]) == 0
    curves = {}
    for k in range(folds):
        with open(out / f"{name}-{row}" / "seed0" / f"fold{k}" / "metrics.csv", encoding="utf-8") as f:
            curves[k] = list(_csv.DictReader(f))
    return curves


@pytest.mark.parametrize("name,row,strategy,epochs,folds", [("MUTAG", "joint", "joint", 3, 2),
                                                            ("MUTAG", "labeled", "supervised", 3, 2),
                                                            ("PROTEINS", "joint", "joint", 2, 1)])
def test_the_guides_estimator_calls_give_the_numbers_of_autogcl_semi(data_root, tmp_path, capsys, name, row,
                                                                     strategy, epochs, folds):
    """`autogcl semi` and the estimator calls docs/api.md shows (SemiSupervised.paper fitted on
    each fold) give the same per-epoch losses and accuracies, bit for bit (same calls, same
    random draws); on PROTEINS this is the paper's preset with 10% labels."""
    code = guide_semi_example().replace(GUIDE_LINE, f'name, epochs, n_folds = "{name}", {epochs}, {folds}')
    code = code.replace('SemiSupervised.paper("joint", name)', f'SemiSupervised.paper("{strategy}", name)')
    namespace = {}
    exec(compile(code.replace("../shared/data", str(data_root)), "docs/api.md semi example", "exec"), namespace)
    cli = cli_curves(data_root, tmp_path, name, row, epochs, folds)
    assert sorted(namespace["curves"]) == sorted(cli) == list(range(folds))
    for fold, rows in namespace["curves"].items():
        assert len(rows) == len(cli[fold]) == epochs
        for ours, theirs in zip(rows, cli[fold]):
            keys = [k for k in theirs if k not in ("phase", "time_s")]
            assert {"loss", "labeled_acc", "val_acc", "test_acc"} <= set(keys)
            assert {k: float(theirs[k]) for k in keys} == {k: float(ours[k]) for k in keys}
    capsys.readouterr()


def test_the_paper_preset_is_the_protocols_configuration():
    """SemiSupervised.paper(strategy, dataset) has the settings `autogcl semi` runs a row with
    by default (the protocol only adds the feature recipe it loaded the graphs with)."""
    for dataset in ("PROTEINS", "DD"):
        for row in S.ROWS:
            cfg = S.SemiConfig(dataset=dataset, row=row)
            ours = S.estimator(cfg).hparams
            assert ours == autogcl.SemiSupervised.paper(S.ROW_STRATEGY[row], dataset, recipe=cfg.feat).hparams
    assert set(S.ROW_STRATEGY.values()) <= set(autogcl.api.SEMI_STRATEGIES)


def test_bn_stats_settled_is_an_option_of_the_protocol_and_stored_only_when_set():
    assert "bn_stats" not in S.SemiConfig().to_dict()  # earlier runs' config.json still resume
    cfg = S.SemiConfig(row="labeled", bn_stats="settled")
    assert cfg.to_dict()["bn_stats"] == "settled" and S.estimator(cfg).hparams["bn_stats"] == "settled"
