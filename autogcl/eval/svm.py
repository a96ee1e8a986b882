"""RBF-SVM evaluation of frozen graph embeddings (the unsupervised protocol of GraphCL and
AutoGCL, Section 4.1 of the AutoGCL paper).

Computes exactly what ``GridSearchCV(SVC(), {"C": grid}, cv=5)`` inside an outer
stratified 10-fold CV computes (``gamma="scale"``: ``1 / (d * X_fit.var())`` for every
fit), but much faster: the squared distances are computed once per embedding matrix, one
RBF kernel per fit set is shared by every C of the grid, and the fits run in parallel
processes: every (outer fold, inner fold) grid search at once, then every outer fold's test
fit (by default on every core, as many processes as memory allows: :func:`auto_jobs`).
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


def _inner_fit(x, d2, y, fit, val, cs):
    """The grid's validation accuracies of one inner fold."""
    return np.asarray(_fit_predict(d2, _gamma(x[fit]), fit, val, y, cs))


def _choose(inner_scores: list[np.ndarray], cs) -> tuple[int, float]:
    """C by the mean inner-CV accuracy (summed in fold order); the first best on ties, as
    GridSearchCV's rank."""
    scores = np.zeros(len(cs))
    for s in inner_scores:
        scores += s
    scores /= len(inner_scores)
    best = int(np.argmax(scores))
    return best, float(scores[best])


def _test_fit(x, d2, y, train, test, c):
    return _fit_predict(d2, _gamma(x[train]), train, test, y, [c])[0]


def _outer_fold(x, d2, y, train, test, cs, inner_folds):
    """One outer fold done serially (what the parallel path computes, task by task)."""
    inner = StratifiedKFold(n_splits=inner_folds)  # GridSearchCV's default for classifiers
    scores = [_inner_fit(x, d2, y, train[a], train[b], cs) for a, b in inner.split(train, y[train])]
    best, val = _choose(scores, cs)
    return {"C": cs[best], "val_acc": val, "test_acc": _test_fit(x, d2, y, train, test, cs[best])}


def _check_parts(y: np.ndarray, outer, inner_folds: int) -> None:
    """A :class:`DataError` (with the class sizes) when a part the SVM is fitted on would hold a
    single class, or a training part cannot be split for the inner search of C."""
    from ..errors import DataError

    sizes = dict(zip(*(v.tolist() for v in np.unique(y, return_counts=True))))
    for k, (tr, _) in enumerate(outer):
        fit_parts = [tr]
        if np.unique(y[tr], return_counts=True)[1].max() >= inner_folds:
            fit_parts += [tr[a] for a, _ in StratifiedKFold(n_splits=inner_folds).split(tr, y[tr])]
        else:
            fit_parts = []
        if not fit_parts or any(len(np.unique(y[p])) < 2 for p in fit_parts):
            raise DataError(f"the SVM protocol cannot be run on these labels: a part of outer fold {k} that an SVM "
                            f"is fitted on holds a single class, or cannot be split {inner_folds} ways (class sizes "
                            f"{sizes}); more graphs of the smaller classes are needed")


def _available_memory() -> int | None:
    """Bytes of memory available to new processes (Linux), or None when unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def auto_jobs(n_graphs: int, tasks: int, cores: int | None = None, memory: int | None = None) -> int:
    """Processes for the SVM's fits: every core (at most one per task), fewer when memory
    would not hold them (each holds about three ``n x n`` float64 kernel matrices)."""
    import os

    cores = cores or os.cpu_count() or 1
    jobs = max(1, min(cores, tasks))
    memory = _available_memory() if memory is None else memory
    if memory:
        per_job = 3 * 8 * n_graphs * n_graphs + (200 << 20)  # kernels, and an interpreter with NumPy/sklearn
        jobs = max(1, min(jobs, int(0.7 * memory) // per_job))
    return jobs


def svm_evaluate(
    emb: np.ndarray,
    y: np.ndarray,
    folds: int = 10,
    inner_folds: int = 5,
    cs=C_GRID,
    seed: int = 0,
    n_jobs: int | None = 1,
) -> dict:
    """Outer ``folds``-fold stratified CV; in each, C by inner ``inner_folds``-fold search.

    Returns mean/std test accuracy over the outer folds, the mean inner-CV accuracy of the
    chosen C (``val_acc``: the score an honest epoch selection may use), and per-fold details.
    ``n_jobs``: processes (``None``: :func:`auto_jobs`); the numbers do not depend on it.
    """
    from ..errors import DataError

    x = _numpy(emb).astype(np.float64)
    if not np.isfinite(x).all():
        raise DataError("the embeddings contain NaN or inf")
    if y is None:
        raise DataError("the SVM protocol needs a label per graph (y is None)")
    y = _numpy(y).reshape(-1)
    if len(y) != len(x):
        raise DataError(f"{len(x)} embeddings but {len(y)} labels (one label per row)")
    counts = np.unique(y, return_counts=True)[1]
    if len(counts) < 2 or len(y) < folds:
        raise DataError(f"the SVM protocol needs at least two classes and {folds} graphs for its {folds}-fold CV; "
                        f"got {len(y)} graph(s) in {len(counts)} class(es)")
    if counts.max() < folds:
        raise DataError(f"the SVM protocol needs a class of at least {folds} graphs for its {folds}-fold CV; "
                        f"the largest class has {counts.max()} of {len(y)} graph(s)")
    d2 = euclidean_distances(x, squared=True)
    outer = list(StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(x, y))
    _check_parts(y, outer, inner_folds)
    cs = list(cs)
    if n_jobs is None:
        n_jobs = auto_jobs(len(y), folds * inner_folds)
    n_jobs = min(n_jobs, folds * inner_folds)  # one process per task at most
    if n_jobs == 1:
        res = [_outer_fold(x, d2, y, tr, te, cs, inner_folds) for tr, te in outer]
    else:  # every inner grid search at once, then every outer fold's test fit
        inner = [list(StratifiedKFold(n_splits=inner_folds).split(tr, y[tr])) for tr, _ in outer]
        with Parallel(n_jobs=n_jobs) as pool:
            flat = pool(delayed(_inner_fit)(x, d2, y, tr[a], tr[b], cs)
                        for (tr, _), splits in zip(outer, inner) for a, b in splits)
            chosen = [_choose(flat[k * inner_folds:(k + 1) * inner_folds], cs) for k in range(folds)]
            tests = pool(delayed(_test_fit)(x, d2, y, tr, te, cs[best]) for (tr, te), (best, _) in zip(outer, chosen))
        res = [{"C": cs[best], "val_acc": val, "test_acc": t} for (best, val), t in zip(chosen, tests)]
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
