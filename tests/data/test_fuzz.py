"""Property-based fuzzing of the readers that take users' files: the TU reader and the
molecule CSV reader. Whatever the bytes, reading gives a consistent dataset or a
:class:`DataError` naming the file (never another exception, never a silently wrong one)."""

import gzip
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autogcl.data.datasets import build_tu
from autogcl.data.moleculenet import build_molecule_dataset
from autogcl.errors import AutoGCLError, DataError

from .test_tu import write_tu

FUZZ = settings(max_examples=int(os.environ.get("AUTOGCL_FUZZ_EXAMPLES", "150")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# --- TU files --------------------------------------------------------------------------------

#: characters a damaged or hand-edited TU file may hold
TU_ALPHABET = "0123456789 ,.-+\t\neE" + "naif\r;x"


@st.composite
def tu_files(draw):
    """A valid small TU dataset, then damaged by a few random edits (or not at all)."""
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    ind, edges, start = [], [], 0
    for g, n in enumerate(sizes, 1):
        ind += [g] * n
        pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=6))
        for a, b in pairs:
            edges += [(start + a + 1, start + b + 1), (start + b + 1, start + a + 1)]
        start += n
    files = {
        "A": "".join(f"{a}, {b}\n" for a, b in edges),
        "graph_indicator": "".join(f"{g}\n" for g in ind),
        "graph_labels": "".join(f"{draw(st.sampled_from([-1, 0, 1, 2]))}\n" for _ in sizes),
    }
    if draw(st.booleans()):
        files["node_labels"] = "".join(f"{draw(st.integers(0, 3))}\n" for _ in ind)
    if draw(st.booleans()):
        files["node_attributes"] = "".join(f"{draw(st.floats(-5, 5))}, {draw(st.floats(-5, 5))}\n" for _ in ind)
    for _ in range(draw(st.integers(0, 3))):  # damage: replace, drop or insert a line, or a whole file
        key = draw(st.sampled_from(sorted(files)))
        lines = files[key].splitlines(keepends=True)
        how = draw(st.sampled_from(["replace", "drop", "insert", "file"]))
        junk = draw(st.text(TU_ALPHABET, max_size=12))
        if how == "file":
            files[key] = junk
        elif how == "insert" or not lines:
            i = draw(st.integers(0, len(lines)))
            lines.insert(i, junk + "\n")
            files[key] = "".join(lines)
        else:
            i = draw(st.integers(0, len(lines) - 1))
            lines[i] = "" if how == "drop" else junk + "\n"
            files[key] = "".join(lines)
    gz = draw(st.sets(st.sampled_from(sorted(files)), max_size=2))
    return files, gz


def write_raw(root: Path, files: dict, gz=()) -> Path:
    # test_tu's writer, with none of its default files beyond those drawn here
    defaults = {k: None for k in ("A", "graph_indicator", "graph_labels", "node_labels")}
    return write_tu(root, "FUZZ", tuple(gz), **{**defaults, **files})


def check_dataset(data, slices, meta):
    g = meta["num_graphs"]
    assert g >= 1 and slices["y"].tolist() == list(range(g + 1))
    counts = slices["x"].diff()
    assert (counts > 0).all(), "a graph without nodes was kept"
    assert int(slices["x"][-1]) == data.x.shape[0] == meta["num_nodes"]
    assert torch.isfinite(data.x).all()
    assert data.y.min() >= 0 and data.y.max() < meta["num_classes"]
    e = data.edge_index
    assert int(slices["edge_index"][-1]) == e.shape[1]
    if e.numel():  # local node ids inside each graph
        graph_of_edge = torch.repeat_interleave(torch.arange(g), slices["edge_index"].diff())
        assert (e >= 0).all() and (e < counts[graph_of_edge]).all()


@FUZZ
@given(tu_files(), st.sampled_from(["deg+odeg100", "constant", "deg", "attr"]))
def test_tu_reader_never_fails_uncleanly(case, recipe):
    files, gz = case
    with tempfile.TemporaryDirectory() as tmp:
        raw = write_raw(Path(tmp), files, gz)
        try:
            data, slices, meta = build_tu(raw, "FUZZ", recipe)
        except AutoGCLError as exc:  # DataError, or ConfigError for 'attr' without attributes
            assert "FUZZ" in str(exc) or str(raw) in str(exc), f"error does not name the file or dataset: {exc}"
            return
        check_dataset(data, slices, meta)


@FUZZ
@given(st.dictionaries(st.sampled_from(["A", "graph_indicator", "graph_labels", "node_labels"]),
                       st.binary(max_size=40), min_size=3))
def test_tu_reader_on_arbitrary_bytes(files):
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "TU" / "FUZZ" / "raw"
        raw.mkdir(parents=True)
        for suffix, blob in files.items():
            (raw / f"FUZZ_{suffix}.txt").write_bytes(blob)
        try:
            data, slices, meta = build_tu(raw, "FUZZ", "deg+odeg100")
        except DataError:
            return
        check_dataset(data, slices, meta)


# --- molecule CSV ----------------------------------------------------------------------------

SMILES = ["CCO", "c1ccccc1", "CC(=O)O", "N#N", "C1CC1", "O", "not-a-smiles", "C(C", "", "[Na+].[Cl-]", "CC\"O"]
CELLS = ["0", "1", "", "1.0", "0.0", "-1", "2", "yes", "nan", " 1"]


@st.composite
def csv_files(draw):
    n_tasks = draw(st.integers(0, 3))
    header = ["smiles"] + [f"t{i}" for i in range(n_tasks)]
    if draw(st.booleans()):
        header = draw(st.permutations(header))
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        cells = {h: draw(st.sampled_from(SMILES)) if h == "smiles" else draw(st.sampled_from(CELLS)) for h in header}
        row = [cells[h] for h in header]
        if draw(st.integers(0, 9)) == 0:  # a ragged row
            row = row[:-1] if draw(st.booleans()) else row + ["extra"]
        rows.append(row)
    text = "\n".join(",".join(f'"{c}"' if ("," in c or '"' in c) and draw(st.booleans()) else c for c in r)
                     for r in [header] + rows)
    if draw(st.integers(0, 5)) == 0:
        text = draw(st.text(max_size=60))
    return text, draw(st.booleans())


@FUZZ
@given(csv_files())
def test_molecule_csv_reader_never_fails_uncleanly(case):
    text, gz = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("mols.csv.gz" if gz else "mols.csv")
        if gz:
            with gzip.open(path, "wt", encoding="utf-8", errors="surrogatepass") as f:
                f.write(text)
        else:
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            data, _slices, meta = build_molecule_dataset(path, "mols", "smiles", None, workers=1, progress=False)
        except DataError as exc:
            assert str(path) in str(exc) or "mols" in str(exc), f"error does not name the file: {exc}"
            return
        g = meta["num_graphs"]
        assert g >= 1 and len(meta["smiles"]) == len(meta["rows"]) == g
        assert meta["num_rows"] == g + len(meta["skipped"])
        y = data.y.view(g, -1).numpy()
        assert y.shape[1] == len(meta["tasks"])
        # labels are numbers or missing (NaN): 0/1 for classification, any finite value for regression
        # (the task is decided when fine-tuning reads them: autogcl.data.molecules.label_task)
        assert np.isfinite(y[~np.isnan(y)]).all(), "an infinite label got through"
        assert all(isinstance(r, int) and r >= 2 for r in meta["rows"])  # file lines after the header
        assert not any(math.isnan(v) for v in data.x.float().view(-1).tolist())
