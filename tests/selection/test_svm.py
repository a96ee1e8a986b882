"""The SVM's C grid and the unsupervised protocol's epoch choice pick by validation (inner-CV)
accuracy alone; ``test_max`` picks by the outer test accuracy and says so."""

from __future__ import annotations

import numpy as np
import pytest
from joblib import parallel_config

from autogcl.eval import svm
from autogcl.eval.svm import C_GRID, select_epoch, svm_evaluate, svm_protocol
from tests.selection.tables import EPOCHS, TEST_MAX, TEST_MAX_EPOCH, VAL_EPOCH, VAL_TEST

N, FOLDS, INNER = 100, 10, 5
#: accuracy of each C on the inner validation folds, and on the outer test folds: the
#: validation peak (C=0.1) is not the test peak (C=1000)
INNER_ACC = {1e-3: 0.50, 1e-2: 0.60, 1e-1: 0.80, 1.0: 0.70, 1e1: 0.70, 1e2: 0.65, 1e3: 0.55}
TEST_ACC = {1e-3: 0.40, 1e-2: 0.45, 1e-1: 0.61, 1.0: 0.70, 1e1: 0.80, 1e2: 0.85, 1e3: 0.99}


def fake_fit_predict(d2, gamma, fit_idx, pred_idx, y, cs):
    """Scores from the tables instead of SVM fits: a fit on an outer training part (90
    graphs) is scored on its test fold, a smaller one on an inner validation fold."""
    table = TEST_ACC if len(fit_idx) == N - N // FOLDS else INNER_ACC
    return [table[c] for c in cs]


def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(N, 4)), np.arange(N) % 2


@pytest.mark.parametrize("jobs", [1, 3])
def test_the_c_grid_is_chosen_on_inner_folds_never_on_the_test_fold(monkeypatch, jobs):
    monkeypatch.setattr(svm, "_fit_predict", fake_fit_predict)
    x, y = data()
    with parallel_config(backend="threading"):  # the patched scores reach the parallel path too
        res = svm_evaluate(x, y, FOLDS, INNER, n_jobs=jobs)
    assert [f["C"] for f in res["folds"]] == [0.1] * FOLDS
    assert res["val_acc"] == pytest.approx(0.80) and res["test_acc"] == pytest.approx(0.61)
    assert all(f["test_acc"] == pytest.approx(0.61) and f["val_acc"] == pytest.approx(0.80) for f in res["folds"])


def test_the_c_grid_breaks_ties_towards_the_first_c(monkeypatch):
    tied = {**INNER_ACC, 1e2: 0.80}  # C=0.1 and C=100 tie on validation
    monkeypatch.setattr(svm, "_fit_predict", lambda d2, g, f, p, y, cs: [
        (TEST_ACC if len(f) == N - N // FOLDS else tied)[c] for c in cs])
    x, y = data()
    assert {f["C"] for f in svm_evaluate(x, y, FOLDS, INNER)["folds"]} == {0.1}


def test_choose_averages_the_inner_folds():
    # fold means: C0 0.55, C1 0.60, C2 0.50; C1 wins although C0 has the single best fold
    scores = [np.array([0.9, 0.6, 0.5]), np.array([0.2, 0.6, 0.5])]
    assert svm._choose(scores, [1, 2, 3]) == (1, pytest.approx(0.6))
    assert svm._choose([np.array([0.7, 0.7, 0.1])], [1, 2, 3]) == (0, pytest.approx(0.7))  # first best on ties


def evals(table=EPOCHS, key=int):
    return {key(e): {"val_acc": v, "test_acc": t, "test_std": 0.0, "folds": []} for e, (v, t) in table.items()}


@pytest.mark.parametrize("key", [int, str])  # a result.json round trip gives string epochs
def test_select_epoch_val_reads_validation_only_and_test_max_reads_test(key):
    sel = select_epoch(evals(key=key))
    assert sel["val"]["epoch"] == VAL_EPOCH and sel["val"]["acc"] == VAL_TEST
    assert sel["val"]["score"] == EPOCHS[VAL_EPOCH][0]
    assert sel["test_max"]["epoch"] == TEST_MAX_EPOCH and sel["test_max"]["acc"] == TEST_MAX
    assert "test" not in sel["val"]["criterion"] and "inner-CV" in sel["val"]["criterion"]
    assert "test" in sel["test_max"]["criterion"]


def test_string_epochs_tie_towards_the_earlier_epoch_by_number():
    tied = {"100": (0.9, 0.1), "20": (0.9, 0.5), "3": (0.1, 0.5)}  # "100" < "20" as text
    sel = select_epoch(evals(tied, key=str))
    assert sel["val"]["epoch"] == 20 and sel["test_max"]["epoch"] == 3


def test_labels_as_a_column_are_the_same_labels():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(40, 3))
    y = (x[:, 0] > 0).astype(int)
    assert svm_evaluate(x, y.reshape(-1, 1), 4, 2) == svm_evaluate(x, y, 4, 2)


def test_select_epoch_ignores_the_order_of_the_epochs():
    backwards = dict(reversed(list(evals().items())))
    assert select_epoch(backwards) == select_epoch(evals())


def test_svm_protocol_reports_both_selections_of_its_epochs(monkeypatch):
    table = {1: (0.9, 0.5), 2: (0.6, 0.8)}
    embs = {k: np.full((N, 2), k, dtype=float) for k in table}  # each epoch's matrix holds its number
    monkeypatch.setattr(svm, "svm_evaluate", lambda emb, *a, **k: {
        "val_acc": table[int(emb[0, 0])][0], "test_acc": table[int(emb[0, 0])][1], "test_std": 0.0, "folds": []})
    res = svm_protocol(embs, np.arange(N) % 2)
    assert set(res["evaluations"]) == {1, 2}
    assert res["selections"]["val"]["epoch"] == 1 and res["selections"]["val"]["acc"] == 0.5
    assert res["selections"]["test_max"]["epoch"] == 2 and res["selections"]["test_max"]["acc"] == 0.8


@pytest.mark.parametrize("jobs", [1, 4])
def test_every_fold_matches_gridsearchcv_c_validation_score_and_test_accuracy(jobs):
    """The scores the selections read are GridSearchCV(SVC())'s: its C, its best_score_ (our
    val_acc) and the outer fold's test accuracy, fold by fold, on both code paths."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.svm import SVC

    rng = np.random.default_rng(3)
    x = rng.normal(size=(90, 6)) * np.array([5, 1, 1, 0.2, 3, 1])
    y = ((x[:, 0] / 5 + x[:, 1] + 0.8 * rng.normal(size=90)) > 0).astype(int)
    with parallel_config(backend="threading"):
        res = svm_evaluate(x, y, folds=5, inner_folds=3, seed=2, n_jobs=jobs)
    want = []
    for tr, te in StratifiedKFold(5, shuffle=True, random_state=2).split(x, y):
        g = GridSearchCV(SVC(), {"C": list(C_GRID)}, cv=3).fit(x[tr], y[tr])
        want.append({"C": g.best_params_["C"], "val_acc": g.best_score_, "test_acc": (g.predict(x[te]) == y[te]).mean()})
    # outcomes of two kernel routes (SVC's own RBF, precomputed BLAS distances), not bit-exact by
    # construction: libsvm's 1e-3 tolerance moves decision values up to 1.4e-3 here; in every fit
    # the smallest |decision| is at least 12 times the routes' difference (measured 2026-11-26)
    assert [f["C"] for f in res["folds"]] == [w["C"] for w in want]
    assert [f["val_acc"] for f in res["folds"]] == pytest.approx([w["val_acc"] for w in want], abs=1e-12)
    assert [f["test_acc"] for f in res["folds"]] == pytest.approx([w["test_acc"] for w in want], abs=1e-12)
    assert len({w["C"] for w in want}) > 1  # the folds do not all choose the same C: the grid decides
    assert res["test_acc"] == pytest.approx(np.mean([w["test_acc"] for w in want]))
    assert res["test_std"] == pytest.approx(np.std([w["test_acc"] for w in want]))
    assert res["val_acc"] == pytest.approx(np.mean([w["val_acc"] for w in want]))


def test_a_constant_embedding_gets_gamma_one_as_sklearn():
    x = np.ones((40, 3))
    assert svm._gamma(x) == 1.0 and svm._gamma(np.arange(6.0).reshape(3, 2)) == pytest.approx(1 / (2 * np.var(np.arange(6.0))))


def test_the_defaults_run_the_published_protocol():
    """Called without options, the SVM runs the paper's protocol: 10 outer folds (seed 0),
    C from 1e-3 to 1e3 by 5 inner folds. Checked by what a call does (the folds and Cs it
    reports, its figures), not by the signature, which mutmut's wrapper hides."""
    rng = np.random.default_rng(6)
    x = rng.normal(size=(40, 3)) * np.array([4.0, 1.0, 0.1])
    y = ((x[:, 0] / 4 + x[:, 1] + 0.5 * rng.normal(size=40)) > 0).astype(int)
    published = svm_evaluate(x, y, folds=10, inner_folds=5, cs=(1e-3, 1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3), seed=0, n_jobs=1)
    assert len(published["folds"]) == 10 and len({f["C"] for f in published["folds"]}) > 1
    assert svm_evaluate(x, y) == published
    for other in ({"folds": 9}, {"inner_folds": 4}, {"seed": 1}):
        assert svm_evaluate(x, y, **other) != published  # each default shows in the figures of this data
    assert svm_protocol({4: x}, y) == {"evaluations": {4: published}, "selections": select_epoch({4: published})}


def test_svm_protocol_passes_its_options_to_every_evaluation():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(60, 3))
    y = (x[:, 0] > 0).astype(int)
    direct = svm_evaluate(x, y, 5, 3, cs=(0.1, 10.0), seed=2)
    res = svm_protocol({3: x, 7: x[:, ::-1].copy()}, y, folds=5, inner_folds=3, cs=(0.1, 10.0), seed=2)
    assert res["evaluations"][3] == direct and len(direct["folds"]) == 5 and {f["C"] for f in direct["folds"]} <= {0.1, 10.0}
    single = svm_protocol(x, y, folds=5, inner_folds=3, cs=(0.1, 10.0), seed=2)  # one matrix is epoch 0
    assert list(single["evaluations"]) == [0] and single["selections"]["val"]["epoch"] == 0
    assert single["evaluations"][0] == direct
