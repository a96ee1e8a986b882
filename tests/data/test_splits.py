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


def test_released_split_has_no_validation_fold_and_draws_uniformly():
    y = labels()
    ours, rel = semi_splits(y), semi_splits(y, split="released")
    counts = []
    for o, r in zip(ours, rel):
        assert np.array_equal(o.test, r.test) and len(r.val) == 0  # same test folds, no validation fold
        assert np.array_equal(r.train, np.setdiff1d(np.arange(600), r.test))  # the other 90%
        assert len(r.labeled) == 60 and set(r.train) == set(r.labeled) | set(r.unlabeled)
        assert not set(r.labeled) & set(r.unlabeled)
        counts.append(np.bincount(y[r.labeled], minlength=3).tolist())
    assert any(c != [30, 20, 10] for c in counts)  # uniform draws: not every fold is stratified
    again = semi_splits(y, split="released")
    assert all(np.array_equal(a.labeled, b.labeled) for a, b in zip(rel, again))
    assert any(not np.array_equal(a.labeled, b.labeled)
               for a, b in zip(rel, semi_splits(y, split="released", label_seed=1)))
    with pytest.raises(ValueError, match="unknown split 'relased'"):
        semi_splits(y, split="relased")


def test_round_trip_and_bad_rate():
    s = semi_splits(labels())[3]
    t = SemiSplit.from_dict(s.to_dict())
    assert t.fold == 3 and np.array_equal(t.unlabeled, s.unlabeled)
    with pytest.raises(ValueError, match="label rate"):
        semi_splits(labels(), label_rate=1.5)


def test_scaffold_split_keeps_scaffolds_whole():
    from autogcl.data.splits import murcko_scaffold, scaffold_split

    smiles = (["c1ccccc1C"] * 3 + ["c1ccccc1CC", "c1ccccc1O"]  # benzene scaffold: 5
              + ["C1CCCCC1N", "C1CCCCC1O"]  # cyclohexane: 2
              + ["c1ccncc1", "CCO", "CCN"])  # pyridine: 1, acyclic '': 2
    split = scaffold_split(smiles, (0.6, 0.2, 0.2))
    parts = {k: set(split[k]) for k in ("train", "valid", "test")}
    assert set().union(*parts.values()) == set(range(len(smiles)))
    assert sum(len(v) for v in parts.values()) == len(smiles)
    owner = {}
    for name, idx in parts.items():
        for i in idx:
            s = murcko_scaffold(smiles[i])
            assert owner.setdefault(s, name) == name  # no scaffold in two parts
    # largest first: benzene (5) to train; of the two pairs the one whose first molecule
    # comes last goes first: acyclic (8, 9) would pass 6 -> valid; cyclohexane would pass
    # train and train + valid -> test; pyridine (1) still fits in train
    assert parts == {"train": {0, 1, 2, 3, 4, 7}, "valid": {8, 9}, "test": {5, 6}}
    assert split["num_scaffolds"] == 4
    with pytest.raises(ValueError):
        scaffold_split(smiles, (0.5, 0.2, 0.2))


def test_scaffold_split_sizes_on_bbbp(data_root):
    from autogcl.data.moleculenet import load_moleculenet
    from autogcl.data.splits import scaffold_split

    ds = load_moleculenet("bbbp", data_root, workers=1, progress=False)
    split = scaffold_split(ds.meta["smiles"])
    assert [len(split[k]) for k in ("train", "valid", "test")] == [1631, 204, 204]  # Hu et al.'s sizes


def test_a_seeded_scaffold_split_is_balanced_drawn_from_the_seed_and_keeps_scaffolds_whole(data_root):
    """The balanced scaffold split (seed=int): parts near 80/10/10, no scaffold in two parts,
    the same split for the same seed and another for another seed; seed=None is the
    deterministic split of Hu et al. (unchanged)."""
    import csv

    from autogcl.data.splits import murcko_scaffold, scaffold_split

    with open(data_root / "moleculenet" / "bace.csv", encoding="utf-8") as f:
        smiles = [r["mol"] for r in csv.DictReader(f)][:400]
    a, b, c = (scaffold_split(smiles, (0.8, 0.1, 0.1), seed=s) for s in (0, 0, 1))
    assert a == b and a["train"] != c["train"]
    n = len(smiles)
    assert sorted(a["train"] + a["valid"] + a["test"]) == list(range(n))
    assert abs(len(a["train"]) - 0.8 * n) <= 0.1 * n and len(a["valid"]) > 0 and len(a["test"]) > 0
    owner = {}
    for part in ("train", "valid", "test"):
        for i in a[part]:
            assert owner.setdefault(murcko_scaffold(smiles[i]), part) == part
    assert scaffold_split(smiles) == scaffold_split(smiles, seed=None)
