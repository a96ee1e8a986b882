"""Figures: learning curves, t-SNE of embeddings, generated views (matplotlib, Agg backend)."""

import matplotlib

matplotlib.use("Agg")
