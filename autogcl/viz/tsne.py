"""t-SNE of graph embeddings saved by a run (``embeddings_epoch{E}.npz``: ``emb``, ``y``),
one panel per epoch, points coloured by class."""

from __future__ import annotations

import re
import zipfile
import zlib
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.manifold import TSNE

from ..errors import DataError
from . import save_figure


def embedding_files(unit_dir: Path) -> dict[int, Path]:
    """epoch -> embeddings file of one unit."""
    out = {}
    for p in Path(unit_dir).glob("embeddings_epoch*.npz"):
        m = re.fullmatch(r"embeddings_epoch(\d+)\.npz", p.name)
        if m:
            out[int(m.group(1))] = p
    return dict(sorted(out.items()))


def read_embeddings(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(emb, y)`` of an embeddings file: a ``graphs x dims`` array of finite numbers and a
    label per graph; anything else is a :class:`DataError` naming the file."""
    try:
        with np.load(path, allow_pickle=False) as z:  # never unpickles
            missing = [k for k in ("emb", "y") if k not in z.files]
            if missing:
                raise DataError(f"{path}: no array {' or '.join(map(repr, missing))} (an embeddings file holds emb "
                                f"and y; it has {z.files})")
            emb, y = z["emb"], z["y"]
    except DataError:
        raise
    except (OSError, EOFError, ValueError, TypeError, AttributeError, zipfile.BadZipFile, zlib.error) as exc:
        # not a zip, a damaged one, pickled objects (never loaded), a plain .npy
        raise DataError(f"{path}: not a readable embeddings file ({type(exc).__name__}); run again with "
                        "--save-embeddings") from None
    if emb.ndim != 2 or y.ndim != 1 or len(emb) != len(y) or len(y) < 2:
        raise DataError(f"{path}: emb {emb.shape} and y {y.shape} are not a graphs x dims array and one label "
                        "per graph (at least 2 graphs)")
    if not np.issubdtype(emb.dtype, np.number) or not np.isfinite(emb).all():
        raise DataError(f"{path}: the embeddings hold values that are not finite numbers (NaN or inf)")
    return emb, y


def plot_tsne(unit_dirs: list[Path], out: Path, epochs: list[int] | None = None, labels: list[str] | None = None,
              seed: int = 0, perplexity: float = 30.0) -> list[Path]:
    """A grid: one row per unit (e.g. a naive and a joint run), one column per epoch."""
    files = [embedding_files(d) for d in unit_dirs]
    for d, f in zip(unit_dirs, files):
        if not f:
            raise DataError(f"{d} has no embeddings_epoch*.npz (run with --save-embeddings)")
    saved = sorted(set().union(*(set(f) for f in files)))
    if epochs is None:
        epochs = sorted(set.intersection(*(set(f) for f in files)))
        if not epochs:
            raise DataError(f"no epoch is saved in every folder (saved: {', '.join(map(str, saved))}); choose with "
                            "--epochs")
    else:
        unknown = [e for e in epochs if e not in saved]
        if unknown:
            raise DataError(f"--epochs {', '.join(map(str, unknown))}: not saved in any of the folders (saved: "
                            f"{', '.join(map(str, saved))})")
    if labels is not None and len(labels) != len(unit_dirs):
        raise DataError(f"{len(labels)} label(s) for {len(unit_dirs)} folder(s)")
    labels = labels or [Path(d).parent.parent.name if Path(d).name.startswith("fold") else Path(d).name
                        for d in unit_dirs]
    arrays = {(i, e): read_embeddings(f[e]) for i, f in enumerate(files) for e in epochs if e in f}  # checked first
    fig, axes = plt.subplots(len(files), len(epochs), figsize=(3.4 * len(epochs), 3.4 * len(files)), squeeze=False)
    for i, (f, label) in enumerate(zip(files, labels)):
        for j, e in enumerate(epochs):
            ax = axes[i, j]
            if e not in f:
                ax.set_title(f"{label}, epoch {e}: not saved", fontsize=9)
                ax.axis("off")
                continue
            emb, y = arrays[(i, e)]
            pts = TSNE(n_components=2, perplexity=min(perplexity, (len(emb) - 1) / 3), init="pca",
                       random_state=seed).fit_transform(emb)
            for c in np.unique(y):
                sel = y == c
                ax.scatter(pts[sel, 0], pts[sel, 1], s=4, alpha=0.6, label=f"class {c}")
            ax.set_title(f"{label}, epoch {e}", fontsize=10)
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0 and j == 0:
                ax.legend(markerscale=3, fontsize=8, loc="best")
    fig.suptitle("t-SNE of graph embeddings, coloured by class", y=1.01)
    fig.tight_layout()
    return save_figure(fig, out, dpi=130)
