"""Figures: learning curves, t-SNE of embeddings, generated views (matplotlib, Agg backend)."""

import matplotlib

matplotlib.use("Agg")


def save_figure(fig, out, dpi: int = 130) -> list:
    """Write ``fig`` as ``out`` with .png and .svg suffixes, close it, return both paths."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = [out.with_suffix(".png"), out.with_suffix(".svg")]
    for p in written:
        fig.savefig(p, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return written
