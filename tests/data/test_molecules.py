"""Molecule featurisation (Hu et al. ids) and the SMILES/CSV readers."""

from __future__ import annotations

import gzip
import math

import numpy as np
import pytest

from autogcl.data.molecules import (
    featurize,
    iter_smiles,
    mol_to_arrays,
    parse_smiles,
    read_labeled_csv,
    smiles_to_graph,
)
from autogcl.errors import DataError


def test_ethanol_counts_and_ids():
    g = smiles_to_graph("CCO")
    assert g.x.tolist() == [[5, 0], [5, 0], [7, 0]]  # C = 6 -> id 5, O = 8 -> id 7
    assert g.edge_index.shape == (2, 4)  # two bonds, both directions
    assert sorted(map(tuple, g.edge_index.t().tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    assert g.edge_attr.tolist() == [[0, 0]] * 4  # single bonds, no direction


def test_aromatic_double_triple_bonds():
    benzene = smiles_to_graph("c1ccccc1")
    assert benzene.num_nodes == 6 and benzene.edge_index.shape[1] == 12
    assert set(benzene.edge_attr[:, 0].tolist()) == {3}
    assert set(smiles_to_graph("C=C").edge_attr[:, 0].tolist()) == {1}
    assert set(smiles_to_graph("C#N").edge_attr[:, 0].tolist()) == {2}


def test_chirality_and_bond_direction():
    cw = smiles_to_graph("N[C@@H](C)C(=O)O")
    ccw = smiles_to_graph("N[C@H](C)C(=O)O")
    assert {cw.x[1, 1].item(), ccw.x[1, 1].item()} == {1, 2}
    assert cw.x[[0, 2, 3], 1].tolist() == [0, 0, 0]
    trans = smiles_to_graph("F/C=C/F")
    assert set(trans.edge_attr[:, 1].tolist()) >= {1}  # a directed single bond


def test_single_atom_and_charged_fragments():
    g = smiles_to_graph("[Na+].[Cl-]")
    assert g.x[:, 0].tolist() == [10, 16] and g.edge_index.shape == (2, 0) and g.edge_attr.shape == (0, 2)
    x, _ei, _ea = mol_to_arrays(parse_smiles("*C")[0])  # dummy atom gets the unused id 118
    assert x[:, 0].tolist() == [118, 5]


def test_bad_smiles_are_skipped_and_counted():
    smiles = ["CCO", "C1CC", "", "not a smiles", "c1ccccc1"]
    res = featurize(smiles, rows=[2, 3, 4, 5, 6], source="t.csv", workers=1, progress=False)
    assert res.index == [0, 4]
    assert [(s.row, s.smiles) for s in res.skipped] == [(3, "C1CC"), (4, ""), (5, "not a smiles")]
    assert "t.csv, row 3" in str(res.skipped[0])


def test_featurize_in_parallel_matches_serial():
    smiles = ["CCO", "c1ccccc1", "CC(=O)O", "bad(", "CCN"] * 3
    a = featurize(smiles, workers=1, block=4, progress=False)
    b = featurize(smiles, workers=2, block=4, progress=False)
    assert a.index == b.index and len(a.skipped) == len(b.skipped) == 3
    for (x1, e1, a1), (x2, e2, a2) in zip(a.arrays, b.arrays):
        assert np.array_equal(x1, x2) and np.array_equal(e1, e2) and np.array_equal(a1, a2)


def test_read_labeled_csv_missing_labels(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("smiles,a,b\nCCO,1,\nCCC,,0\n")
    smiles, lines, y, tasks = read_labeled_csv(p, "smiles", None)
    assert smiles == ["CCO", "CCC"] and lines == [2, 3] and tasks == ["a", "b"]
    assert y[0, 0] == 1 and math.isnan(y[0, 1]) and math.isnan(y[1, 0]) and y[1, 1] == 0


def test_read_labeled_csv_errors_name_file_and_line(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("smiles,a\nCCO,1\nCCC,yes\n")
    with pytest.raises(DataError, match=r"m.csv:3: label 'yes'"):
        read_labeled_csv(p, "smiles", ["a"])
    with pytest.raises(DataError, match="no SMILES column 'mol'"):
        read_labeled_csv(p, "mol", ["a"])
    with pytest.raises(DataError, match=r"no label column\(s\) \['z'\]"):
        read_labeled_csv(p, "smiles", ["z"])
    p.write_text("smiles,a\nCCO,1,3\n")
    with pytest.raises(DataError, match="m.csv:2: 3 fields"):
        read_labeled_csv(p, "smiles", ["a"])
    with pytest.raises(DataError, match="no such file"):
        read_labeled_csv(tmp_path / "nope.csv", "smiles", ["a"])


def test_iter_smiles_csv_gz_and_smi(tmp_path):
    p = tmp_path / "c.csv.gz"
    with gzip.open(p, "wt") as f:
        f.write("id,SMILES\n1,CCO\n2,CCN\n")
    assert list(iter_smiles(p)) == [(2, "CCO"), (3, "CCN")]
    s = tmp_path / "c.smi"
    s.write_text("CCO ethanol\n\nc1ccccc1 benzene\n")
    assert list(iter_smiles(s)) == [(1, "CCO"), (3, "c1ccccc1")]


def test_rows_are_file_lines_and_nan_is_missing(tmp_path):
    p = tmp_path / "q.csv"
    p.write_text('smiles,name,a\nCCO,"two\nlines",1\nCCN,x,nan\nC1CC,y,yes\n')
    with pytest.raises(DataError, match=r"q.csv:5: label 'yes'"):  # record 3 starts on line 5
        read_labeled_csv(p, "smiles", ["a"])
    p.write_text('smiles,name,a\nCCO,"two\nlines",1\nCCN,x,nan\n')
    _, lines, y, _ = read_labeled_csv(p, "smiles", ["a"])
    assert lines == [2, 4] and math.isnan(y[1, 0])


def test_featurising_workers_die_on_sigterm_under_the_commands_signal_handling(capfd):
    """A command (:func:`autogcl.preempt.handling`) catches SIGTERM; the featurising pool's
    forked workers inherited that handler, so ``Pool.terminate`` at the pool's end made them
    raise inside the queue's lock: a traceback per worker, and a lock left held could make the
    parent wait forever (transfer HIV hung there). The workers must take SIGTERM's default (die)
    and ignore SIGINT (the parent's to handle), and a pooled featurisation ends quietly."""
    import signal

    from autogcl import preempt
    from autogcl.data.molecules import featurize, featurize_pool

    with preempt.handling():
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)  # the handler is on
        with featurize_pool(2) as pool:
            got = pool.map(signal.getsignal, [signal.SIGTERM, signal.SIGINT] * 2, chunksize=1)
        assert got == [signal.SIG_DFL, signal.SIG_IGN] * 2
        capfd.readouterr()
        for _ in range(5):  # before the fix, about one pool end in two printed a worker's traceback
            res = featurize(["CCO", "c1ccccc1", "CC(=O)N", "CCN"] * 50, workers=2, block=20, progress=False)
            assert len(res.arrays) == 200
    assert "Preempted" not in capfd.readouterr().err
