"""t-SNE of graph embeddings saved by a run (``embeddings_epoch{E}.npz``: ``emb``, ``y``),
one panel per epoch, points coloured by class."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.manifold import TSNE

from . import save_figure


def embedding_files(unit_dir: Path) -> dict[int, Path]:
    """epoch -> embeddings file of one unit."""
    out = {}
    for p in Path(unit_dir).glob("embeddings_epoch*.npz"):
        m = re.fullmatch(r"embeddings_epoch(\d+)\.npz", p.name)
        if m:
            out[int(m.group(1))] = p
    return dict(sorted(out.items()))


def plot_tsne(unit_dirs: list[Path], out: Path, epochs: list[int] | None = None, labels: list[str] | None = None,
              seed: int = 0, perplexity: float = 30.0) -> list[Path]:
    """A grid: one row per unit (e.g. a naive and a joint run), one column per epoch."""
    files = [embedding_files(d) for d in unit_dirs]
    for d, f in zip(unit_dirs, files):
        if not f:
            raise ValueError(f"{d} has no embeddings_epoch*.npz (run with --save-embeddings)")
    if epochs is None:
        epochs = sorted(set.intersection(*(set(f) for f in files)))
    labels = labels or [Path(d).parent.parent.name if Path(d).name.startswith("fold") else Path(d).name
                        for d in unit_dirs]
    fig, axes = plt.subplots(len(files), len(epochs), figsize=(3.4 * len(epochs), 3.4 * len(files)), squeeze=False)
    for i, (f, label) in enumerate(zip(files, labels)):
        for j, e in enumerate(epochs):
            ax = axes[i, j]
            if e not in f:
                ax.set_title(f"{label}, epoch {e}: not saved", fontsize=9)
                ax.axis("off")
                continue
            z = np.load(f[e])
            emb, y = z["emb"], z["y"]
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
