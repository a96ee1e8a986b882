"""Fixtures shared by the estimator tests."""

import gzip

import pytest


@pytest.fixture
def corpus(data_root, tmp_path):
    """A CSV of the first 80 MOSES SMILES of the mirror (two chunks of 40)."""
    with gzip.open(data_root / "pretrain" / "moses_train.csv.gz", "rt") as f:
        lines = [next(f) for _ in range(81)]  # header + 80 SMILES: 2 chunks
    p = tmp_path / "slice.csv"
    p.write_text("".join(lines))
    return p
