"""Carry a large TU dataset to a lent GPU in a few MB: its adjacency as bits (docs/reproducing.md).

    python scripts/gpu/tu_pack.py pack ../shared/data/TU/COLLAB .gpu/window/packed/COLLAB
    python scripts/gpu/tu_pack.py unpack .gpu/window/packed/COLLAB DATA/TU/COLLAB

A device call carries 64 MiB, and COLLAB's ``COLLAB_A.txt.gz`` alone is 59 MB (362 MB of text).
Its graphs are dense, so each graph's adjacency is kept as the upper triangle (diagonal included:
COLLAB has self-loops) of a bit matrix, packed with :func:`numpy.packbits` into ``NAME_A.npz``:
1.5 MB for COLLAB. ``pack`` accepts an edge list only when unpacking gives it back line for line:
every edge's reverse present, rows sorted by (source, target), no duplicate; otherwise it names
the first line that breaks this. It records the SHA-256 of the text, and ``unpack`` writes
``raw/NAME_A.txt`` and fails unless the text it wrote has that digest, so the device reads exactly
the mirror's edges (the dataset cache is keyed by the raw files' content, as on any machine). The
other raw files are copied as they are.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from autogcl.data.tu import find_file, read_tu_raw  # noqa: E402
from autogcl.errors import DataError  # noqa: E402

CHUNK = 1 << 22  # edges formatted at a time


def _offsets(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First node of each graph, and first bit of each graph's upper triangle."""
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    tri = sizes * (sizes + 1) // 2
    return first, np.concatenate([[0], np.cumsum(tri)[:-1]])


def _digits(x: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """ASCII digits of the non-negative ints ``x`` right-aligned in ``width`` columns, and the mask
    of the columns that are printed (no leading zeros)."""
    out = np.empty((len(x), width), dtype=np.uint8)
    v = x.copy()
    for k in range(width - 1, -1, -1):
        v, out[:, k] = np.divmod(v, 10)
    used = width - 1 - (x[:, None] >= 10 ** np.arange(1, width)).sum(1)  # first printed column (exact, no log10)
    return out + ord("0"), np.arange(width)[None, :] >= used[:, None]


def _lines(edges: np.ndarray):
    """The TU text of ``edges`` (1-based ``i, j`` rows, as the mirror writes them), in chunks of
    bytes, built without a Python loop over edges."""
    width = max(len(str(int(edges.max()))), 1) if len(edges) else 1
    sep = np.frombuffer(b", ", dtype=np.uint8)
    for k in range(0, len(edges), CHUNK):
        part = edges[k:k + CHUNK]
        (da, ma), (db, mb) = _digits(part[:, 0], width), _digits(part[:, 1], width)
        n = len(part)
        chars = np.concatenate([da, np.broadcast_to(sep, (n, 2)), db, np.full((n, 1), ord("\n"), np.uint8)], 1)
        mask = np.concatenate([ma, np.ones((n, 2), bool), mb, np.ones((n, 1), bool)], 1)
        yield chars[mask].tobytes()


def pack(src: Path, dst: Path) -> dict:
    """Pack the TU dataset in ``src`` (holding ``raw/``) into ``dst``; returns what it wrote."""
    raw = src / "raw"
    name = src.name
    tu = read_tu_raw(raw, name)  # the reader's own checks: node ids, nodes grouped by graph, edges within a graph
    f_a = find_file(raw, name, "A")
    e, ind = tu.edge_index.T, tu.graph_indicator  # in the file's order, 0-based
    sizes = np.bincount(ind)
    n = len(ind)
    key = e[:, 0] * n + e[:, 1]
    step = np.flatnonzero(np.diff(key) <= 0)
    if step.size:
        raise DataError(f"{f_a}:{int(step[0]) + 2}: edges are not sorted by (source, target) without "
                        "duplicates; the bit format would not give this file back")
    rev = np.sort(e[:, 1] * n + e[:, 0])
    if not np.array_equal(rev, key):
        where = np.searchsorted(key, rev)
        miss = np.flatnonzero((where >= len(key)) | (key[np.minimum(where, len(key) - 1)] != rev))
        r = int(rev[miss[0]])
        raise DataError(f"{f_a}: edge {r % n + 1}, {r // n + 1} has no reverse {r // n + 1}, {r % n + 1}; "
                        "the bit format holds undirected graphs only")
    g = ind[e[:, 0]]
    first, off = _offsets(sizes)
    upper = e[:, 0] <= e[:, 1]
    r, c, gu = e[upper, 0] - first[g[upper]], e[upper, 1] - first[g[upper]], g[upper]
    m = sizes[gu]
    bits = np.zeros(int((sizes * (sizes + 1) // 2).sum()), dtype=bool)
    bits[off[gu] + r * m - r * (r - 1) // 2 + (c - r)] = True
    digest = hashlib.sha256()
    for chunk in _lines(e + 1):
        digest.update(chunk)
    dst.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(dst / f"{name}_A.npz", bits=np.packbits(bits), sizes=sizes, edges=np.int64(len(e)),
                        sha256=np.array(digest.hexdigest()))
    copied = []
    for f in sorted(raw.iterdir()):
        if f.name.startswith(f"{name}_A.txt"):
            continue
        shutil.copyfile(f, dst / f.name)
        copied.append(f.name)
    return {"edges": len(e), "graphs": len(sizes), "bytes": (dst / f"{name}_A.npz").stat().st_size,
            "copied": copied}


def unpack(src: Path, dst: Path) -> Path:
    """Write ``dst/raw/NAME_A.txt`` (and copy the other files) from a :func:`pack` folder ``src``;
    the edge file written. Fails, writing nothing under that name, when its digest differs."""
    name = src.name
    with np.load(src / f"{name}_A.npz") as z:
        sizes, want, count = z["sizes"], str(z["sha256"]), int(z["edges"])
        tri = sizes * (sizes + 1) // 2
        pos = np.flatnonzero(np.unpackbits(z["bits"], count=int(tri.sum())))
    first, off = _offsets(sizes)
    g = np.searchsorted(off, pos, side="right") - 1
    k, m = pos - off[g], sizes[g]
    # row r of a graph with m nodes starts at bit r * m - r * (r - 1) / 2 of its triangle
    starts = lambda rr: rr * m - rr * (rr - 1) // 2  # noqa: E731
    r = np.floor(((2 * m + 1) - np.sqrt((2 * m + 1) ** 2 - 8 * k)) / 2).astype(np.int64)
    r -= starts(r) > k
    r += starts(r + 1) <= k
    c = r + (k - starts(r))
    a, b = first[g] + r, first[g] + c
    off_diag = a != b
    rows = np.concatenate([np.stack([a, b], 1), np.stack([b[off_diag], a[off_diag]], 1)])
    rows = rows[np.lexsort((rows[:, 1], rows[:, 0]))] + 1
    if len(rows) != count:
        raise DataError(f"{src}: {len(rows)} edges unpacked, {count} packed")
    out = dst / "raw"
    out.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.iterdir()):
        if f.name != f"{name}_A.npz":
            shutil.copyfile(f, out / f.name)
    target, tmp = out / f"{name}_A.txt", out / f".{name}_A.txt.partial"
    digest = hashlib.sha256()
    with open(tmp, "wb") as fh:
        for chunk in _lines(rows):
            digest.update(chunk)
            fh.write(chunk)
    if digest.hexdigest() != want:
        tmp.unlink()
        raise DataError(f"{src}: the unpacked {name}_A.txt differs from the packed one (SHA-256)")
    tmp.replace(target)
    return target


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("stage", choices=["pack", "unpack"])
    p.add_argument("src", type=Path)
    p.add_argument("dst", type=Path)
    a = p.parse_args(argv)
    try:
        if a.stage == "pack":
            info = pack(a.src, a.dst)
            print(f"tu_pack: {a.src.name}: {info['edges']} edges of {info['graphs']} graphs in "
                  f"{info['bytes'] / 1e6:.1f} MB ({a.dst}); copied {', '.join(info['copied'])}")
        else:
            print(f"tu_pack: wrote {unpack(a.src, a.dst)} (SHA-256 checked)")
    except DataError as exc:
        print(f"tu_pack: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
