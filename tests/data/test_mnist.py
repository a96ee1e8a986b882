"""MNIST superpixel graphs: IDX reading, image -> graph conversion, split loading and cache."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest
import torch

from autogcl import paths
from autogcl.data.mnist import (
    IMAGES_FILE,
    image_to_graph,
    load_mnist_superpixels,
    read_idx_images,
    read_idx_labels,
)
from autogcl.errors import DataError


def _write_gz(path, payload: bytes):
    with gzip.open(path, "wb") as f:
        f.write(payload)
    return path


def _images_bytes(images: np.ndarray, magic: int = 2051) -> bytes:
    n, r, c = images.shape
    return struct.pack(">IIII", magic, n, r, c) + images.astype(np.uint8).tobytes()


def _labels_bytes(labels, magic: int = 2049) -> bytes:
    return struct.pack(">II", magic, len(labels)) + bytes(labels)


# --------------------------------------------------------------------------- IDX


def test_read_idx_roundtrip(tmp_path):
    imgs = np.arange(2 * 28 * 28, dtype=np.int64).reshape(2, 28, 28) % 256
    p_img = _write_gz(tmp_path / "img.gz", _images_bytes(imgs))
    p_lab = _write_gz(tmp_path / "lab.gz", _labels_bytes([7, 3]))
    out = read_idx_images(p_img)
    assert out.shape == (2, 28, 28) and out.dtype == np.uint8
    np.testing.assert_array_equal(out, imgs)
    lab = read_idx_labels(p_lab)
    assert lab.dtype == np.int64 and lab.tolist() == [7, 3]
    # uncompressed files work too
    (tmp_path / "lab").write_bytes(_labels_bytes([1, 2]))
    assert read_idx_labels(tmp_path / "lab").tolist() == [1, 2]


def test_read_idx_errors(tmp_path):
    imgs = np.zeros((2, 28, 28), dtype=np.uint8)
    bad_magic = _write_gz(tmp_path / "badmagic.gz", _images_bytes(imgs, magic=1234))
    with pytest.raises(DataError, match=r"badmagic\.gz.*magic number 1234"):
        read_idx_images(bad_magic)
    # a label file is not an image file
    labels = _write_gz(tmp_path / "labels.gz", _labels_bytes([1, 2]))
    with pytest.raises(DataError, match=r"labels\.gz.*magic"):
        read_idx_images(labels)
    short = _write_gz(tmp_path / "short.gz", _images_bytes(imgs)[:-10])
    with pytest.raises(DataError, match=r"short\.gz.*truncated"):
        read_idx_images(short)
    tiny = _write_gz(tmp_path / "tiny.gz", b"\x00\x00\x08")
    with pytest.raises(DataError, match=r"tiny\.gz.*truncated"):
        read_idx_labels(tiny)
    # a cut-off gzip stream
    cut = tmp_path / "cut.gz"
    cut.write_bytes(gzip.compress(_images_bytes(imgs))[:40])
    with pytest.raises(DataError, match=r"cut\.gz"):
        read_idx_images(cut)
    with pytest.raises(DataError, match=r"missing\.gz.*not found"):
        read_idx_labels(tmp_path / "missing.gz")


# ----------------------------------------------------------------- image -> graph


def _bar_image() -> np.ndarray:
    img = np.zeros((28, 28), dtype=np.uint8)
    img[10:18, 4:24] = 255
    return img


def test_image_to_graph_bar():
    img = _bar_image()
    g = image_to_graph(img, n_segments=75, k=8)
    n = g.num_nodes
    # measured: 72 superpixels on this image with the default compactness
    assert 60 <= n <= 90
    assert g.x.dtype == torch.float32 and g.x.shape == (n, 3)
    assert g.pos.dtype == torch.float32 and g.pos.shape == (n, 2)
    assert float(g.x.min()) >= 0.0 and float(g.x.max()) <= 1.0
    torch.testing.assert_close(g.x[:, 1:], g.pos / 28)
    assert float(g.pos.min()) >= 0.0 and float(g.pos.max()) <= 27.0

    ei = g.edge_index
    assert ei.dtype == torch.long
    assert not bool((ei[0] == ei[1]).any())
    pairs = set(map(tuple, ei.t().tolist()))
    assert len(pairs) == ei.shape[1]  # coalesced: no duplicates
    assert all((b, a) in pairs for a, b in pairs)
    deg = torch.bincount(ei[0], minlength=n)
    assert int(deg.min()) >= 8  # each node keeps its own k nearest neighbours

    r, c = g.pos[:, 0], g.pos[:, 1]
    inside = (r > 10.5) & (r < 16.5) & (c > 4.5) & (c < 22.5)
    outside = (r < 8) | (r > 20) | (c < 2) | (c > 26)
    assert int(inside.sum()) >= 5 and int(outside.sum()) >= 5
    assert float(g.x[inside, 0].min()) > 0.8
    assert float(g.x[outside, 0].max()) < 0.2


def test_image_to_graph_small_k_and_float_input():
    img = _bar_image().astype(np.float64) / 255.0
    g = image_to_graph(img, n_segments=4, k=8)
    n = g.num_nodes
    assert 1 <= n <= 10
    # k is capped at n - 1: with few nodes the graph is complete
    if n > 1:
        assert g.edge_index.shape[1] == n * (n - 1)
    with pytest.raises(ValueError):
        image_to_graph(img * 2.0)
    with pytest.raises(ValueError):
        image_to_graph(np.zeros((2, 28, 28)))


def test_image_to_graph_deterministic():
    img = _bar_image()
    a, b = image_to_graph(img), image_to_graph(img)
    assert torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index)


# ------------------------------------------------------------------ real data


def _cache_files():
    d = paths.cache_dir() / "processed" / "MNIST"
    return sorted(d.glob("*.pt")) if d.is_dir() else []


def test_load_mnist_superpixels(mnist_root):
    before = set(_cache_files())
    ds = load_mnist_superpixels(mnist_root, split="train", limit=20, show_progress=False)
    assert len(ds) == 20
    new = set(_cache_files()) - before
    assert len(new) == 1
    cache = new.pop()

    nodes = np.array([ds[i].num_nodes for i in range(len(ds))])
    assert nodes.min() >= 55 and nodes.max() <= 95
    assert 65 <= nodes.mean() <= 85
    assert ds.meta["name"] == "MNIST-superpixels" and ds.meta["split"] == "train"
    assert ds.meta["num_graphs"] == 20
    assert ds.meta["mean_nodes"] == pytest.approx(nodes.mean())
    y = ds._data.y
    assert y.shape == (20,) and int(y.min()) >= 0 and int(y.max()) <= 9
    g = ds[0]
    assert g.y.shape == (1,) and g.idx.shape == (1,) and g.idx.dtype == torch.long
    assert g.x.shape[1] == 3 and g.pos.shape == (g.num_nodes, 2)
    idx = ds._data.idx
    assert len(set(idx.tolist())) == 20 and int(idx.max()) < 10_000

    # second call loads the cache: same file, equal tensors
    mtime = cache.stat().st_mtime_ns
    ds2 = load_mnist_superpixels(mnist_root, split="train", limit=20, show_progress=False)
    assert cache.stat().st_mtime_ns == mtime
    assert set(_cache_files()) - before == {cache}
    for key in ("x", "edge_index", "pos", "y", "idx"):
        assert torch.equal(ds._data[key], ds2._data[key])

    # a changed setting gets its own cache file
    ds3 = load_mnist_superpixels(mnist_root, split="train", n_segments=40, limit=20,
                                 show_progress=False)
    assert len(set(_cache_files()) - before) == 2
    assert ds3._data.x.shape[0] < ds._data.x.shape[0]


def test_splits_disjoint(mnist_root):
    tr = load_mnist_superpixels(mnist_root, split="train", limit=30, show_progress=False)
    te = load_mnist_superpixels(mnist_root, split="test", limit=30, show_progress=False)
    assert not set(tr._data.idx.tolist()) & set(te._data.idx.tolist())


def test_missing_raw_files(tmp_path):
    with pytest.raises(DataError, match=r"MNIST.*looked in.*" + str(tmp_path.name)):
        load_mnist_superpixels(tmp_path, limit=2)


def test_count_mismatch(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    _write_gz(raw / IMAGES_FILE, _images_bytes(np.zeros((3, 28, 28), dtype=np.uint8)))
    _write_gz(raw / "t10k-labels-idx1-ubyte.gz", _labels_bytes([1, 2]))
    with pytest.raises(DataError, match=r"3 images.*2 labels"):
        load_mnist_superpixels(tmp_path, limit=2)
