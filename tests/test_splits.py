import numpy as np
import pytest

from autogcl.data.splits import SemiSplit, semi_splits


def labels():
    return np.array([0] * 300 + [1] * 200 + [2] * 100)


def test_parts_are_disjoint_and_cover_the_data():
    for s in semi_splits(labels()):
        parts = [s.labeled, s.unlabeled, s.val, s.test]
        assert sum(len(p) for p in parts) == 600
        assert len(np.unique(np.concatenate(parts))) == 600
        assert set(s.train) == set(s.labeled) | set(s.unlabeled)


def test_sizes_and_stratification():
    y = labels()
    splits = semi_splits(y, folds=10, label_rate=0.1)
    assert len(splits) == 10
    for s in splits:
        assert len(s.test) == 60 and len(s.val) == 60 and len(s.labeled) == 60
        assert np.bincount(y[s.test]).tolist() == [30, 20, 10]
        assert np.bincount(y[s.labeled]).tolist() == [30, 20, 10]
    # every graph is tested exactly once; validation is the previous fold's test part
    assert sorted(np.concatenate([s.test for s in splits]).tolist()) == list(range(600))
    assert all(np.array_equal(splits[i].val, splits[i - 1].test) for i in range(10))


def test_reproducible_from_the_seeds():
    a, b = semi_splits(labels()), semi_splits(labels())
    assert all(np.array_equal(x.labeled, z.labeled) and np.array_equal(x.test, z.test) for x, z in zip(a, b))
    c = semi_splits(labels(), label_seed=1)
    assert all(np.array_equal(x.test, z.test) for x, z in zip(a, c))
    assert any(not np.array_equal(x.labeled, z.labeled) for x, z in zip(a, c))
    d = semi_splits(labels(), fold_seed=1)
    assert any(not np.array_equal(x.test, z.test) for x, z in zip(a, d))


def test_round_trip_and_bad_rate():
    s = semi_splits(labels())[3]
    t = SemiSplit.from_dict(s.to_dict())
    assert t.fold == 3 and np.array_equal(t.unlabeled, s.unlabeled)
    with pytest.raises(ValueError, match="label rate"):
        semi_splits(labels(), label_rate=1.5)
