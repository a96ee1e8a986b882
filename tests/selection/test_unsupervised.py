"""The unsupervised protocol reports the epoch its selection names: ``val`` by the SVM's
inner-CV accuracy alone, ``test_max`` by the outer test accuracy."""

from __future__ import annotations

import csv

import pytest

from autogcl.data import load_tu
from autogcl.protocols import unsupervised as U
from tests.selection.tables import EPOCHS, ROW_TEST_MAX_EPOCH, ROW_VAL_EPOCH, TEST_MAX, VAL_TEST, Scripted


def scripted_svm():
    scores = [{"val_acc": v, "test_acc": t, "test_std": 0.0, "folds": []} for v, t in EPOCHS.values()]
    return Scripted(["svm"], {"svm": scores})


@pytest.mark.parametrize("select", ["val", "test_max"])
def test_a_seed_reports_the_epoch_its_selection_names(data_root, tmp_path, monkeypatch, select):
    monkeypatch.setattr(U, "svm_evaluate", scripted_svm())  # the SVM's scores at epochs 1..4 are the table's
    n = len(EPOCHS)
    cfg = U.UnsupervisedConfig(dataset="MUTAG", method="graphcl", epochs=n, eval_epochs=list(range(1, n + 1)),
                               select=select)
    summary = U.run_sweep(cfg, load_tu("MUTAG", data_root), [0], tmp_path, show_progress=False)
    res = U.make_units(cfg, [0], tmp_path)[0].result()
    assert res["selection"] == summary["selection"] == select
    # the result records the rule behind its figure: each selection names its criterion
    assert all(sel["criterion"] for sel in res["selections"].values())
    assert "test" not in res["selections"]["val"]["criterion"]
    assert res["selections"]["val"]["epoch"] == ROW_VAL_EPOCH and res["selections"]["val"]["acc"] == VAL_TEST
    assert res["selections"]["test_max"]["epoch"] == ROW_TEST_MAX_EPOCH
    assert res["acc"] == (VAL_TEST if select == "val" else TEST_MAX)
    assert summary["val"]["values"] == [pytest.approx(100 * VAL_TEST)]
    assert summary["test_max"]["values"] == [pytest.approx(100 * TEST_MAX)]
    # metrics.csv records the SVM's scores of every evaluated epoch under their names
    with open(tmp_path / cfg.tag / "seed0" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(float(r["svm_val_acc"]), float(r["svm_test_acc"]), float(r["svm_test_std"])) for r in rows] == [
        (v, t, 0.0) for v, t in EPOCHS.values()]


def test_the_svm_scores_every_graph_in_the_dataset_order_with_the_configured_folds(data_root, tmp_path, monkeypatch):
    """Each evaluation hands the SVM every graph's embedding with its label, in the dataset's
    order (the outer folds are drawn over that order, as the published protocol's: a shuffled
    pass would score other folds), the configured outer and inner folds and the unit's seed."""
    dataset = load_tu("MUTAG", data_root)
    scripted, seen = scripted_svm(), []

    def svm(emb, y, folds=10, inner_folds=5, cs=None, seed=0, n_jobs=1):
        assert emb.shape[1] == cfg.hidden * cfg.layers and bool(emb.isfinite().all())  # the graph embeddings
        seen.append((emb.shape[0], [int(v) for v in y.view(-1)], folds, inner_folds, seed))
        return scripted(emb, y)
    monkeypatch.setattr(U, "svm_evaluate", svm)
    cfg = U.UnsupervisedConfig(dataset="MUTAG", method="graphcl", epochs=2, eval_epochs=[1, 2], hidden=8,
                               svm_folds=4, svm_inner_folds=3)
    U.run_sweep(cfg, dataset, [3], tmp_path, show_progress=False)
    labels = dataset._data.y.view(-1).tolist()
    assert seen == [(len(dataset), labels, 4, 3, 3)] * 2


def test_summarize_keeps_each_selection_apart():
    rs = [{"seed": i, "train_time_s": 1.0 + i, "eval_time_s": 2.0 * i, "selections": {"val": {"acc": v}, "test_max": {"acc": t}}}
          for i, (v, t) in zip([3, 5], [(0.6, 0.9), (0.7, 0.95)])]
    s = U.summarize(rs)
    assert s["val"]["mean"] == pytest.approx(65.0) and s["val"]["std"] == pytest.approx(5.0)  # ddof=0
    assert s["test_max"]["mean"] == pytest.approx(92.5) and s["test_max"]["std"] == pytest.approx(2.5)
    assert s["val"]["values"] == pytest.approx([60, 70]) and s["test_max"]["values"] == pytest.approx([90, 95])
    assert s["n_seeds"] == 2 and s["seeds"] == [3, 5]
    assert s["train_time_s"] == pytest.approx(5.0) and s["eval_time_s"] == pytest.approx(8.0)


@pytest.mark.parametrize("method", ["autogcl", "graphcl"])
def test_make_summary_sets_a_row_beside_the_paper_figure_of_its_method(method):
    from autogcl.protocols.published import UNSUPERVISED, fmt
    from autogcl.protocols.report import unsupervised_table

    rs = [{"seed": i, "train_time_s": 1.0, "eval_time_s": 2.0, "selections": {"val": {"acc": v}, "test_max": {"acc": t}}}
          for i, (v, t) in enumerate([(0.6, 0.9), (0.7, 0.95)])]
    cfg = U.UnsupervisedConfig(dataset="PROTEINS", method=method, select="test_max")
    s = U.make_summary(cfg, rs)
    assert (s["protocol"], s["tag"], s["dataset"], s["method"], s["selection"]) == (
        "unsupervised", cfg.tag, "PROTEINS", method, "test_max")
    assert s["config"] == cfg.to_dict() and s["val"] == U.summarize(rs)["val"] and s["n_seeds"] == 2
    row = unsupervised_table([s]).splitlines()[-1]
    assert row.startswith(f"| PROTEINS | {cfg.tag[len('PROTEINS-'):]} | 2 | 65.00 ± 5.00 | 92.50 ± 2.50 |")
    assert row.endswith(fmt(UNSUPERVISED[method, "PROTEINS"]) + " |")


def test_a_resumed_seed_selects_over_every_evaluated_epoch(data_root, tmp_path, monkeypatch):
    """A seed stopped while evaluating its third epoch and resumed selects over all four: the
    evaluations before the stop come back with the checkpoint, and only epochs 3 and 4 are
    evaluated again."""
    class Stop(Exception):
        pass

    first = scripted_svm()

    def stopping(emb, y, *args, **kwargs):
        if first.calls == 2:
            raise Stop
        return first(emb, y)
    monkeypatch.setattr(U, "svm_evaluate", stopping)
    n = len(EPOCHS)
    cfg = U.UnsupervisedConfig(dataset="MUTAG", method="graphcl", epochs=n, eval_epochs=list(range(1, n + 1)), hidden=8)
    dataset = load_tu("MUTAG", data_root)
    with pytest.raises(Stop):
        U.run_sweep(cfg, dataset, [0], tmp_path, show_progress=False)
    rest = scripted_svm()
    rest.calls = 2  # the table's scores of epochs 3 and 4
    monkeypatch.setattr(U, "svm_evaluate", rest)
    summary = U.run_sweep(cfg, dataset, [0], tmp_path, resume=True, show_progress=False)
    res = U.make_units(cfg, [0], tmp_path)[0].result()
    assert rest.calls == n and sorted(res["evaluations"], key=int) == [str(e) for e in range(1, n + 1)]
    assert res["selections"]["val"]["epoch"] == ROW_VAL_EPOCH and res["selections"]["val"]["acc"] == VAL_TEST
    assert res["selections"]["test_max"]["epoch"] == ROW_TEST_MAX_EPOCH and summary["n_seeds"] == 1
