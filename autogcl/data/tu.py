"""Reader for the TU Dortmund raw text format (``NAME_A.txt`` etc., plain or gzipped).

Returns plain numpy arrays after checking that the files agree with each other. Every
problem is reported with the file (and line, where one line is at fault).
"""

from __future__ import annotations

import gzip
import io
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DataError


@dataclass
class TURaw:
    """The content of one TU dataset, 0-based, with empty graphs already dropped."""

    name: str
    edge_index: np.ndarray  # (2, E) int64, global node ids
    graph_indicator: np.ndarray  # (N,) int64, graph id of each node, sorted
    graph_labels: np.ndarray  # (G,) raw graph labels as in the file
    node_labels: np.ndarray | None  # (N, k) int64
    node_attributes: np.ndarray | None  # (N, d) float32
    files: list[Path]  # the files that were read
    dropped_empty: list[int]  # 0-based indices (in the file) of graphs without nodes

    @property
    def num_nodes(self) -> int:
        return int(self.graph_indicator.shape[0])

    @property
    def num_graphs(self) -> int:
        return int(self.graph_labels.shape[0])


def find_file(raw_dir: Path, name: str, suffix: str) -> Path | None:
    """``raw_dir/NAME_suffix.txt`` or its ``.gz`` twin, or None."""
    for cand in (raw_dir / f"{name}_{suffix}.txt", raw_dir / f"{name}_{suffix}.txt.gz"):
        if cand.is_file():
            return cand
    return None


def _open_text(path: Path):
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _undecodable(path: Path) -> str:
    """The first line of ``path`` that is not UTF-8 text, as an error message."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                return f"{path}:{lineno}: not UTF-8 text ({line[:40]!r})"
    return f"{path}: not UTF-8 text"


def _locate_bad_line(path: Path, dtype, ncols: int | None) -> str:
    """Slow path, run only after the fast parser failed: find the first malformed line."""
    conv = int if np.issubdtype(dtype, np.integer) else float
    with _open_text(path) as f:
        for lineno, line in enumerate(f, 1):
            text = line.strip()
            if not text:
                continue
            parts = [p.strip() for p in text.split(",")]
            if ncols is None:
                ncols = len(parts)
            if len(parts) != ncols:
                return f"{path}:{lineno}: expected {ncols} comma-separated values, got {len(parts)}: {text!r}"
            try:
                [conv(p) for p in parts]
            except ValueError:
                kind = "integers" if conv is int else "numbers"
                return f"{path}:{lineno}: expected {kind}, got {text!r}"
    return f"{path}: could not be parsed"


def read_table(path: Path, dtype=np.int64, ncols: int | None = None) -> np.ndarray:
    """Read a comma-separated numeric table (one row per line) into a 2-D array."""
    try:
        with _open_text(path) as f, warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data": an error below
            arr = np.loadtxt(f, delimiter=",", dtype=dtype, ndmin=2, comments=None)
    except UnicodeDecodeError as exc:  # before ValueError, its base class
        raise DataError(_undecodable(path)) from exc
    except (ValueError, IndexError) as exc:
        raise DataError(_locate_bad_line(path, dtype, ncols)) from exc
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"{path}: cannot be read, the file is damaged or truncated "
                        f"({type(exc).__name__}: {exc})") from exc
    if arr.size == 0:
        raise DataError(f"{path}: file is empty")
    if ncols is not None and arr.shape[1] != ncols:
        raise DataError(_locate_bad_line(path, dtype, ncols))
    return arr


def read_tu_raw(raw_dir: str | Path, name: str) -> TURaw:
    """Read and cross-check the TU files of ``name`` in ``raw_dir``."""
    raw_dir = Path(raw_dir)

    def need(suffix: str) -> Path:
        path = find_file(raw_dir, name, suffix)
        if path is None:
            raise DataError(
                f"{name}: missing file {name}_{suffix}.txt (or .txt.gz); looked in {raw_dir}"
            )
        return path

    f_a, f_ind, f_lab = need("A"), need("graph_indicator"), need("graph_labels")
    f_nl = find_file(raw_dir, name, "node_labels")
    f_na = find_file(raw_dir, name, "node_attributes")
    files = [p for p in (f_a, f_ind, f_lab, f_nl, f_na) if p is not None]

    ind = read_table(f_ind, np.int64, 1)[:, 0]
    labels = read_table(f_lab, np.float64, 1)[:, 0]
    bad = np.flatnonzero(~np.isfinite(labels) | (labels != np.round(labels)))
    if bad.size:
        raise DataError(f"{f_lab}:{bad[0] + 1}: graph label {float(labels[bad[0]])!r} is not a class id (an integer); "
                        f"{bad.size} such line(s)")
    edges = read_table(f_a, np.int64, 2)
    num_graphs, num_nodes = labels.shape[0], ind.shape[0]

    # graph indicator: 1-based ids in [1, G], nodes grouped by graph in order
    bad = np.flatnonzero((ind < 1) | (ind > num_graphs))
    if bad.size:
        raise DataError(
            f"{f_ind}:{bad[0] + 1}: graph id {ind[bad[0]]} outside 1..{num_graphs} "
            f"({f_lab.name} has {num_graphs} graphs)"
        )
    back = np.flatnonzero(np.diff(ind) < 0)
    if back.size:
        raise DataError(f"{f_ind}:{back[0] + 2}: nodes are not grouped by graph (id goes down)")
    ind = ind - 1

    # adjacency: 1-based node ids in [1, N], both ends in the same graph
    bad = np.flatnonzero((edges < 1).any(1) | (edges > num_nodes).any(1))
    if bad.size:
        raise DataError(
            f"{f_a}:{bad[0] + 1}: node id outside 1..{num_nodes} "
            f"({f_ind.name} has {num_nodes} nodes): {edges[bad[0]].tolist()}"
        )
    edges = edges - 1
    cross = np.flatnonzero(ind[edges[:, 0]] != ind[edges[:, 1]])
    if cross.size:
        i = cross[0]
        raise DataError(
            f"{f_a}:{i + 1}: edge joins graphs {ind[edges[i, 0]] + 1} and {ind[edges[i, 1]] + 1}"
        )

    node_labels = node_attr = None
    if f_nl is not None:
        node_labels = read_table(f_nl, np.int64)
        if node_labels.shape[0] != num_nodes:
            raise DataError(
                f"{f_nl}: {node_labels.shape[0]} rows, but {f_ind.name} has {num_nodes} nodes"
            )
    if f_na is not None:
        node_attr = read_table(f_na, np.float64).astype(np.float32)
        if node_attr.shape[0] != num_nodes:
            raise DataError(
                f"{f_na}: {node_attr.shape[0]} rows, but {f_ind.name} has {num_nodes} nodes"
            )
        if not np.isfinite(node_attr).all():
            row = int(np.flatnonzero(~np.isfinite(node_attr).all(1))[0])
            raise DataError(f"{f_na}:{row + 1}: non-finite node attribute")

    # graphs without any node cannot be encoded: drop them, say which
    counts = np.bincount(ind, minlength=num_graphs)
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        keep = counts > 0
        remap = np.cumsum(keep) - 1
        ind = remap[ind]
        labels = labels[keep]

    return TURaw(
        name=name,
        edge_index=np.ascontiguousarray(edges.T),
        graph_indicator=ind,
        graph_labels=labels,
        node_labels=node_labels,
        node_attributes=node_attr,
        files=files,
        dropped_empty=empty.tolist(),
    )
