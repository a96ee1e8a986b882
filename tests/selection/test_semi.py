"""The semi-supervised protocol picks its epoch by the validation fold alone (``val``);
``test_max`` by the test fold, named as such."""

from __future__ import annotations

import math

import pytest

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


def test_select_over_one_epoch():
    sel = S.select(table_rows()[:1])
    assert sel["val"]["epoch"] == sel["test_max"]["epoch"] == 1 and sel["val"]["acc"] == sel["test_max"]["acc"]


def test_select_ignores_the_training_accuracy():
    rows = [dict(r, labeled_acc=1.0 if r["epoch"] == 1 else 0.0) for r in table_rows()]
    assert S.select(rows) == S.select(table_rows())


def scripted_accuracy(tmp_path):
    """Accuracy of the table for the validation and test folds, told apart by the graphs the
    loader holds (the fold's parts as written in splits.json)."""
    val = [v for v, _ in EPOCHS.values()]
    test = [t for _, t in EPOCHS.values()]

    def part_of(model, loader, device=None):
        assert isinstance(model, S.ResGCN)  # the fold's classifier is what is scored
        fold = S.atomic.read_json(tmp_path / "MUTAG-labeled" / "seed0" / "splits.json")["folds"][0]
        idx = sorted(loader.indices.tolist())
        return next((k for k in ("val", "test") if sorted(fold[k]) == idx), None)
    return ByPart(part_of, {"val": val, "test": test})


@pytest.mark.parametrize("select", ["val", "test_max"])
def test_a_fold_reports_the_epoch_its_selection_names(data_root, tmp_path, monkeypatch, select):
    monkeypatch.setattr(S, "accuracy", scripted_accuracy(tmp_path))  # the fold's accuracies are the table's
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
