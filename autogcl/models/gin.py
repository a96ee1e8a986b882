"""The 5-layer GIN graph encoder and its contrastive projection head (GraphCL/AutoGCL, docs/method.md)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GINConv, GINEConv, global_add_pool

from ..data.batching import pair_batches
from ..errors import DataError
from .embed import embed
from .norm import SegmentBatchNorm
__all__ = ["ContrastModel", "GINClassifier", "GINEncoder", "ProjectionHead", "edge_features", "xavier_init"]



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
    concatenation of every layer's sum-pooled output (``num_layers * hidden``): an
    unnormalised sum over the nodes, so its scale grows with graph size.

    ``edge_dim``: ``None`` (default) ignores ``edge_attr``; an int makes every layer a
    GINE convolution (Hu et al. 2020, PyG's ``GINEConv``): each neighbour's message is
    ``ReLU(x_j + Linear(edge_attr_ij))``, with ``edge_attr`` of ``edge_dim`` columns (read as
    float; a 1-D ``edge_attr`` is one column)."""

    segment_norm = True  #: reads two views in one batch (``ContrastModel.encode_pair``)

    def __init__(self, in_dim: int, hidden: int = 128, num_layers: int = 5, edge_dim: int | None = None):
        super().__init__()
        self.out_dim = hidden * num_layers
        self.edge_dim = edge_dim
        self.convs, self.bns = nn.ModuleList(), nn.ModuleList()
        for i in range(num_layers):
            d_in = in_dim if i == 0 else hidden
            # ReLUs in place: the Linear layers' backward never reads their outputs (same numbers,
            # two activations fewer per layer held for backward)
            mlp = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, hidden))
            self.convs.append(GINConv(mlp) if edge_dim is None else GINEConv(mlp, edge_dim=edge_dim))
            self.bns.append(SegmentBatchNorm(hidden))

    def forward(self, data) -> torch.Tensor:
        x, size = data.x.float(), int(data.num_graphs)
        segments = getattr(data, "_segments", None)  # two views in one batch: normalised apart
        edge = () if self.edge_dim is None else (edge_features(data, self.edge_dim),)
        pooled = []
        for conv, bn in zip(self.convs, self.bns):
            x = bn(F.relu(conv(x, data.edge_index, *edge), inplace=True), segments)
            pooled.append(global_add_pool(x, data.batch, size=size))
        return torch.cat(pooled, dim=1)

    def embed(self, loader) -> tuple[np.ndarray, np.ndarray]:
        """Graph embeddings (eval mode) and labels of every graph the loader yields."""
        return embed(self, loader)


def edge_features(data, edge_dim: int) -> torch.Tensor:
    """``data.edge_attr`` as a float ``edges x edge_dim`` matrix (a clear error when missing or
    of another width)."""
    attr = getattr(data, "edge_attr", None)
    if attr is None:
        raise DataError(f"the encoder reads edge features (edge_dim={edge_dim}) but the graphs have no edge_attr")
    attr = attr.float().view(attr.shape[0], -1)
    if attr.shape[1] != edge_dim:
        raise DataError(f"edge_attr has {attr.shape[1]} columns, the encoder expects edge_dim={edge_dim}")
    return attr


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


class GINClassifier(nn.Module):
    """A graph classifier over an encoder (e.g. :class:`GINEncoder`): ``model(batch)`` gives
    class log-probabilities through a two-layer head, ``model.represent(batch)`` the graph
    embedding the contrastive losses use (the interface of the semi-supervised strategies).
    It has no graph-level BatchNorm, so a batch of a single graph trains."""

    def __init__(self, encoder: nn.Module, num_classes: int, hidden: int = 128):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Sequential(nn.Linear(encoder.out_dim, hidden), nn.ReLU(inplace=True),
                                  nn.Linear(hidden, num_classes))
        xavier_init(self.head)

    def represent(self, data) -> torch.Tensor:
        return self.encoder(data)

    def forward(self, data) -> torch.Tensor:
        return F.log_softmax(self.head(self.encoder(data)), dim=-1)
