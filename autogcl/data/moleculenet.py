"""Labeled molecule datasets: the 8 MoleculeNet sets by name and a user's own CSV.

``load_moleculenet(name)`` finds ``moleculenet/<file>`` in the data roots (see
:mod:`autogcl.paths`) and downloads the DeepChem copy into the project cache when it is in
none of them; ``load_molecule_csv(path, smiles_col, label_cols)`` reads any CSV of SMILES
and binary labels. Both featurise with RDKit (:mod:`.molecules`), skip and report SMILES
that do not parse, and cache the result keyed by the file's fingerprint and the columns.
Labels are a float ``graphs x tasks`` matrix with NaN where a label is missing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from torch_geometric.data import Data

from .. import paths
from ..atomic import atomic_save, load_cache
from ..errors import DataError
from .datasets import GraphDataset, fingerprint
from .molecules import check_label_map, collate_arrays, featurize, read_labeled_csv

log = logging.getLogger(__name__)

CACHE_FORMAT = 1
DOWNLOAD_URL = "https://deepchemdata.s3-us-west-1.amazonaws.com/datasets/{}"


@dataclass(frozen=True)
class MoleculeNetSpec:
    file: str  # name in <root>/moleculenet/
    smiles_col: str
    tasks: tuple[str, ...] | None  # None: every column but the SMILES and `exclude`
    remote: str  # DeepChem file name
    exclude: tuple[str, ...] = ("mol_id",)
    task_prefix: str | None = None


#: The transfer benchmark (the AutoGCL paper's Table 4); columns as the pretrain-gnns loaders read them.
MOLECULENET = {
    "bbbp": MoleculeNetSpec("bbbp.csv", "smiles", ("p_np",), "BBBP.csv"),
    "tox21": MoleculeNetSpec("tox21.csv", "smiles", None, "tox21.csv.gz"),
    "toxcast": MoleculeNetSpec("toxcast.csv.gz", "smiles", None, "toxcast_data.csv.gz"),
    "sider": MoleculeNetSpec("sider.csv", "smiles", None, "sider.csv.gz"),
    "clintox": MoleculeNetSpec("clintox.csv", "smiles", ("FDA_APPROVED", "CT_TOX"), "clintox.csv.gz"),
    "muv": MoleculeNetSpec("muv.csv.gz", "smiles", None, "muv.csv.gz", task_prefix="MUV-"),
    "hiv": MoleculeNetSpec("hiv.csv.gz", "smiles", ("HIV_active",), "HIV.csv"),
    "bace": MoleculeNetSpec("bace.csv", "mol", ("Class",), "bace.csv"),
}


def _find(spec: MoleculeNetSpec, roots: list[Path]) -> Path | None:
    stem = spec.file.removesuffix(".gz")
    for root in roots:
        for cand in (root / "moleculenet" / stem, root / "moleculenet" / (stem + ".gz")):
            if cand.is_file():
                return cand
    return None


def _download(name: str, spec: MoleculeNetSpec, roots: list[Path]) -> Path:
    """Standard download of the DeepChem CSV into the project's data cache."""
    dest_dir = paths.default_data_dir() / "moleculenet"
    looked = ", ".join(str(r / "moleculenet" / spec.file) for r in roots)
    log.warning("%s not found locally (looked in %s); downloading into %s", name, looked, dest_dir)
    suffix = ".gz" if spec.remote.endswith(".gz") else ""
    dest = dest_dir / (spec.file.removesuffix(".gz") + suffix)
    try:
        from torch_geometric.data import download_url

        tmp = dest_dir / ".download"
        got = Path(download_url(DOWNLOAD_URL.format(spec.remote), str(tmp), log=False))
        dest_dir.mkdir(parents=True, exist_ok=True)
        os.replace(got, dest)
        shutil.rmtree(tmp, ignore_errors=True)
    except Exception as exc:  # network errors come in many types
        raise DataError(
            f"dataset {name} is not in any data root (looked in {looked}) and could not be "
            f"downloaded ({type(exc).__name__}: {exc}). Pass --data-root DIR (or set "
            "AUTOGCL_DATA) to a folder holding moleculenet/, or connect to the network."
        ) from exc
    return dest


def _cache_path(name: str, path: Path, smiles_col: str, label_cols) -> Path:
    key = json.dumps({"format": CACHE_FORMAT, "name": name, "file": str(path.resolve()),
                      "fp": fingerprint([path]), "smiles": smiles_col, "labels": label_cols},
                     sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return paths.cache_dir() / "processed" / "molecules" / f"{name}-{digest}.pt"


def build_molecule_dataset(path: Path, name: str, smiles_col: str, label_cols, exclude=(),
                           task_prefix: str | None = None, workers: int | None = None,
                           progress: bool = True, label_map: dict | None = None) -> tuple[Data, dict, dict]:
    smiles, lines, y, tasks = read_labeled_csv(path, smiles_col, label_cols, exclude, label_map)
    if task_prefix is not None:
        keep = [i for i, t in enumerate(tasks) if t.startswith(task_prefix)]
        y, tasks = y[:, keep], [tasks[i] for i in keep]
    feats = featurize(smiles, lines, source=f"{name} ({path})", workers=workers, progress=progress)
    for s in feats.skipped:
        log.warning("%s", s)
    if not feats.arrays:
        raise DataError(f"{path}: none of the {len(smiles)} SMILES could be parsed")
    data, slices = collate_arrays(feats.arrays, y[feats.index])
    meta = {
        "name": name, "file": str(path), "smiles_col": smiles_col, "tasks": tasks,
        "num_graphs": len(feats.arrays), "num_rows": len(smiles),
        "smiles": [smiles[i] for i in feats.index], "rows": [lines[i] for i in feats.index],
        "skipped": [vars(s) for s in feats.skipped],
    }
    return data, slices, meta


def _load(name: str, path: Path, smiles_col: str, label_cols, exclude=(), task_prefix=None,
          use_cache: bool = True, workers: int | None = None, progress: bool = True,
          label_map: dict | None = None) -> GraphDataset:
    label_map = check_label_map(label_map)
    # a label map enters the cache key only when given: the caches made before it are still found
    key = [label_cols, list(exclude), task_prefix] + ([label_map] if label_map else [])
    cache = _cache_path(name, path, smiles_col, key)
    blob = load_cache(cache, ("data", "slices", "meta")) if use_cache else None
    if blob is not None:
        ds = GraphDataset(Data.from_dict(blob["data"]), blob["slices"], name, blob["meta"])
    else:
        data, slices, meta = build_molecule_dataset(path, name, smiles_col, label_cols, exclude,
                                                    task_prefix, workers, progress, label_map)
        if use_cache:
            atomic_save({"data": data.to_dict(), "slices": slices, "meta": meta}, cache)
        ds = GraphDataset(data, slices, name, meta)
    if ds.meta["skipped"]:
        log.warning("%s: %d of %d SMILES could not be parsed and were skipped (listed in the "
                    "run's dataset.json)", name, len(ds.meta["skipped"]), ds.meta["num_rows"])
    return ds


def load_moleculenet(name: str, data_root=None, download: bool | None = None, **kw) -> GraphDataset:
    """One of the 8 MoleculeNet sets by (case-insensitive) name; ``download`` as in
    :func:`autogcl.data.load_tu` (by default only when no data root was named)."""
    key = name.lower()
    if key not in MOLECULENET:
        raise DataError(f"unknown MoleculeNet dataset {name!r}; known: {', '.join(MOLECULENET)}")
    spec = MOLECULENET[key]
    roots = paths.data_roots(data_root)
    path = _find(spec, roots)
    if path is None:
        if download is None:
            download = not paths.explicit_root(data_root)
        if not download:
            looked = ", ".join(str(r / "moleculenet" / spec.file) for r in roots)
            raise DataError(f"dataset {key} not found; looked in {looked} (--download on the command "
                            "line, download=True in Python, fetches it into the project cache)")
        path = _download(key, spec, roots)
    labels = list(spec.tasks) if spec.tasks else None
    return _load(key, path, spec.smiles_col, labels, spec.exclude, spec.task_prefix, **kw)


def load_molecule_csv(path, smiles_col: str = "smiles", label_cols: list[str] | None = None,
                      **kw) -> GraphDataset:
    """A user's CSV of SMILES and labels (0/1 or numbers, empty for missing; ``label_map=``:
    numbers for text labels, :func:`autogcl.data.molecules.check_label_map`)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: {'a folder, not a CSV file' if path.is_dir() else 'no such file'}")
    name = path.name.split(".")[0] or "molecules"  # ".csv" has no name of its own
    return _load(name, path, smiles_col, label_cols, **kw)
