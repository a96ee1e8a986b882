"""MNIST digits as SLIC superpixel graphs (read the IDX files, convert, split, cache).

``load_mnist_superpixels`` finds ``MNIST/raw/t10k-*`` in the data roots (see
:mod:`autogcl.paths`), splits the 10,000 test-split images into a stratified train/test
part, turns every image of the requested part into a graph with :func:`image_to_graph`
and caches the collated tensors in the project cache, keyed by every setting that
changes the result and by the raw files' fingerprint.

Each graph has node features ``x = [mean intensity, centroid row / H, centroid col / W]``
(float32, all in [0, 1]), ``pos`` (centroid ``(row, col)`` in pixels, for drawing),
a symmetric k-nearest-neighbour ``edge_index`` over superpixel centroids, the digit ``y``
and ``idx``, the image's index in the raw file.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import zlib
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.utils import to_undirected

from .. import paths
from ..atomic import atomic_save, load_cache
from ..errors import ConfigError, DataError
from .datasets import GraphDataset, fingerprint

log = logging.getLogger(__name__)

#: Bump when the conversion changes, so old caches are never reused.
CACHE_FORMAT = 1

#: columns of ``x`` that hold the centroid position (row / H, col / W)
POS_COLS = (1, 2)

#: SLIC compactness for intensity images in [0, 1]; gives a mean of about 75 superpixels
#: per MNIST digit with ``n_segments=75`` (75.3 over the first 500 t10k images, range 66-82).
COMPACTNESS = 0.3

IMAGES_FILE = "t10k-images-idx3-ubyte.gz"
LABELS_FILE = "t10k-labels-idx1-ubyte.gz"
NAME = "MNIST-superpixels"

_IMAGES_MAGIC = 2051
_LABELS_MAGIC = 2049


# ----------------------------------------------------------------------------- IDX files


def _read_bytes(path: Path) -> bytes:
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                return f.read()
        return path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise DataError(f"{path}: cannot read ({type(exc).__name__}: {exc}); "
                        "the file is corrupt or truncated") from exc


def _read_idx(path, magic: int, n_dims: int, what: str) -> np.ndarray:
    path = Path(path)
    buf = _read_bytes(path)
    header = 4 * (1 + n_dims)
    if len(buf) >= 4:
        found = int(np.frombuffer(buf, dtype=">u4", count=1)[0])
        if found != magic:
            raise DataError(f"{path}: bad magic number {found} (expected {magic} "
                            f"for an IDX {what} file)")
    if len(buf) < header:
        raise DataError(f"{path}: truncated IDX {what} file ({len(buf)} bytes, "
                        f"the header alone needs {header})")
    fields = np.frombuffer(buf, dtype=">u4", count=1 + n_dims)
    shape = tuple(int(v) for v in fields[1:])
    expected = header + int(np.prod(shape, dtype=np.int64))
    if len(buf) < expected:
        raise DataError(f"{path}: truncated IDX {what} file: header says shape {shape} "
                        f"({expected} bytes) but the file has {len(buf)} bytes")
    if len(buf) > expected:
        raise DataError(f"{path}: {len(buf) - expected} unexpected bytes after the "
                        f"{shape} {what} the header announces")
    return np.frombuffer(buf, dtype=np.uint8, offset=header).reshape(shape)


def read_idx_images(path) -> np.ndarray:
    """Images of an IDX3 file (gzipped if the name ends in ``.gz``) as ``(N, rows, cols)`` uint8."""
    return _read_idx(path, _IMAGES_MAGIC, 3, "images").copy()


def read_idx_labels(path) -> np.ndarray:
    """Labels of an IDX1 file (gzipped if the name ends in ``.gz``) as ``(N,)`` int64."""
    return _read_idx(path, _LABELS_MAGIC, 1, "labels").astype(np.int64)


# ------------------------------------------------------------------- image -> graph


def image_to_graph(img: np.ndarray, n_segments: int = 75, k: int = 8, *,
                   compactness: float = COMPACTNESS) -> Data:
    """SLIC superpixel graph of one grey-scale image (uint8 in 0..255 or float in [0, 1]).

    Nodes are superpixels with ``x = [mean intensity, centroid row / H, centroid col / W]``
    and ``pos = [centroid row, centroid col]`` in pixels; each node links to its
    ``min(k, n - 1)`` nearest other nodes by centroid distance, made symmetric.
    """
    from skimage.segmentation import slic

    img = np.asarray(img)
    if img.ndim != 2:
        raise ValueError(f"image_to_graph expects a 2-D grey-scale image, got shape {img.shape}")
    if np.issubdtype(img.dtype, np.integer):
        img_float = img.astype(np.float64) / 255.0
    else:
        img_float = img.astype(np.float64)
        if img_float.size and (img_float.min() < 0.0 or img_float.max() > 1.0):
            raise ValueError("a float image must lie in [0, 1]")
    if n_segments < 1 or k < 1:
        raise ValueError(f"n_segments and k must be positive (got {n_segments}, {k})")

    seg = slic(img_float, n_segments=n_segments, compactness=compactness,
               channel_axis=None, start_label=0)
    _, lab = np.unique(seg.ravel(), return_inverse=True)  # labels 0..n-1 without gaps
    lab = lab.ravel()
    n = int(lab.max()) + 1
    h, w = img_float.shape
    rows, cols = np.indices((h, w))
    count = np.bincount(lab, minlength=n).astype(np.float64)
    mean = np.bincount(lab, weights=img_float.ravel(), minlength=n) / count
    cr = np.bincount(lab, weights=rows.ravel().astype(np.float64), minlength=n) / count
    cc = np.bincount(lab, weights=cols.ravel().astype(np.float64), minlength=n) / count
    pos = np.stack([cr, cc], axis=1)
    x = np.stack([np.clip(mean, 0.0, 1.0), cr / h, cc / w], axis=1)

    kk = min(k, n - 1)
    if kk > 0:
        dist = ((pos[:, None, :] - pos[None, :, :]) ** 2).sum(-1)
        np.fill_diagonal(dist, np.inf)
        nbr = np.argsort(dist, axis=1, kind="stable")[:, :kk]  # stable: deterministic ties
        src = np.repeat(np.arange(n), kk)
        ei = torch.from_numpy(np.stack([src, nbr.ravel()]).astype(np.int64))
        edge_index = to_undirected(ei, num_nodes=n)  # union of both directions, coalesced
    else:
        edge_index = torch.empty(2, 0, dtype=torch.long)

    return Data(x=torch.from_numpy(x.astype(np.float32)), edge_index=edge_index,
                pos=torch.from_numpy(pos.astype(np.float32)))


# ------------------------------------------------------------------------- dataset


def _find_raw(roots: list[Path]) -> tuple[Path, Path]:
    for root in roots:
        d = root / "MNIST" / "raw"
        images, labels = d / IMAGES_FILE, d / LABELS_FILE
        if images.is_file() and labels.is_file():
            return images, labels
    looked = ", ".join(str(r / "MNIST" / "raw") for r in roots)
    raise DataError(f"MNIST raw files {IMAGES_FILE} and {LABELS_FILE} not found; looked in "
                    f"{looked}. Pass --data-root DIR (or set AUTOGCL_DATA) to a folder "
                    "holding MNIST/raw/.")


def _cache_path(settings: dict, files: list[Path]) -> Path:
    key = json.dumps(
        {"format": CACHE_FORMAT, "settings": settings,
         "raw": str(files[0].parent.resolve()),
         "files": fingerprint(files)},
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    stem = f"{settings['split']}-s{settings['n_segments']}-k{settings['k']}"
    return paths.cache_dir() / "processed" / "MNIST" / f"{stem}-{digest}.pt"


def _split_indices(labels: np.ndarray, split: str, test_fraction: float, seed: int) -> np.ndarray:
    from sklearn.model_selection import train_test_split

    train, test = train_test_split(np.arange(len(labels)), test_size=test_fraction,
                                   stratify=labels, random_state=seed)
    return train if split == "train" else test


def load_mnist_superpixels(
    data_root: str | os.PathLike | None = None,
    split: str = "train",
    n_segments: int = 75,
    k: int = 8,
    test_fraction: float = 0.2,
    seed: int = 0,
    limit: int | None = None,
    show_progress: bool | None = None,
) -> GraphDataset:
    """Superpixel graphs of one part (``"train"`` or ``"test"``) of the MNIST t10k images.

    The 10,000 images are split deterministically (stratified by digit, ``seed``);
    ``limit`` keeps only the first ``limit`` images of the part, in split order.
    """
    if split not in ("train", "test"):
        raise ConfigError(f"split must be 'train' or 'test', got {split!r}")
    if not 0.0 < test_fraction < 1.0:
        raise ConfigError(f"test_fraction must lie strictly between 0 and 1, got {test_fraction}")
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be a positive number of images, got {limit}")
    if n_segments < 1 or k < 1:
        raise ConfigError(f"n_segments and k must be positive, got {n_segments} and {k}")

    images_path, labels_path = _find_raw(paths.data_roots(data_root))
    settings = {"split": split, "n_segments": int(n_segments), "k": int(k),
                "compactness": COMPACTNESS, "test_fraction": float(test_fraction),
                "seed": int(seed), "limit": None if limit is None else int(limit)}
    cache = _cache_path(settings, [images_path, labels_path])
    blob = load_cache(cache, ("data", "slices", "meta"))
    if blob is not None:
        return GraphDataset(Data.from_dict(blob["data"]), blob["slices"], NAME, blob["meta"])

    images = read_idx_images(images_path)
    labels = read_idx_labels(labels_path)
    if len(images) != len(labels):
        raise DataError(f"{images_path} has {len(images)} images but {labels_path} has "
                        f"{len(labels)} labels")
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise DataError(f"{labels_path}: labels must be digits 0..9, found {labels.min()}..{labels.max()}")

    index = _split_indices(labels, split, test_fraction, seed)
    if limit is not None:
        index = index[:limit]

    from tqdm.auto import tqdm

    graphs = []
    for i in tqdm(index, desc=f"MNIST {split} -> superpixels", unit="img",
                  disable=None if show_progress is None else not show_progress):
        g = image_to_graph(images[i], n_segments=n_segments, k=k)
        g.y = torch.tensor([labels[i]], dtype=torch.long)
        g.idx = torch.tensor([i], dtype=torch.long)
        graphs.append(g)
    data, slices = InMemoryDataset.collate(graphs)

    nodes = np.array([g.num_nodes for g in graphs])
    meta = {
        "name": NAME, "split": split, "feat": "superpixel", "num_graphs": len(graphs),
        "num_nodes": int(nodes.sum()), "num_edges": int(data.edge_index.shape[1]),
        "mean_nodes": float(nodes.mean()), "num_features": 3, "num_classes": 10,
        "class_counts": np.bincount(labels[index], minlength=10).tolist(),
        "settings": settings, "raw_dir": str(images_path.parent),
    }
    atomic_save({"data": data.to_dict(), "slices": slices, "meta": meta}, cache)
    return GraphDataset(data, slices, NAME, meta)
