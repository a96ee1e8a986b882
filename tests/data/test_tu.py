import gzip
from pathlib import Path

import numpy as np
import pytest

from autogcl.data.tu import read_tu_raw
from autogcl.errors import DataError


def write_tu(root: Path, name="TOY", gz=(), **override):
    """Two graphs: a triangle (label 1) and an edge (label -1); node labels 1..3."""
    files = {
        "A": "1, 2\n2, 1\n2, 3\n3, 2\n1, 3\n3, 1\n4, 5\n5, 4\n",
        "graph_indicator": "1\n1\n1\n2\n2\n",
        "graph_labels": "1\n-1\n",
        "node_labels": "1\n2\n3\n1\n1\n",
    }
    files.update(override)
    raw = root / "TU" / name / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for suffix, text in files.items():
        if text is None:
            continue
        path = raw / f"{name}_{suffix}.txt"
        if suffix in gz:
            with gzip.open(str(path) + ".gz", "wt") as f:
                f.write(text)
        else:
            path.write_text(text)
    return raw


def test_reads_plain_files(tmp_path):
    raw = read_tu_raw(write_tu(tmp_path), "TOY")
    assert raw.num_graphs == 2 and raw.num_nodes == 5
    assert raw.edge_index.shape == (2, 8)
    assert raw.edge_index.min() == 0 and raw.edge_index.max() == 4
    assert raw.graph_indicator.tolist() == [0, 0, 0, 1, 1]
    assert raw.graph_labels.tolist() == [1, -1]
    assert raw.node_labels[:, 0].tolist() == [1, 2, 3, 1, 1]


def test_reads_gzipped_files_identically(tmp_path):
    plain = read_tu_raw(write_tu(tmp_path / "a"), "TOY")
    zipped = read_tu_raw(write_tu(tmp_path / "b", gz=("A", "graph_indicator", "node_labels")), "TOY")
    assert any(p.suffix == ".gz" for p in zipped.files)
    np.testing.assert_array_equal(plain.edge_index, zipped.edge_index)
    np.testing.assert_array_equal(plain.node_labels, zipped.node_labels)


def test_malformed_line_names_file_and_line(tmp_path):
    raw = write_tu(tmp_path, A="1, 2\n2, 1\n2, x\n")
    with pytest.raises(DataError, match=r"TOY_A\.txt:3: expected integers"):
        read_tu_raw(raw, "TOY")


def test_malformed_line_in_gzipped_file(tmp_path):
    raw = write_tu(tmp_path, gz=("graph_indicator",), graph_indicator="1\n1\n1\n2\n2 2\n")
    with pytest.raises(DataError, match=r"TOY_graph_indicator\.txt\.gz:5"):
        read_tu_raw(raw, "TOY")


def test_wrong_column_count(tmp_path):
    raw = write_tu(tmp_path, A="1, 2\n2, 1, 3\n")
    with pytest.raises(DataError, match=r"TOY_A\.txt:2: expected 2 comma-separated values, got 3"):
        read_tu_raw(raw, "TOY")


def test_missing_file_says_where_it_looked(tmp_path):
    raw = write_tu(tmp_path, graph_labels=None)
    with pytest.raises(DataError, match=r"missing file TOY_graph_labels\.txt.*looked in .*TOY/raw"):
        read_tu_raw(raw, "TOY")


def test_inconsistent_counts(tmp_path):
    raw = write_tu(tmp_path, node_labels="1\n2\n3\n")
    with pytest.raises(DataError, match=r"TOY_node_labels\.txt: 3 rows, but .* has 5 nodes"):
        read_tu_raw(raw, "TOY")
    raw = write_tu(tmp_path / "b", graph_indicator="1\n1\n1\n2\n3\n")
    with pytest.raises(DataError, match=r"graph_indicator\.txt:5: graph id 3 outside 1\.\.2"):
        read_tu_raw(raw, "TOY")
    raw = write_tu(tmp_path / "c", A="1, 2\n1, 9\n")
    with pytest.raises(DataError, match=r"TOY_A\.txt:2: node id outside 1\.\.5"):
        read_tu_raw(raw, "TOY")


def test_edge_across_graphs_is_an_error(tmp_path):
    raw = write_tu(tmp_path, A="1, 2\n3, 4\n")
    with pytest.raises(DataError, match=r"TOY_A\.txt:2: edge joins graphs 1 and 2"):
        read_tu_raw(raw, "TOY")


def test_empty_graph_is_dropped_and_reported(tmp_path):
    raw = write_tu(tmp_path, graph_labels="1\n-1\n1\n", graph_indicator="1\n1\n1\n3\n3\n")
    out = read_tu_raw(raw, "TOY")
    assert out.dropped_empty == [1]
    assert out.num_graphs == 2 and out.graph_labels.tolist() == [1, 1]
    assert out.graph_indicator.tolist() == [0, 0, 0, 1, 1]


def test_bytes_that_are_not_utf8_name_the_line(tmp_path):
    raw = write_tu(tmp_path, graph_indicator="1\n1\n1\n2\n2\n")
    (raw / "TOY_graph_indicator.txt").write_bytes(b"1\n1\n\x80\x81\n2\n2\n")
    with pytest.raises(DataError, match=r"TOY_graph_indicator.txt:3: not UTF-8 text"):
        read_tu_raw(raw, "TOY")
