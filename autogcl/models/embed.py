"""Graph embeddings of a whole loader in eval mode (for SVMs, t-SNE, figures)."""

from __future__ import annotations

import numpy as np
import torch


@torch.no_grad()
def embed(module: torch.nn.Module, loader, fn=None) -> tuple[np.ndarray, np.ndarray]:
    """``fn(batch)`` (default ``module(batch)``) for every batch, in eval mode, and the labels;
    the module's training mode is restored afterwards."""
    fn = fn or module
    was_training = module.training
    module.eval()
    embs, ys = [], []
    for batch in loader:
        embs.append(fn(batch))
        ys.append(batch.y.view(-1))
    module.train(was_training)
    return torch.cat(embs).numpy(), torch.cat(ys).numpy()
