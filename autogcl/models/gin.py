"""The 5-layer GIN graph encoder and its contrastive projection head (GraphCL/AutoGCL, docs/method.md)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GINConv, global_add_pool

from ..data.batching import pair_batches
from .embed import embed
from .norm import SegmentBatchNorm


def xavier_init(module: nn.Module) -> nn.Module:
    """Xavier-uniform weights and zero bias for every Linear layer (as GraphCL/AutoGCL)."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return module


class GINEncoder(nn.Module):
    """``num_layers`` x (GINConv(MLP) -> ReLU -> BatchNorm); the graph embedding is the
    concatenation of every layer's sum-pooled output (``num_layers * hidden``)."""

    segment_norm = True  #: reads two views in one batch (``ContrastModel.encode_pair``)

    def __init__(self, in_dim: int, hidden: int = 128, num_layers: int = 5):
        super().__init__()
        self.out_dim = hidden * num_layers
        self.convs, self.bns = nn.ModuleList(), nn.ModuleList()
        for i in range(num_layers):
            d_in = in_dim if i == 0 else hidden
            # ReLUs in place: the Linear layers' backward never reads their outputs (same numbers,
            # two activations fewer per layer held for backward)
            mlp = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, hidden))
            self.convs.append(GINConv(mlp))
            self.bns.append(SegmentBatchNorm(hidden))

    def forward(self, data) -> torch.Tensor:
        x, size = data.x.float(), int(data.num_graphs)
        segments = getattr(data, "_segments", None)  # two views in one batch: normalised apart
        pooled = []
        for conv, bn in zip(self.convs, self.bns):
            x = bn(F.relu(conv(x, data.edge_index), inplace=True), segments)
            pooled.append(global_add_pool(x, data.batch, size=size))
        return torch.cat(pooled, dim=1)

    def embed(self, loader) -> tuple[np.ndarray, np.ndarray]:
        """Graph embeddings (eval mode) and labels of every graph the loader yields."""
        return embed(self, loader)


class ProjectionHead(nn.Sequential):
    """Linear -> ReLU -> Linear, the contrastive projection."""

    def __init__(self, dim: int):
        super().__init__(nn.Linear(dim, dim), nn.ReLU(inplace=True), nn.Linear(dim, dim))


class ContrastModel(nn.Module):
    """Encoder + projection head: ``model(batch)`` gives the projected embedding;
    :meth:`encode_pair` the projected embeddings of two views."""

    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.proj = ProjectionHead(encoder.out_dim)
        xavier_init(self)

    def forward(self, data) -> torch.Tensor:
        return self.proj(self.encoder(data))

    def encode_pair(self, a, b) -> tuple[torch.Tensor, torch.Tensor]:
        """``(model(a), model(b))``. An encoder whose node BatchNorms are segment-aware
        (``segment_norm = True``: :class:`GINEncoder`, the molecule encoder) reads both views
        in one pass, with each view's nodes normalised apart: the numbers of two passes (to
        float rounding), with about half the operations."""
        pair = pair_batches(a, b) if getattr(self.encoder, "segment_norm", False) else None
        if pair is None:
            return self(a), self(b)
        z = self(pair)
        return z[: a.num_graphs], z[a.num_graphs:]
