"""Fixtures of the molecule tests: small slices of the MoleculeNet files of the data mirror."""

from __future__ import annotations

import csv

import pytest

from tests.conftest import REPO

SHIPPED = REPO / "pretrained" / "autogcl-moses-fullx1.pt"


def read_slice(path, smiles_col: str, label_cols: list[str], rows: slice | list) -> tuple[list[str], list[list[float]]]:
    """SMILES and labels (NaN for an empty cell) of some rows of a MoleculeNet CSV."""
    with open(path, encoding="utf-8", newline="") as f:
        records = list(csv.DictReader(f))
    picked = records[rows] if isinstance(rows, slice) else [records[i] for i in rows]
    labels = [[float(r[c]) if r[c].strip() else float("nan") for c in label_cols] for r in picked]
    return [r[smiles_col] for r in picked], labels


@pytest.fixture(scope="session")
def tox21(data_root):
    """60 Tox21 molecules, 12 tasks with missing labels."""
    path = data_root / "moleculenet" / "tox21.csv"
    with open(path, encoding="utf-8") as f:
        tasks = [c for c in f.readline().strip().split(",") if c not in ("smiles", "mol_id")]
    smiles, y = read_slice(path, "smiles", tasks, slice(0, 60))
    return smiles, y, tasks


@pytest.fixture(scope="session")
def bbbp(data_root):
    """80 BBBP molecules (the first 40 rows and the last 40: both classes)."""
    path = data_root / "moleculenet" / "bbbp.csv"
    with open(path, encoding="utf-8") as f:
        n = sum(1 for _ in f) - 1
    return read_slice(path, "smiles", ["p_np"], list(range(40)) + list(range(n - 40, n)))


@pytest.fixture(scope="session")
def encoder():
    from autogcl.molecules import MoleculeEncoder

    return MoleculeEncoder.load("autogcl-moses-fullx1")
