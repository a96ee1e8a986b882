"""TU graph-classification datasets by name: find the raw files, build features, cache.

``load_tu(name, data_root, feat)`` looks for ``TU/NAME/raw`` in each data root (see
:mod:`autogcl.paths`), downloads with PyTorch Geometric's ``TUDataset`` into the project
cache when it is in none of them, builds the node features of the recipe, and caches the
processed tensors in the project cache keyed by dataset, recipe and raw-file fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.utils import coalesce, remove_self_loops

from .. import paths
from ..atomic import atomic_save, load_cache
from ..errors import DataError
from .features import DEFAULT_RECIPE, build_features, parse_recipe
from .tu import read_tu_raw

log = logging.getLogger(__name__)

CACHE_FORMAT = 1

#: Datasets the project knows by name (the offline mirror has the first seven).
KNOWN_TU_DATASETS = {
    "MUTAG": "MUTAG",
    "PROTEINS": "PROTEINS",
    "NCI1": "NCI1",
    "DD": "DD",
    "IMDB-BINARY": "IMDB-BINARY",
    "REDDIT-BINARY": "REDDIT-BINARY",
    "COLLAB": "COLLAB",
    "REDDIT-MULTI-5K": "REDDIT-MULTI-5K",
    "GITHUB": "github_stargazers",
    "github_stargazers": "github_stargazers",
}


class GraphDataset(InMemoryDataset):
    """An in-memory graph dataset built from collated tensors (no files of its own)."""

    def __init__(self, data: Data, slices: dict, name: str, meta: dict | None = None):
        super().__init__(None, log=False)
        self._data, self.slices = data, slices
        self.name = name
        self.meta = dict(meta or {})

    def __repr__(self) -> str:
        return f"{self.name}({len(self)}, feat={self.meta.get('feat')})"


def known_name(name) -> str | None:
    """The name a dataset of :data:`KNOWN_TU_DATASETS` is stored under, matched
    case-insensitively (``"mutag"`` -> ``"MUTAG"``); ``None`` when ``name`` is not one of them."""
    if not isinstance(name, str):
        return None
    return next((val for key, val in KNOWN_TU_DATASETS.items() if key.lower() == name.lower()), None)


def canonical_name(name: str, roots: list[Path], downloadable: bool = False) -> str:
    """The TU name to look for: known names case-insensitively, else a name found on disk,
    else (``downloadable``: a download is allowed) the name as given, for the TU collection
    to supply (e.g. ENZYMES, which the offline mirror does not hold)."""
    if not name.strip() or "/" in name or "\\" in name or name.startswith("."):
        raise DataError(f"{name!r} is not a dataset name (a TU name such as MUTAG, not a path; a dataset of your "
                        "own goes in DATA_ROOT/TU/NAME/raw/)")
    if known_name(name) is not None:
        return known_name(name)
    for root in roots:
        if (root / "TU" / name / "raw").is_dir():
            return name
    if downloadable and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        return name
    known = ", ".join(k for k in KNOWN_TU_DATASETS if k != "github_stargazers")
    raise DataError(f"unknown dataset {name!r}; known datasets: {known} (another TU dataset: download=True in "
                    "Python, --download on the command line, or its files in DATA_ROOT/TU/NAME/raw/)")


def _raw_dir(name: str, roots: list[Path]) -> Path | None:
    for root in roots:
        d = root / "TU" / name / "raw"
        if (d / f"{name}_A.txt").is_file() or (d / f"{name}_A.txt.gz").is_file():
            return d
    return None


def _download(name: str, roots: list[Path]) -> Path:
    """Standard download (PyG ``TUDataset``) into the project's data cache."""
    dest = paths.default_data_dir() / "TU"
    looked = ", ".join(str(r / "TU" / name / "raw") for r in roots)
    log.warning("%s not found locally (looked in %s); downloading into %s", name, looked, dest)
    try:
        from torch_geometric.datasets import TUDataset

        TUDataset(str(dest), name)
    except Exception as exc:  # network errors come in many types
        raise DataError(
            f"dataset {name} is not in any data root (looked in {looked}) and could not be "
            f"downloaded ({type(exc).__name__}: {exc}). Pass --data-root DIR (or set "
            f"AUTOGCL_DATA) to a folder holding TU/{name}/raw/, or connect to the network."
        ) from exc
    raw = _raw_dir(name, [paths.default_data_dir()])
    if raw is None:
        raise DataError(f"download of {name} finished but {dest / name / 'raw'} has no {name}_A.txt")
    return raw


def fingerprint(files: list[Path]) -> list:
    """Name, size and SHA-256 of each file's content: part of every cache key and of the
    pre-training record. The content, not the modification time, so that a touched file, or a
    data folder re-mounted at the same path, keeps its caches and lets finished runs resume."""
    out = []
    for f in files:
        with open(f, "rb") as fh:
            out.append([f.name, f.stat().st_size, hashlib.file_digest(fh, "sha256").hexdigest()])
    return out


def _cache_path(name: str, recipe: str, raw_dir: Path) -> Path:
    files = sorted(p for p in raw_dir.iterdir() if p.name.startswith(name + "_"))
    key = json.dumps(
        {"format": CACHE_FORMAT, "name": name, "feat": recipe, "raw": str(raw_dir.resolve()),
         "files": fingerprint(files)},
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return paths.cache_dir() / "processed" / "TU" / name / f"{recipe}-{digest}.pt"


def build_tu(raw_dir: Path, name: str, recipe_spec: str) -> tuple[Data, dict, dict]:
    """Read the raw files and build collated ``(data, slices, meta)`` without a Python loop
    over graphs, nodes or edges."""
    recipe = parse_recipe(recipe_spec)
    raw = read_tu_raw(raw_dir, name)
    for g in raw.dropped_empty:
        log.warning("%s: graph %d (line %d of graph_labels) has no nodes; dropped", name, g, g + 1)

    n = raw.num_nodes
    edge_index = torch.from_numpy(raw.edge_index)
    edge_index, _ = remove_self_loops(edge_index)
    edge_index = coalesce(edge_index, num_nodes=n)  # sorted by source: grouped by graph
    batch = torch.from_numpy(raw.graph_indicator)
    x = build_features(
        recipe, n, edge_index,
        None if raw.node_labels is None else torch.from_numpy(raw.node_labels),
        None if raw.node_attributes is None else torch.from_numpy(raw.node_attributes),
        dataset=name,
    )
    uniq, y = np.unique(raw.graph_labels, return_inverse=True)

    g = raw.num_graphs
    node_count = torch.bincount(batch, minlength=g)
    node_slice = torch.cat([torch.zeros(1, dtype=torch.long), node_count.cumsum(0)])
    edge_count = torch.bincount(batch[edge_index[0]], minlength=g)
    edge_slice = torch.cat([torch.zeros(1, dtype=torch.long), edge_count.cumsum(0)])
    local_edges = edge_index - node_slice[batch[edge_index[0]]].view(1, -1)

    data = Data(x=x, edge_index=local_edges, y=torch.from_numpy(y.astype(np.int64)))
    slices = {"x": node_slice, "edge_index": edge_slice, "y": torch.arange(g + 1)}
    meta = {
        "name": name, "feat": recipe.spec, "num_graphs": g, "num_nodes": n,
        "num_edges": int(edge_index.shape[1]), "num_features": int(x.shape[1]),
        "num_classes": len(uniq), "class_values": [float(u) for u in uniq],
        "raw_dir": str(raw_dir), "dropped_empty_graphs": raw.dropped_empty,
    }
    return data, slices, meta


def load_tu(
    name: str,
    data_root: str | os.PathLike | None = None,
    feat: str = DEFAULT_RECIPE,
    download: bool | None = None,
    use_cache: bool = True,
) -> GraphDataset:
    """Load the TU dataset ``name`` with the node-feature recipe ``feat``.

    ``download``: ``True`` fetches a dataset found in no data root into the project cache;
    ``None`` (default) does so only when no data root was named (neither ``data_root`` nor
    ``$AUTOGCL_DATA``): a named root that lacks the dataset is an error saying where it looked."""
    recipe = parse_recipe(feat)  # validate before touching any file
    roots = paths.data_roots(data_root)
    if download is None:
        download = not paths.explicit_root(data_root)
    name = canonical_name(name, roots, downloadable=download)
    raw_dir = _raw_dir(name, roots)
    if raw_dir is None:
        if not download:
            looked = ", ".join(str(r / "TU" / name / "raw") for r in roots)
            raise DataError(f"dataset {name} not found; looked in {looked} (--download on the command "
                            "line, download=True in Python, fetches it into the project cache)")
        raw_dir = _download(name, roots)

    cache = _cache_path(name, recipe.spec, raw_dir)
    blob = load_cache(cache, ("data", "slices", "meta")) if use_cache else None
    if blob is not None:
        return GraphDataset(Data.from_dict(blob["data"]), blob["slices"], name, blob["meta"])
    data, slices, meta = build_tu(raw_dir, name, recipe.spec)
    if use_cache:
        atomic_save({"data": data.to_dict(), "slices": slices, "meta": meta}, cache)
    return GraphDataset(data, slices, name, meta)
