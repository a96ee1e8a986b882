"""Graph embeddings of a whole loader in eval mode (for SVMs, t-SNE, figures, the API)."""

from __future__ import annotations

import torch

from ..data.batching import to_device


def module_device(module: torch.nn.Module) -> torch.device:
    """The device of a module's first parameter (CPU for a module without any)."""
    p = next(module.parameters(), None)
    return torch.device("cpu") if p is None else p.device


@torch.no_grad()
def embed(module: torch.nn.Module, loader, fn=None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``fn(batch)`` (default ``module(batch)``) of every batch, in eval mode, on the module's
    device; returns the stacked outputs and labels as CPU tensors (labels ``None`` when the
    graphs have no graph-level ``y``). The module's training mode is restored afterwards."""
    fn = fn or module
    device = module_device(module)
    was_training = module.training
    module.eval()
    embs, ys = [], []
    try:
        for batch in loader:  # outputs stay on the device until the end: one transfer back
            batch = to_device(batch, device)
            embs.append(fn(batch))
            y = getattr(batch, "y", None)  # graph labels only (node-level labels are not collected)
            graph_level = y is not None and y.dim() > 0 and y.size(0) == batch.num_graphs
            ys.append(y.view(batch.num_graphs, -1) if graph_level else None)
    finally:
        module.train(was_training)
    labels = None
    if ys and all(y is not None for y in ys):
        labels = torch.cat(ys).cpu()
        labels = labels.view(-1) if labels.shape[1] == 1 else labels
    return torch.cat(embs).cpu(), labels
