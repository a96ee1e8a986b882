"""Figures: learning curves, t-SNE of embeddings, generated views (matplotlib, Agg backend)."""

import matplotlib

matplotlib.use("Agg")

__all__ = ["save_figure"]  # the figures themselves: autogcl.viz.curves, .tsne, .views


def save_figure(fig, out, dpi: int = 130) -> list:
    """Write ``fig`` as ``out`` with .png and .svg suffixes, close it, return both paths. The same
    figure gives the same bytes (no date, fixed SVG ids), so a redrawn figure changes only
    where its data does."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    from ..errors import write_failure

    out = Path(out)
    written = [out.with_suffix(".png"), out.with_suffix(".svg")]
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with matplotlib.rc_context({"svg.hashsalt": "autogcl"}):
            for p in written:
                fig.savefig(p, dpi=dpi, bbox_inches="tight", metadata={"Date": None})
    except OSError as exc:  # a file in the way of the folder, no permission, a folder of that name
        raise write_failure(exc, out.with_suffix(".png"), "the figure ") from exc
    finally:
        plt.close(fig)
    return written
