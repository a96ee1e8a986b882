"""RBF-SVM evaluation of frozen graph embeddings (the unsupervised protocol of GraphCL and
AutoGCL, Section 4.1 of the AutoGCL paper).

Computes exactly what ``GridSearchCV(SVC(), {"C": grid}, cv=5)`` inside an outer
stratified 10-fold CV computes (``gamma="scale"``: ``1 / (d * X_fit.var())`` for every
fit), but much faster: the squared distances are computed once per embedding matrix, one
RBF kernel per fit set is shared by every C of the grid, and the outer folds run in
parallel processes.
"""

from __future__ import annotations

import numpy as np
from joblib import Parallel, delayed
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from ..choices import SELECTIONS  # noqa: F401 (re-exported)

C_GRID = (1e-3, 1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3)


def _numpy(a) -> np.ndarray:
    """NumPy at the boundary: tensors (any device) and arrays alike. (This module never
    imports torch: the SVM's worker processes import it, and they need only NumPy.)"""
    if hasattr(a, "detach") and hasattr(a, "cpu"):  # a torch.Tensor
        return a.detach().cpu().numpy()
    return np.asarray(a)


def _gamma(x: np.ndarray) -> float:
    """sklearn's ``gamma="scale"`` for the data a model is fitted on."""
    var = x.var()
    return 1.0 / (x.shape[1] * var) if var != 0 else 1.0


def _fit_predict(d2: np.ndarray, gamma: float, fit_idx, pred_idx, y, cs):
    """Accuracy on ``pred_idx`` of one SVC per C, all sharing one precomputed kernel."""
    k_fit = np.exp(-gamma * d2[np.ix_(fit_idx, fit_idx)])
    k_pred = np.exp(-gamma * d2[np.ix_(pred_idx, fit_idx)])
    accs = []
    for c in cs:
        clf = SVC(C=c, kernel="precomputed").fit(k_fit, y[fit_idx])
        accs.append(float((clf.predict(k_pred) == y[pred_idx]).mean()))
    return accs


def _outer_fold(x, d2, y, train, test, cs, inner_folds):
    inner = StratifiedKFold(n_splits=inner_folds)  # GridSearchCV's default for classifiers
    scores = np.zeros(len(cs))
    splits = list(inner.split(train, y[train]))
    for a, b in splits:
        fit, val = train[a], train[b]
        scores += np.asarray(_fit_predict(d2, _gamma(x[fit]), fit, val, y, cs))
    scores /= len(splits)
    best = int(np.argmax(scores))  # first best, as GridSearchCV's rank ties
    test_acc = _fit_predict(d2, _gamma(x[train]), train, test, y, [cs[best]])[0]
    return {"C": cs[best], "val_acc": float(scores[best]), "test_acc": test_acc}


def svm_evaluate(
    emb: np.ndarray,
    y: np.ndarray,
    folds: int = 10,
    inner_folds: int = 5,
    cs=C_GRID,
    seed: int = 0,
    n_jobs: int = 1,
) -> dict:
    """Outer ``folds``-fold stratified CV; in each, C by inner ``inner_folds``-fold search.

    Returns mean/std test accuracy over the outer folds, the mean inner-CV accuracy of the
    chosen C (``val_acc``: the score an honest epoch selection may use), and per-fold details.
    """
    x = _numpy(emb).astype(np.float64)
    if not np.isfinite(x).all():
        raise ValueError("embeddings contain NaN or inf")
    if y is None:
        raise ValueError("the SVM protocol needs a label per graph (y is None)")
    y = _numpy(y).reshape(-1)
    if len(y) != len(x):
        raise ValueError(f"{len(x)} embeddings but {len(y)} labels")
    counts = np.unique(y, return_counts=True)[1]
    if len(counts) < 2 or len(y) < folds:
        from ..errors import DataError

        raise DataError(f"the SVM protocol needs at least two classes and {folds} graphs for its {folds}-fold CV; "
                        f"got {len(y)} graph(s) in {len(counts)} class(es)")
    d2 = euclidean_distances(x, squared=True)
    outer = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    n_jobs = min(n_jobs, folds)  # one process per outer fold at most (a huge --jobs would start that many)
    jobs = (delayed(_outer_fold)(x, d2, y, tr, te, list(cs), inner_folds) for tr, te in outer.split(x, y))
    res = Parallel(n_jobs=n_jobs)(jobs) if n_jobs != 1 else [j[0](*j[1], **j[2]) for j in jobs]
    test = np.array([r["test_acc"] for r in res])
    return {
        "test_acc": float(test.mean()),
        "test_std": float(test.std()),
        "val_acc": float(np.mean([r["val_acc"] for r in res])),
        "folds": res,
    }


def select_epoch(evals: dict) -> dict:
    """Both selections of the reported epoch over SVM evaluations (``epoch -> svm_evaluate``):

    * ``val``: the epoch with the best inner-CV accuracy (never the test folds), then its test
      accuracy (the honest default);
    * ``test_max``: the best outer test accuracy over the epochs (the published protocol).
    Ties go to the first epoch."""
    epochs = sorted(evals, key=int)
    e_val = max(epochs, key=lambda e: evals[e]["val_acc"])
    e_max = max(epochs, key=lambda e: evals[e]["test_acc"])
    return {
        "val": {"epoch": int(e_val), "acc": evals[e_val]["test_acc"], "criterion": "inner-CV accuracy of the SVM",
                "score": evals[e_val]["val_acc"]},
        "test_max": {"epoch": int(e_max), "acc": evals[e_max]["test_acc"], "criterion": "best outer test accuracy"},
    }


def svm_protocol(embeddings: dict, y, folds: int = 10, inner_folds: int = 5, cs=C_GRID, seed: int = 0,
                 n_jobs: int = 1) -> dict:
    """The unsupervised protocol's evaluation from Python: :func:`svm_evaluate` the embeddings
    of every evaluated epoch (``{epoch: (graphs x d) tensor or array}``; one matrix counts as
    epoch 0) and both selections of :func:`select_epoch`."""
    if not isinstance(embeddings, dict):
        embeddings = {0: embeddings}
    evals = {int(e): svm_evaluate(emb, y, folds, inner_folds, cs, seed, n_jobs) for e, emb in embeddings.items()}
    return {"evaluations": evals, "selections": select_epoch(evals)}
