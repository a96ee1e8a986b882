"""Draw graphs and their generated views side by side: kept nodes drawn, dropped nodes
hidden, masked nodes marked. Superpixel graphs are drawn at their image positions coloured
by intensity; other graphs with a spring layout coloured by their first node feature."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import networkx as nx
import numpy as np
from matplotlib.collections import LineCollection

from . import save_figure


def layout(graph) -> np.ndarray:
    """(n, 2) drawing positions: image positions when the graph has ``pos`` (row, col)."""
    if getattr(graph, "pos", None) is not None:
        p = graph.pos.numpy()
        return np.stack([p[:, 1], -p[:, 0]], axis=1)
    g = nx.Graph()
    g.add_nodes_from(range(graph.num_nodes))
    g.add_edges_from(graph.edge_index.t().tolist())
    pos = nx.spring_layout(g, seed=0)
    return np.array([pos[i] for i in range(graph.num_nodes)])


def node_colour(graph) -> np.ndarray:
    """Intensity for superpixels (feature 0), else the index of the first one-hot block's label."""
    x = graph.x.numpy()
    if getattr(graph, "pos", None) is not None:
        return x[:, 0]
    return x[:, : min(x.shape[1], 10)].argmax(1).astype(float)


def draw_panel(ax, graph, xy, colour, kept=None, masked=None, title=""):
    n = graph.num_nodes
    kept = np.ones(n, bool) if kept is None else np.asarray(kept, bool)
    masked = np.zeros(n, bool) if masked is None else np.asarray(masked, bool)
    ei = graph.edge_index.numpy()
    vis = kept[ei[0]] & kept[ei[1]] & (ei[0] < ei[1])  # each undirected edge once
    ax.add_collection(LineCollection(np.stack([xy[ei[0, vis]], xy[ei[1, vis]]], axis=1),
                                     colors="0.75", linewidths=0.5, zorder=1))
    ax.scatter(xy[kept, 0], xy[kept, 1], c=colour[kept], cmap="viridis", vmin=colour.min(),
               vmax=max(colour.max(), colour.min() + 1e-6), s=22, zorder=2, edgecolors="none")
    if masked.any():
        ax.scatter(xy[masked, 0], xy[masked, 1], s=60, facecolors="none", edgecolors="red", lw=1.2, zorder=3)
    ax.set_title(f"{title}\n{int(kept.sum())}/{n} nodes" + (f", {int(masked.sum())} masked" if masked.any() else ""),
                 fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_aspect("equal")


def draw_views(graphs: list, views: list[dict], out: Path, images: list | None = None, title: str = "",
               row_labels: list[str] | None = None) -> list[Path]:
    """One row per graph: [image], original graph, then every view in ``views[i]``
    (name -> (kept, masked) boolean arrays over the original nodes)."""
    names = list(views[0])
    cols = (1 if images else 0) + 1 + len(names)
    fig, axes = plt.subplots(len(graphs), cols, figsize=(2.6 * cols, 2.8 * len(graphs)), squeeze=False)
    for i, g in enumerate(graphs):
        xy, colour = layout(g), node_colour(g)
        c = 0
        if images:
            axes[i, 0].imshow(images[i], cmap="gray")
            axes[i, 0].set_title("image" + (f" ({row_labels[i]})" if row_labels else ""), fontsize=9)
            axes[i, 0].axis("off")
            c = 1
        draw_panel(axes[i, c], g, xy, colour, title="original graph")
        for j, name in enumerate(names):
            kept, masked = views[i][name]
            draw_panel(axes[i, c + 1 + j], g, xy, colour, kept, masked, title=name)
    fig.suptitle(title + "\n(node colour: " + ("intensity" if getattr(graphs[0], "pos", None) is not None
                                                else "node label") + "; red ring: masked; dropped nodes hidden)",
                 fontsize=11)
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)
