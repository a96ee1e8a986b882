"""Data splits: stratified k-fold with a labeled subset (semi-supervised protocol, docs/method.md).

Each fold has a test part (one stratified fold), a validation part (the previous fold, used
only by the ``val`` selection), the training part (the rest), and a labeled subset of the
training part of ``label_rate`` x the whole dataset drawn stratified by class; the rest of
the training part is unlabeled. The ``released`` split is the released code's: no
validation part (the training part is everything outside the test fold) and a labeled
subset drawn uniformly at random.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import StratifiedKFold, train_test_split

from ..choices import FOLD_SEED, SEMI_SPLITS, SPLIT_VAL_FOLD, check_choice
from ..errors import ConfigError, DataError


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
    def from_dict(cls, d: dict) -> SemiSplit:
        return cls(fold=d["fold"], **{k: np.asarray(d[k], dtype=np.int64)
                                      for k in ("train", "labeled", "unlabeled", "val", "test")})


def semi_splits(y, folds: int = 10, label_rate: float = 0.1, fold_seed: int = FOLD_SEED,
                label_seed: int = 0, split: str = SEMI_SPLITS[0]) -> list[SemiSplit]:
    """All folds of the semi-supervised protocol for labels ``y``.

    The test folds depend on ``fold_seed`` only (the same for every run, as published); the
    labeled subset also on ``label_seed``. ``split``: ``val_fold`` (a validation fold, a
    stratified labeled draw) or ``released`` (no validation fold: ``val`` is empty; a uniform
    labeled draw from the rest, as the released code's ``torch.randperm``).
    """
    y = np.asarray(y)
    n = len(y)
    if not 0 < label_rate < 1:
        raise ConfigError(f"label rate must be in (0, 1), got {label_rate}")
    check_choice("split", split, SEMI_SPLITS)
    tests = [te for _, te in StratifiedKFold(folds, shuffle=True, random_state=fold_seed).split(np.zeros(n), y)]
    n_labeled = int(n * label_rate)
    out = []
    for i in range(folds):
        test = tests[i]
        val = tests[i - 1] if split == SPLIT_VAL_FOLD else np.zeros(0, dtype=np.int64)
        mask = np.ones(n, dtype=bool)
        mask[test] = False
        mask[val] = False
        train = np.flatnonzero(mask)
        if n_labeled >= len(train):
            raise DataError(f"--label-rate {label_rate} asks for {n_labeled} labeled graphs but the "
                            f"training part of fold {i} has only {len(train)}")
        if n_labeled < 2:
            raise DataError(f"--label-rate {label_rate} labels {n_labeled} of {n} graphs; training needs at least 2 "
                            f"(use at least {2 / n:.3g})")
        try:
            labeled, unlabeled = train_test_split(train, train_size=n_labeled,
                                                  stratify=y[train] if split == SPLIT_VAL_FOLD else None,
                                                  random_state=label_seed * 1000 + i)
        except ValueError:  # a class too small to stratify: draw uniformly
            labeled, unlabeled = train_test_split(train, train_size=n_labeled,
                                                  random_state=label_seed * 1000 + i)
        out.append(SemiSplit(i, train, np.sort(labeled), np.sort(unlabeled), np.sort(val), np.sort(test)))
    return out


def stratified_holdout(indices, y, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(kept, held out)``: ``size`` of ``indices`` held out, stratified by their labels ``y``
    (uniformly where a class is too small to stratify), drawn from ``seed``; both sorted."""
    indices = np.asarray(indices)
    try:
        kept, held = train_test_split(indices, test_size=size, stratify=np.asarray(y), random_state=seed)
    except ValueError:  # a class too small to stratify: draw uniformly
        kept, held = train_test_split(indices, test_size=size, random_state=seed)
    return np.sort(kept), np.sort(held)


def murcko_scaffold(smiles: str) -> str:
    """The Bemis-Murcko scaffold SMILES of a molecule (with chirality; '' when acyclic)."""
    from rdkit.Chem.Scaffolds import MurckoScaffold

    from .molecules import rdkit

    rdkit()  # RDKit's own parse errors stay quiet; unparseable SMILES never get here
    return MurckoScaffold.MurckoScaffoldSmiles(smiles=smiles, includeChirality=True)


def scaffold_split(smiles: list[str], frac: tuple[float, float, float] = (0.8, 0.1, 0.1),
                   seed: int | None = None) -> dict:
    """Scaffold split: molecules grouped by Bemis-Murcko scaffold, no scaffold in two parts.

    ``seed=None``: the deterministic split of Hu et al. 2020: groups sorted largest first
    (ties: the group whose first molecule comes last, as in Hu et al.'s code), each group put
    whole into train until train would pass ``frac[0]``, then into valid until train + valid
    would pass ``frac[0] + frac[1]``, then into test. ``seed=int``: the balanced scaffold split
    (Yang et al. 2019, chemprop's ``scaffold_balanced``): the groups larger than half the test
    part go first, the others follow in an order drawn from ``seed``, and they fill the parts
    in the same way, so each seed gives another split of the same kind."""
    if abs(sum(frac) - 1.0) > 1e-6 or min(frac) < 0:
        raise ConfigError(f"split fractions must be non-negative and sum to 1, got {frac}")
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(smiles):
        groups.setdefault(murcko_scaffold(s), []).append(i)
    if seed is None:
        ordered = sorted(groups.values(), key=lambda g: (len(g), g[0]), reverse=True)
    else:
        rng = np.random.default_rng(seed)
        sets = list(groups.values())
        big = [g for g in sets if len(g) > frac[2] * len(smiles) / 2]
        small = [g for g in sets if len(g) <= frac[2] * len(smiles) / 2]
        big = [big[i] for i in rng.permutation(len(big))]
        small = [small[i] for i in rng.permutation(len(small))]
        ordered = big + small
    n = len(smiles)
    train_cut, valid_cut = frac[0] * n, (frac[0] + frac[1]) * n
    parts: dict[str, list[int]] = {"train": [], "valid": [], "test": []}
    for g in ordered:
        if len(parts["train"]) + len(g) > train_cut:
            if len(parts["train"]) + len(parts["valid"]) + len(g) > valid_cut:
                parts["test"].extend(g)
            else:
                parts["valid"].extend(g)
        else:
            parts["train"].extend(g)
    return {k: sorted(v) for k, v in parts.items()} | {"num_scaffolds": len(groups)}
