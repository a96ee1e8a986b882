"""Evaluators as objects, usable on any graph embeddings (a ``graphs x d`` tensor or array)
and labels: ``result = evaluator(embeddings, labels)``.

* :class:`SVMEvaluator`: the unsupervised protocol's RBF SVM (:func:`autogcl.eval.svm.svm_evaluate`:
  stratified ``folds``-fold CV, C chosen by inner CV on each training part, precomputed
  kernels), on one embedding matrix or on ``{epoch: matrix}`` with the epoch chosen by
  ``select``.
* :class:`LinearProbe`: a logistic-regression probe trained by gradient (Adam, full batch) on
  the device, in the same stratified CV; each training part keeps a stratified validation
  share, and the reported training epoch is chosen by ``select``.

``select="val"`` (default) chooses by validation accuracy only (the SVM's inner-CV accuracy,
the probe's validation share), then reports the test accuracy there; ``select="test_max"``
(the published protocol's choice) takes the best test accuracy, which is optimistic: it is
named wherever it is used. Both selections are always in the result (``"selections"``).

Embeddings from :class:`autogcl.AutoGCL` and :class:`autogcl.GraphCL` are sums over each
graph's nodes (their scale grows with graph size; on MUTAG norms of several hundred): the
SVM's RBF kernel copes (``gamma="scale"``), a gradient-trained probe needs them standardised,
which :class:`LinearProbe` does by default (``standardize=True``: mean and standard deviation
of each column from the training part of each fold only).

Labels are class indices or class names (strings, e.g. ``"active"``; sorted names become
indices). Graphs whose label is negative (-1: unlabeled), ``None`` or ``""`` are left out of the
evaluation (counted in the result's ``unlabeled_left_out``).
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.model_selection import StratifiedKFold, train_test_split

from ..choices import SELECTIONS, check_choice
from ..errors import ConfigError, DataError
from .svm import C_GRID, svm_protocol

__all__ = ["LinearProbe", "SVMEvaluator"]


def _encode_names(labels: np.ndarray) -> np.ndarray:
    """Class names (strings or other non-numbers; ``None`` or ``""``: unlabeled) as class
    indices in sorted order of the names (-1: unlabeled); numbers stay as they are."""
    if labels.dtype.kind not in "USO":
        return labels
    try:
        return labels.astype(float)  # numbers held as objects or numeric strings
    except (TypeError, ValueError):
        pass
    known = np.array([v is not None and v != "" and not (isinstance(v, float) and np.isnan(v)) for v in labels])
    try:
        names = sorted({str(v) for v in labels[known]})
    except TypeError as exc:
        raise DataError(f"labels must be class indices or class names, got {labels[:3].tolist()} ...") from exc
    index = {name: i for i, name in enumerate(names)}
    return np.array([index[str(v)] if k else -1 for v, k in zip(labels, known)], dtype=np.int64)


def _matrix_and_labels(emb, y) -> tuple[torch.Tensor, np.ndarray, int]:
    """Embeddings as a float tensor and labels as a NumPy int array, unlabeled (-1) left out;
    class names (strings) become class indices (:func:`_encode_names`)."""
    x = torch.as_tensor(emb.detach().cpu() if isinstance(emb, torch.Tensor) else np.asarray(emb)).float()
    if y is None:
        raise DataError("the evaluator needs a label per graph (got None)")
    labels = np.asarray(y.detach().cpu() if isinstance(y, torch.Tensor) else y).reshape(-1)
    if x.dim() != 2 or len(labels) != x.shape[0]:
        raise DataError(f"{tuple(x.shape)} embeddings but {len(labels)} labels (one label per row)")
    labels = _encode_names(labels)
    if labels.dtype == bool:
        labels = labels.astype(np.int64)
    if not np.issubdtype(labels.dtype, np.integer):
        if not np.all(np.isnan(labels.astype(float)) | (labels.astype(float) == np.round(labels.astype(float)))):
            raise DataError("labels must be class indices (integers; -1 for unlabeled)")
        labels = np.nan_to_num(labels.astype(float), nan=-1).astype(np.int64)
    keep = labels >= 0
    if not bool(torch.isfinite(x[torch.from_numpy(keep)]).all()):
        raise DataError("the embeddings contain NaN or inf")
    return x[torch.from_numpy(keep)], labels[keep], int((~keep).sum())


def _check_select(select: str) -> str:
    return check_choice("selection", select, SELECTIONS)


def _check_cv(labels: np.ndarray, folds: int, inner: int = 1) -> None:
    """At least two classes, each large enough for ``folds``-fold stratified CV and, inside
    each training part, for an ``inner``-fold split (or a held-out share: ``inner`` 2)."""
    counts = np.unique(labels, return_counts=True)[1]
    need = folds
    while need - -(-need // folds) < inner:  # members left in a training part (ceil division)
        need += 1
    if len(counts) < 2 or counts.min() < need:
        raise DataError(f"{folds}-fold stratified CV (and its inner split) needs at least two classes with {need} "
                        f"labeled graphs each; got class sizes {sorted(counts.tolist())}")


class SVMEvaluator:
    """The RBF SVM of the unsupervised protocol as an object (see the module docstring).

    ``evaluator(embeddings, labels)``: ``embeddings`` is one matrix or ``{epoch: matrix}``.
    Returns ``acc`` (the mean outer test accuracy at the selection), ``std`` (its standard
    deviation over the folds), ``select``, ``epoch``, ``selections`` (both) and
    ``evaluations`` (per epoch: :func:`autogcl.eval.svm.svm_evaluate`'s result)."""

    def __init__(self, folds: int = 10, inner_folds: int = 5, cs=C_GRID, seed: int = 0, n_jobs: int = 1,
                 select: str = "val"):
        self.folds, self.inner_folds, self.cs, self.seed, self.n_jobs = folds, inner_folds, tuple(cs), seed, n_jobs
        self.select = _check_select(select)

    def __call__(self, embeddings, labels) -> dict:
        mats = embeddings if isinstance(embeddings, dict) else {0: embeddings}
        prepared = {int(e): _matrix_and_labels(m, labels) for e, m in mats.items()}
        _, y, left_out = next(iter(prepared.values()))
        _check_cv(y, self.folds, self.inner_folds)
        res = svm_protocol({e: p[0].numpy() for e, p in prepared.items()}, y, self.folds, self.inner_folds,
                           self.cs, self.seed, self.n_jobs)
        chosen = res["selections"][self.select]
        ev = res["evaluations"][chosen["epoch"]]
        return {"acc": chosen["acc"], "std": ev["test_std"], "select": self.select, "epoch": chosen["epoch"],
                "selections": res["selections"], "evaluations": res["evaluations"], "unlabeled_left_out": left_out}

    def __repr__(self) -> str:
        return f"SVMEvaluator(folds={self.folds}, select={self.select!r})"


class LinearProbe:
    """A linear (multinomial logistic-regression) probe on frozen embeddings, trained by Adam
    on the full training part of each fold, on the device (see the module docstring).

    Args:
        folds: outer stratified CV folds (10).
        val_share: share of each training part held out (stratified) to choose the epoch.
        epochs: training epochs (full batch); accuracies are read every ``eval_every``.
        lr, weight_decay: Adam's.
        standardize: scale every column by the training part's mean and standard deviation.
        select: ``"val"`` (default) or ``"test_max"``.
        device: ``"auto"``, ``"cpu"``, ``"cuda"``...
        seed: fixes the folds, the validation share and the initial weights.

    Returns ``acc`` (mean test accuracy over the folds at the selection), ``std``,
    ``select``, ``selections`` (``val`` and ``test_max``: mean and std of the test accuracy,
    and the epoch chosen in each fold) and ``folds``.
    """

    def __init__(self, folds: int = 10, val_share: float = 0.1, epochs: int = 300, lr: float = 0.01,
                 weight_decay: float = 0.0, standardize: bool = True, select: str = "val", device="auto",
                 seed: int = 0, eval_every: int = 10):
        if folds < 2 or not 0 < val_share < 1 or epochs < 1 or eval_every < 1 or not lr > 0 or weight_decay < 0:
            raise ConfigError("LinearProbe: folds >= 2, 0 < val_share < 1, epochs >= 1, eval_every >= 1, lr > 0 and "
                              "weight_decay >= 0 are required")
        self.folds, self.val_share, self.epochs, self.lr = folds, val_share, epochs, lr
        self.weight_decay, self.standardize, self.device, self.seed = weight_decay, standardize, device, seed
        self.eval_every = eval_every
        self.select = _check_select(select)

    def _fit_fold(self, x: torch.Tensor, y: torch.Tensor, fit, val, test, classes: int, dev) -> dict:
        xs = x.to(dev)
        if self.standardize:
            mean, std = xs[fit].mean(0), xs[fit].std(0, unbiased=False)
            xs = (xs - mean) / torch.where(std > 0, std, torch.ones_like(std))
        yd = y.to(dev)
        gen = torch.Generator().manual_seed(self.seed)
        lin = torch.nn.Linear(x.shape[1], classes)
        with torch.no_grad():
            bound = 1.0 / max(1, x.shape[1]) ** 0.5
            lin.weight.copy_(torch.rand(lin.weight.shape, generator=gen) * 2 * bound - bound)
            lin.bias.zero_()
        lin = lin.to(dev)
        opt = torch.optim.Adam(lin.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        fit_t, val_t, test_t = (torch.as_tensor(i, device=dev) for i in (fit, val, test))
        checks = []
        for epoch in range(1, self.epochs + 1):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(lin(xs[fit_t]), yd[fit_t])
            loss.backward()
            opt.step()
            if epoch % self.eval_every == 0 or epoch == self.epochs:
                with torch.no_grad():
                    pred = lin(xs).argmax(1)
                    checks.append(torch.stack([(pred[val_t] == yd[val_t]).float().mean(),
                                               (pred[test_t] == yd[test_t]).float().mean()]))
        accs = torch.stack(checks).cpu().numpy()  # one transfer: (checks x [val, test])
        epochs = [min(self.epochs, (i + 1) * self.eval_every) for i in range(len(accs))]
        i_val, i_max = int(np.argmax(accs[:, 0])), int(np.argmax(accs[:, 1]))
        if not np.isfinite(float(loss.detach())):
            raise DataError("the linear probe's loss is not finite (standardize=True, or a lower lr)")
        return {"val": {"epoch": epochs[i_val], "val_acc": float(accs[i_val, 0]), "test_acc": float(accs[i_val, 1])},
                "test_max": {"epoch": epochs[i_max], "test_acc": float(accs[i_max, 1])}}

    def __call__(self, embeddings, labels) -> dict:
        from ..devices import resolve_device

        x, y_np, left_out = _matrix_and_labels(embeddings, labels)
        _check_cv(y_np, self.folds, 2)
        present, y_np = np.unique(y_np, return_inverse=True)  # the classes that occur, as 0..k-1
        classes = len(present)
        dev = resolve_device(self.device)
        y = torch.as_tensor(y_np, dtype=torch.long)
        outer = StratifiedKFold(n_splits=self.folds, shuffle=True, random_state=self.seed).split(np.zeros(len(y_np)), y_np)
        res = []
        for train, test in outer:
            share = max(self.val_share, len(present) / len(train))  # at least one graph of every class
            try:
                fit, val = train_test_split(train, test_size=share, stratify=y_np[train], random_state=self.seed)
            except ValueError as exc:
                raise DataError(f"LinearProbe: too few labeled graphs for a stratified validation share "
                                f"({exc})") from exc
            res.append(self._fit_fold(x, y, fit, val, test, classes, dev))
        selections = {}
        for name in SELECTIONS:
            t = np.array([r[name]["test_acc"] for r in res])
            selections[name] = {"acc": float(t.mean()), "std": float(t.std()),
                                "epochs": [r[name]["epoch"] for r in res]}
        chosen = selections[self.select]
        return {"acc": chosen["acc"], "std": chosen["std"], "select": self.select, "selections": selections,
                "folds": res, "unlabeled_left_out": left_out}

    def __repr__(self) -> str:
        return f"LinearProbe(folds={self.folds}, standardize={self.standardize}, select={self.select!r})"
