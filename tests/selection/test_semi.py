"""The semi-supervised protocol picks its epoch by the validation fold alone (``val``);
``test_max`` by the test fold, named as such."""

from __future__ import annotations

import math

import pytest
import torch

import autogcl

from autogcl.data import load_tu
from autogcl.protocols import semi as S
from tests.selection.tables import (
    EPOCHS,
    ROW_TEST_MAX_EPOCH,
    ROW_VAL_EPOCH,
    TEST_MAX,
    VAL_TEST,
    ByPart,
    table_rows,
)


def test_select_val_reads_the_validation_fold_and_test_max_the_test_fold():
    sel = S.select(table_rows())
    assert sel["val"] == {"epoch": ROW_VAL_EPOCH, "acc": VAL_TEST, "criterion": "validation-fold accuracy",
                          "score": EPOCHS[20][0]}
    assert sel["test_max"] == {"epoch": ROW_TEST_MAX_EPOCH, "acc": TEST_MAX, "criterion": "best test accuracy"}


def test_select_without_a_validation_fold_offers_test_max_only():
    rows = [{"epoch": r["epoch"], "test_acc": r["test_acc"]} for r in table_rows()]
    sel = S.select(rows)
    assert list(sel) == ["test_max"] and sel["test_max"]["epoch"] == ROW_TEST_MAX_EPOCH


def test_select_over_one_epoch_reports_that_epoch_under_both_rules():
    row = {"epoch": 7, "val_acc": 0.4, "test_acc": 0.3, "labeled_acc": 0.9}
    assert S.select([row]) == {"val": {"epoch": 7, "acc": 0.3, "criterion": "validation-fold accuracy", "score": 0.4},
                               "test_max": {"epoch": 7, "acc": 0.3, "criterion": "best test accuracy"}}


def test_select_ignores_the_training_accuracy():
    rows = [dict(r, labeled_acc=1.0 if r["epoch"] == 1 else 0.0) for r in table_rows()]
    assert S.select(rows) == S.select(table_rows())


def scripted_accuracy(tmp_path):
    """Accuracy of the table for the validation and test folds, told apart by the graphs the
    loader holds (the fold's parts as written in splits.json)."""
    val = [v for v, _ in EPOCHS.values()]
    test = [t for _, t in EPOCHS.values()]

    def part_of(model, graphs):
        assert isinstance(model, S.SemiSupervised) and model.hparams["classifier"] == "resgcn"  # the fold's model
        fold = S.atomic.read_json(tmp_path / "MUTAG-labeled" / "seed0" / "splits.json")["folds"][0]
        idx = sorted(graphs.indices())
        return next((k for k in ("val", "test") if sorted(fold[k]) == idx), None)
    return ByPart(part_of, {"val": val, "test": test})


@pytest.mark.parametrize("select", ["val", "test_max"])
def test_a_fold_reports_the_epoch_its_selection_names(data_root, tmp_path, monkeypatch, select):
    scripted = scripted_accuracy(tmp_path)  # the fold's accuracies are the table's
    monkeypatch.setattr(S.SemiSupervised, "score", lambda model, graphs, *a, **k: scripted(model, graphs))
    cfg = S.SemiConfig(dataset="MUTAG", row="labeled", epochs=len(EPOCHS), select=select)
    summary = S.run_sweep(cfg, load_tu("MUTAG", data_root), [0], tmp_path, fold_limit=1, show_progress=False)
    res = S.atomic.read_json(tmp_path / "MUTAG-labeled" / "seed0" / "fold0" / "result.json")
    assert res["selection"] == select
    # the result records the rule behind its figure: each selection names its criterion
    assert all(sel["criterion"] for sel in res["selections"].values())
    assert "test" not in res["selections"]["val"]["criterion"]
    assert res["selections"]["val"]["epoch"] == ROW_VAL_EPOCH and res["selections"]["val"]["acc"] == VAL_TEST
    assert res["selections"]["test_max"]["epoch"] == ROW_TEST_MAX_EPOCH
    assert res["acc"] == (VAL_TEST if select == "val" else TEST_MAX)
    assert (res["protocol"], res["dataset"], res["row"], res["tag"], res["seed"], res["fold"]) == (
        "semi", "MUTAG", "labeled", "MUTAG-labeled", 0, 0)
    # metrics.csv records every part's score at every epoch: the labeled share's (scored as
    # another part: 1.0), the validation and the test fold's (the table's)
    rows, _, _ = fold_files(tmp_path)
    assert [(float(r["labeled_acc"]), float(r["val_acc"]), float(r["test_acc"])) for r in rows] == [
        (1.0, v, t) for v, t in EPOCHS.values()]
    assert summary["selection"] == select
    assert summary["val"]["values"] == [pytest.approx(100 * VAL_TEST)]
    assert summary["test_max"]["values"] == [pytest.approx(100 * TEST_MAX)]


def result(val, test_max, seed=0, time_s=1.0):
    return {"seed": seed, "time_s": time_s, "selections": {"val": {"acc": val}, "test_max": {"acc": test_max}}}


def test_summarize_keeps_each_selection_apart():
    s = S.summarize([result(0.6, 0.9), result(0.7, 0.95, seed=1, time_s=3.0)])
    assert s["val"]["mean"] == pytest.approx(65.0) and s["val"]["std"] == pytest.approx(math.sqrt(50))  # ddof=1
    assert s["test_max"]["mean"] == pytest.approx(92.5) and s["test_max"]["values"] == pytest.approx([90, 95])
    assert s["n_seeds"] == 2 and s["n_folds"] == 2 and s["time_per_fold_s"] == 2.0
    one = S.summarize([result(0.6, 0.9)])
    assert one["val"]["std"] == 0.0 and one["val"]["mean"] == pytest.approx(60.0)
    released = S.summarize([{"seed": 0, "time_s": 1.0, "selections": {"test_max": {"acc": 0.9}}}])
    assert math.isnan(released["val"]["mean"]) and released["val"]["undefined"] == "no validation fold"
    assert math.isnan(released["val"]["std"]) and released["val"]["values"] == []
    assert released["test_max"]["mean"] == pytest.approx(90.0)


def fold_files(out):
    """(metrics rows, result, predictions rows) of fold 0 of seed 0 of the ``labeled`` row."""
    import csv

    fold = out / "MUTAG-labeled" / "seed0" / "fold0"
    with open(fold / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    with open(fold / "predictions.csv") as f:
        preds = list(csv.DictReader(f))
    return rows, S.atomic.read_json(fold / "result.json"), preds


def test_scoring_the_folds_leaves_the_training_and_the_figures_of_the_fold_unchanged(data_root, tmp_path, monkeypatch):
    """Scoring the validation and test folds at every epoch draws nothing from the fold's
    random stream (a shuffled evaluation loader would: the training batches, hence the
    classifier and every later accuracy, would then change with it), and the test accuracy
    is over the test fold's graphs, each under its own label."""
    dataset = load_tu("MUTAG", data_root)
    cfg = S.SemiConfig(dataset="MUTAG", row="labeled", epochs=3)
    S.run_sweep(cfg, dataset, [0], tmp_path / "scored", fold_limit=1, show_progress=False)
    monkeypatch.setattr(S.SemiSupervised, "score", lambda *args, **kwargs: 0.5)  # reads no loader
    S.run_sweep(cfg, dataset, [0], tmp_path / "unscored", fold_limit=1, show_progress=False)
    (scored, res, preds), (unscored, _, unscored_preds) = fold_files(tmp_path / "scored"), fold_files(tmp_path / "unscored")
    losses = [k for k in scored[0] if "loss" in k]
    assert losses and [[r[k] for k in losses] for r in scored] == [[r[k] for k in losses] for r in unscored]
    a = autogcl.load(tmp_path / "scored" / "MUTAG-labeled" / "seed0" / "fold0" / "model.pt").state_dict()
    b = autogcl.load(tmp_path / "unscored" / "MUTAG-labeled" / "seed0" / "fold0" / "model.pt").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)  # the same classifier, bit for bit (same operations)
    assert preds == unscored_preds
    fold = S.atomic.read_json(tmp_path / "scored" / "MUTAG-labeled" / "seed0" / "splits.json")["folds"][0]
    y = dataset._data.y.tolist()
    assert [int(p["index"]) for p in preds] == fold["test"] and all(int(p["label"]) == y[int(p["index"])] for p in preds)
    # the last epoch's test accuracy is that classifier's over the test fold, graph by graph (exact: the same batches)
    right = sum(p["pred"] == p["label"] for p in preds)
    assert float(scored[-1]["test_acc"]) == right / len(fold["test"])
    assert res["selections"]["test_max"]["acc"] == max(float(r["test_acc"]) for r in scored)
    assert res["selections"]["val"]["score"] == max(float(r["val_acc"]) for r in scored)


def test_make_summary_names_what_the_table_shows_beside_the_figures():
    from autogcl.protocols.published import SEMI, fmt
    from autogcl.protocols.report import semi_table

    cfg = S.SemiConfig(dataset="PROTEINS", row="labeled", select="test_max")
    results = [dict(result(0.6, 0.9, seed=s // 2, time_s=1.0 + s), fold=s % 2) for s in range(4)]
    summary = S.make_summary(cfg, results)
    assert (summary["protocol"], summary["tag"], summary["dataset"], summary["row"], summary["selection"]) == (
        "semi", "PROTEINS-labeled", "PROTEINS", "labeled", "test_max")
    assert summary["config"] == cfg.to_dict() and summary["n_seeds"] == 2 and summary["n_folds"] == 4
    assert summary["val"] == S.summarize(results)["val"] and summary["time_per_fold_s"] == 2.5
    row = next(line for line in semi_table([summary]).splitlines() if line.startswith("| labeled"))
    # 4 folds of 2 seeds (not 10 per seed) are said; the published figure of the row stands beside ours
    assert "60.00 ± 0.00 (4 folds)" in row and "90.00 ± 0.00" in row and row.endswith(fmt(SEMI["labeled", "PROTEINS"]) + " |")
