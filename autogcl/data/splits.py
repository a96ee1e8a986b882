"""Data splits: stratified k-fold with a labeled subset (semi-supervised protocol, SPEC 3.2).

Each fold has a test part (one stratified fold), a validation part (the previous fold, used
only by the ``val`` selection), the training part (the rest), and a labeled subset of the
training part of ``label_rate`` x the whole dataset drawn stratified by class; the rest of
the training part is unlabeled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import StratifiedKFold, train_test_split

FOLD_SEED = 12345


@dataclass
class SemiSplit:
    fold: int
    train: np.ndarray  # training part (labeled + unlabeled)
    labeled: np.ndarray
    unlabeled: np.ndarray
    val: np.ndarray
    test: np.ndarray

    def to_dict(self) -> dict:
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in self.__dict__.items()}

    @classmethod
    def from_dict(cls, d: dict) -> "SemiSplit":
        return cls(fold=d["fold"], **{k: np.asarray(d[k], dtype=np.int64)
                                      for k in ("train", "labeled", "unlabeled", "val", "test")})


def semi_splits(y, folds: int = 10, label_rate: float = 0.1, fold_seed: int = FOLD_SEED,
                label_seed: int = 0) -> list[SemiSplit]:
    """All folds of the semi-supervised protocol for labels ``y``.

    The test folds depend on ``fold_seed`` only (the same for every run, as published); the
    labeled subset also on ``label_seed``.
    """
    y = np.asarray(y)
    n = len(y)
    if not 0 < label_rate < 1:
        raise ValueError(f"label rate must be in (0, 1), got {label_rate}")
    tests = [te for _, te in StratifiedKFold(folds, shuffle=True, random_state=fold_seed).split(np.zeros(n), y)]
    n_labeled = int(n * label_rate)
    out = []
    for i in range(folds):
        test, val = tests[i], tests[i - 1]
        mask = np.ones(n, dtype=bool)
        mask[test] = False
        mask[val] = False
        train = np.flatnonzero(mask)
        if n_labeled >= len(train):
            raise ValueError(f"label rate {label_rate} asks for {n_labeled} labeled graphs but the "
                             f"training part of fold {i} has only {len(train)}")
        try:
            labeled, unlabeled = train_test_split(train, train_size=n_labeled, stratify=y[train],
                                                  random_state=label_seed * 1000 + i)
        except ValueError:  # a class too small to stratify: draw uniformly
            labeled, unlabeled = train_test_split(train, train_size=n_labeled,
                                                  random_state=label_seed * 1000 + i)
        out.append(SemiSplit(i, train, np.sort(labeled), np.sort(unlabeled), np.sort(val), np.sort(test)))
    return out
