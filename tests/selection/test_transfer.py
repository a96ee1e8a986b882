"""Transfer fine-tuning picks its epoch by the validation ROC-AUC alone (``val``);
``test_max`` by the test ROC-AUC, named as such; a NaN score never wins."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autogcl.molecules import MoleculePredictor
from autogcl.protocols import transfer as T
from tests.selection.tables import (
    EPOCHS,
    ROW_TEST_MAX_EPOCH,
    ROW_VAL_EPOCH,
    TEST_MAX,
    VAL_TEST,
    ByPart,
    table_rows,
)


def rows(table=EPOCHS):
    return table_rows("val_auc", "test_auc", table)


def test_select_val_reads_the_validation_auc_and_test_max_the_test_auc():
    sel = T.select(rows())
    assert sel["val"]["epoch"] == ROW_VAL_EPOCH and sel["val"]["auc"] == VAL_TEST
    assert sel["val"]["score"] == sel["val"]["val_auc"] == EPOCHS[20][0]
    assert sel["test_max"]["epoch"] == ROW_TEST_MAX_EPOCH and sel["test_max"]["auc"] == TEST_MAX
    assert "validation" in sel["val"]["criterion"] and "test" not in sel["val"]["criterion"]
    assert "test" in sel["test_max"]["criterion"]


def test_a_nan_score_never_wins_and_all_nan_selects_nothing(caplog):
    nan = math.nan
    with caplog.at_level("WARNING", logger=T.log.name):
        sel = T.select(rows({1: (nan, 0.99), 2: (0.6, nan), 3: (0.5, 0.7)}))
    assert not caplog.records  # a val epoch was found: nothing to warn about
    assert sel["val"]["epoch"] == 2 and math.isnan(sel["val"]["auc"])  # the validation best, whatever its test
    assert sel["test_max"]["epoch"] == 1 and sel["test_max"]["auc"] == 0.99
    with caplog.at_level("WARNING", logger=T.log.name):
        none = T.select(rows({1: (nan, nan), 2: (nan, nan)}))
    warned = [r.getMessage() for r in caplog.records]  # the log says why the val figure is NaN
    assert len(warned) == 1 and "validation part" in warned[0] and "no val selection" in warned[0]
    assert none["val"]["epoch"] is none["test_max"]["epoch"] is None
    assert math.isnan(none["val"]["auc"]) and math.isnan(none["val"]["score"]) and math.isnan(none["test_max"]["auc"])
    assert none["val"]["criterion"] == "validation ROC-AUC" and none["test_max"]["criterion"] == "best test ROC-AUC"
    assert math.isnan(none["val"]["val_auc"])
    low = T.select(rows({1: (-0.5, 0.1), 2: (-0.2, 0.2)}))  # scores below 0 still select (no 0 floor)
    assert low["val"]["epoch"] == 2


@pytest.fixture
def tiny_csv(data_root, tmp_path):
    lines = (data_root / "moleculenet" / "bbbp.csv").read_text().splitlines()
    p = tmp_path / "tiny.csv"
    p.write_text("\n".join(lines[:1] + lines[1:61] + lines[-60:]) + "\n")
    return p


def script_scores(monkeypatch, tmp_path, wrap, task="classification"):
    """The scores of the table for the validation and test parts (scored by the estimator the
    protocol calls, fine-tuned for ``task``; ``wrap`` makes its record of a score), told apart
    by the molecules scored; model.pt and predictions.csv read the real predictions: not these
    tests' subject."""
    monkeypatch.setattr(T, "write_outputs", lambda *args, **kwargs: None)

    def part_of(predictor, loader):
        assert isinstance(predictor, MoleculePredictor) and predictor.task == task
        split = T.atomic.read_json(tmp_path / "t" / "tiny" / "split.json")
        return next((k for k in ("valid", "test") if sorted(split[k]) == sorted(loader.indices.tolist())), None)
    by_part = ByPart(part_of, {"valid": [v for v, _ in EPOCHS.values()], "test": [t for _, t in EPOCHS.values()]}, wrap)
    monkeypatch.setattr(MoleculePredictor, "_scores", lambda self, loader: by_part(self, loader))


@pytest.mark.parametrize("select", ["val", "test_max"])
def test_a_seed_reports_the_epoch_its_selection_names(tiny_csv, tmp_path, monkeypatch, select):
    script_scores(monkeypatch, tmp_path, lambda v: ({"auc": v}, 1))
    cfg = T.FinetuneConfig(csv=str(tiny_csv), label_cols=["p_np"], epochs=len(EPOCHS), dim=8, num_layers=1,
                           select=select)
    s = T.run_sweep(cfg, [0], tmp_path, "t", show_progress=False, workers=1)
    res = T.atomic.read_json(tmp_path / "t" / "tiny" / "seed0" / "result.json")
    assert res["selection"] == s["selection"] == select
    # the result records the rule behind its figure: each selection names its criterion
    assert all(sel["criterion"] for sel in res["selections"].values())
    assert "test" not in res["selections"]["val"]["criterion"]
    assert res["selections"]["val"]["epoch"] == ROW_VAL_EPOCH and res["selections"]["val"]["auc"] == VAL_TEST
    assert res["selections"]["test_max"]["epoch"] == ROW_TEST_MAX_EPOCH
    assert res["auc"] == (VAL_TEST if select == "val" else TEST_MAX)
    assert (res["protocol"], res["dataset"], res["seed"], res["pretrained"]) == ("transfer", "tiny", 0, False)
    assert s["val"]["values"] == [pytest.approx(100 * VAL_TEST)] and s["test_max"]["values"] == [pytest.approx(95)]


def test_summarize_keeps_each_selection_apart():
    rs = [{"seed": i, "train_time_s": 1.0, "selections": {"val": {"auc": v}, "test_max": {"auc": t}}}
          for i, (v, t) in enumerate([(0.6, 0.9), (0.7, 0.95)])]
    s = T.summarize(rs)
    assert s["val"]["mean"] == pytest.approx(65.0) and s["val"]["std"] == pytest.approx(5.0)  # ddof=0
    assert s["test_max"]["mean"] == pytest.approx(92.5) and s["seeds"] == [0, 1] and s["n_seeds"] == 2
    assert s["train_time_s"] == 1.0
    assert np.allclose(s["test_max"]["values"], [90, 95])


@pytest.mark.parametrize("pretrained", [False, True])
def test_make_summary_sets_a_row_beside_the_paper_figure_of_its_pre_training(tmp_path, pretrained):
    from autogcl.protocols.published import TRANSFER, fmt
    from autogcl.protocols.report import transfer_table

    ddir = tmp_path / "mytag" / "bbbp"
    T.atomic.atomic_write_json(ddir / "split.json", {"num_graphs": 50, "sizes": {"train": 40, "valid": 5, "test": 5}})
    T.atomic.atomic_write_json(ddir / "dataset.json", {"skipped": ["C1", "x"]})
    meta = {"method": "autogcl", "epochs": 3, "molecules_seen": 600, "corpus": {"molecules": 200}}
    rs = [{"seed": i, "train_time_s": 2.0 * i, "encoder_meta": meta if pretrained else {},
           "selections": {"val": {"auc": v}, "test_max": {"auc": t}}} for i, (v, t) in enumerate([(0.6, 0.9), (0.7, 0.95)])]
    cfg = T.FinetuneConfig(dataset="bbbp", checkpoint="encoder.pt" if pretrained else None, select="test_max")
    s = T.make_summary(cfg, rs, ddir)
    assert (s["protocol"], s["tag"], s["dataset"], s["selection"], s["pretrained"]) == (
        "transfer", "mytag", "bbbp", "test_max", pretrained)
    assert s["pretrain_method"] == ("autogcl" if pretrained else None)
    assert s["pretrain"] == ({"epochs": 3, "molecules_seen": 600, "corpus_molecules": 200} if pretrained else None)
    assert s["config"] == cfg.to_dict() and (s["num_molecules"], s["skipped_smiles"]) == (50, 2)
    assert s["split_sizes"] == {"train": 40, "valid": 5, "test": 5}
    assert s["val"] == T.summarize(rs)["val"] and s["test_max"]["values"] == pytest.approx([90, 95])
    assert s["n_seeds"] == 2 and s["train_time_s"] == 1.0
    # the table sets the row beside the paper's figure of its pre-training (or of "No pretrain")
    row = transfer_table([s]).splitlines()[-1]
    assert row.endswith(fmt(TRANSFER["autogcl" if pretrained else "no_pretrain", "bbbp"]) + " |")
    assert row.startswith("| bbbp | mytag | 2 | ") and "65.00 ± 5.00" in row


def test_make_summary_of_one_seed_without_a_dataset_record(tmp_path):
    ddir = tmp_path / "pre" / "bace"  # a dataset.json is written with the split: older runs have none
    T.atomic.atomic_write_json(ddir / "split.json", {"num_graphs": 9, "sizes": {"train": 7, "valid": 1, "test": 1}})
    meta = {"method": "graphcl", "epochs": 1}
    r = {"seed": 4, "train_time_s": 3.0, "encoder_meta": meta, "selections": {"val": {"auc": 0.5}, "test_max": {"auc": 0.75}}}
    s = T.make_summary(T.FinetuneConfig(dataset="bace", checkpoint="e.pt"), [r], ddir)
    assert s["skipped_smiles"] == 0 and s["pretrain_method"] == "graphcl" and s["seeds"] == [4]
    assert s["pretrain"] == {"epochs": 1, "molecules_seen": None, "corpus_molecules": None}
    assert (s["val"]["mean"], s["val"]["std"], s["test_max"]["mean"]) == (50.0, 0.0, 75.0)
def test_regression_selects_the_lowest_rmse_and_names_test_min():
    rows = [{"epoch": e, "val_rmse": v, "test_rmse": t, "test_mae": t / 2, "test_r2": 1 - t}
            for e, (v, t) in enumerate([(0.9, 0.5), (0.4, 0.7), (float("nan"), 0.3), (0.4, 0.1)], start=1)]
    sel = T.select(rows, "regression")
    assert sel["val"]["epoch"] == 2 and sel["val"]["rmse"] == 0.7 and sel["val"]["val_rmse"] == 0.4  # first best
    assert sel["val"]["score"] == -0.4  # a score is higher-is-better in every protocol's record
    assert sel["val"]["r2"] == pytest.approx(0.3) and sel["val"]["mae"] == 0.35
    assert sel["test_min"]["epoch"] == 4 and sel["test_min"]["rmse"] == 0.1
    assert set(sel) == {"val", "test_min"} and "lowest test RMSE" == sel["test_min"]["criterion"]
    none = T.select([{"epoch": 1, "val_rmse": float("nan"), "test_rmse": float("nan"), "test_mae": 0,
                      "test_r2": 0}], "regression")
    assert none["val"]["epoch"] is None and math.isnan(none["test_min"]["rmse"])


def test_regression_selections_name_their_rule_and_log_only_when_no_epoch_has_a_validation_rmse(caplog):
    rows = [{"epoch": e, "val_rmse": v, "test_rmse": t, "test_mae": t / 2, "test_r2": 1 - t}
            for e, (v, t) in enumerate([(0.9, 0.5), (0.4, 0.7), (0.6, 0.2)], start=1)]
    with caplog.at_level("WARNING", logger=T.log.name):
        sel = T.select(rows, "regression")
    assert not caplog.records  # a val epoch was found: nothing to warn about
    assert sel["val"] == {"criterion": "validation RMSE (lowest)", "epoch": 2, "rmse": 0.7, "mae": 0.35,
                          "r2": pytest.approx(0.3), "val_rmse": 0.4, "score": -0.4}
    assert sel["test_min"] == {"criterion": "lowest test RMSE", "epoch": 3, "rmse": 0.2, "mae": 0.1, "r2": 0.8}
    nan = float("nan")
    with caplog.at_level("WARNING", logger=T.log.name):
        none = T.select([dict(r, val_rmse=nan, test_rmse=nan) for r in rows], "regression")
    warned = [r.getMessage() for r in caplog.records]  # the log says why the val figure is NaN
    assert len(warned) == 1 and "validation part" in warned[0] and "no val selection" in warned[0]
    for s, rule in (("val", "validation RMSE (lowest)"), ("test_min", "lowest test RMSE")):
        assert none[s]["epoch"] is None and none[s]["criterion"] == rule
        assert all(math.isnan(none[s][k]) for k in ("rmse", "mae", "r2")), s
    assert math.isnan(none["val"]["val_rmse"]) and math.isnan(none["val"]["score"])


def test_summarize_of_regression_keeps_each_selection_and_score_apart():
    """A regression sweep summarises the test RMSE of each selection (in the targets' units,
    not in %), with the MAE and R² of the same epochs, ddof 0 over the seeds."""
    def sel(rmse, mae, r2):
        return {"rmse": rmse, "mae": mae, "r2": r2}
    rs = [{"seed": s, "task": "regression", "train_time_s": t,
           "selections": {"val": sel(*v), "test_min": sel(*m)}}
          for s, t, v, m in [(2, 1.0, (0.6, 0.5, 0.2), (0.4, 0.3, 0.6)), (5, 3.0, (1.0, 0.7, 0.0), (0.5, 0.4, 0.5))]]
    s = T.summarize(rs)
    assert set(s) == {"n_seeds", "seeds", "task", "val", "test_min", "train_time_s"}
    assert (s["task"], s["n_seeds"], s["seeds"], s["train_time_s"]) == ("regression", 2, [2, 5], 2.0)
    want = {"val": {"rmse": [0.6, 1.0], "mae": [0.5, 0.7], "r2": [0.2, 0.0]},
            "test_min": {"rmse": [0.4, 0.5], "mae": [0.3, 0.4], "r2": [0.6, 0.5]}}
    for k, scores in want.items():
        assert set(s[k]) == {"mean", "std", "values", "mae", "r2"}, k
        for m, v in scores.items():
            got = s[k] if m == "rmse" else s[k][m]
            assert got["values"] == v and got["mean"] == pytest.approx(np.mean(v), abs=1e-12), (k, m)
            assert got["std"] == pytest.approx(np.std(v), abs=1e-12), (k, m)  # ddof 0


@pytest.mark.parametrize("select", ["val", "test_min"])
def test_a_regression_seed_reports_the_epoch_of_the_lowest_rmse_under_its_selection(tiny_csv, tmp_path, monkeypatch,
                                                                                     select):
    """The configured task reaches the fine-tuning, the selection and the record: regression
    asked of 0/1 labels (allowed: they are numbers) is scored by RMSE, not inferred as
    classification. The table's scores as RMSE = 1 - score: lowest validation RMSE at the
    table's val epoch, lowest test RMSE at its test_max epoch."""
    script_scores(monkeypatch, tmp_path, lambda v: ({"rmse": 1 - v, "mae": (1 - v) / 2, "r2": v}, 1), "regression")
    cfg = T.FinetuneConfig(csv=str(tiny_csv), label_cols=["p_np"], task="regression", epochs=len(EPOCHS), dim=8,
                           num_layers=1, select=select)
    s = T.run_sweep(cfg, [0], tmp_path, "t", show_progress=False, workers=1)
    res = T.atomic.read_json(tmp_path / "t" / "tiny" / "seed0" / "result.json")
    assert (res["task"], res["selection"], s["task"], s["selection"]) == ("regression", select, "regression", select)
    assert set(res["selections"]) == {"val", "test_min"}
    val, low = res["selections"]["val"], res["selections"]["test_min"]
    assert (val["epoch"], val["rmse"], val["r2"], val["val_rmse"]) == (ROW_VAL_EPOCH, 1 - VAL_TEST, VAL_TEST, 1 - 0.9)
    assert (low["epoch"], low["rmse"], low["r2"]) == (ROW_TEST_MAX_EPOCH, 1 - TEST_MAX, TEST_MAX)
    assert res["rmse"] == (val if select == "val" else low)["rmse"] and "auc" not in res
    assert s["val"]["values"] == [1 - VAL_TEST] and s["test_min"]["values"] == [1 - TEST_MAX]
    assert s["val"]["r2"]["values"] == [VAL_TEST] and "test_max" not in s
