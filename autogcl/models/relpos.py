"""A superpixel classifier that reads the offsets between neighbouring nodes (RelPosNet),
for the view visualisation on MNIST (the paper's view figure): ResGCN's sum of GCN messages over absolute
positions learns slowly on superpixel graphs."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import (
    MessagePassing,
    global_add_pool,
    global_max_pool,
    global_mean_pool,
)
from torch_geometric.utils import scatter

from ..errors import ConfigError


class RelPosConv(MessagePassing):
    """``h_i = MLP(mean_j w_j relu(A x_j + B (p_j - p_i)) + C x_i)`` over the edges ``j -> i``.

    A PointNet-style layer whose edge function is linear before the ReLU, so it is computed
    per node (``A x``, ``B p``) and the per-edge work is a gather, an add and a scatter.
    ``w`` (optional, 0/1 per node, differentiable) weighs what a node sends; the mean is
    over the senders of weight 1. ``aggr="max"`` is a PointNet max instead: as accurate on
    whole graphs, but a silenced sender never wins a max, so its weight gets no gradient
    there (see :class:`autogcl.augment.learnable.GeometryKeepingGenerator`)."""

    def __init__(self, in_dim: int, hidden: int, aggr: str = "mean"):
        if aggr not in ("mean", "max"):
            raise ConfigError(f"aggr must be 'mean' or 'max', got {aggr!r}")
        super().__init__(aggr="max" if aggr == "max" else "add")
        self.mean = aggr == "mean"
        self.lin_x, self.lin_p = nn.Linear(in_dim, hidden), nn.Linear(2, hidden, bias=False)
        self.root = nn.Linear(in_dim, hidden)
        self.mlp = nn.Sequential(nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, hidden))

    def forward(self, x, pos, edge_index, w=None):
        m = self.propagate(edge_index, a=self.lin_x(x), p=self.lin_p(pos), w=w)  # 0 without senders
        if self.mean:
            src, dst = edge_index
            sent = x.new_ones(src.numel(), 1) if w is None else w[src]
            m = m / scatter(sent, dst, dim=0, dim_size=x.shape[0], reduce="sum").clamp_min(1.0)
        return self.mlp(m + self.root(x))

    def message(self, a_j, p_j, p_i, w_j):
        m = F.relu(a_j + p_j - p_i)
        return m if w_j is None else m * w_j


class RelPosNet(nn.Module):
    """Superpixel classifier: ``num_layers`` RelPosConv -> BN -> ReLU over node features that
    hold positions in ``pos_cols``; mean and max pooling of every layer, then an MLP.
    ``model(batch)`` gives log-probabilities, ``model.represent(batch)`` the graph vector.

    A batch may carry ``node_weight`` (0/1 per node, differentiable): a node of weight 0
    sends no messages and is left out of the pooling, as if it were removed."""

    def __init__(self, in_dim: int, num_classes: int, hidden: int = 64, num_layers: int = 4, *,
                 pos_cols, aggr: str = "mean", dropout: float = 0.0):
        super().__init__()
        self.pos_cols = list(pos_cols)
        self.convs = nn.ModuleList(RelPosConv(in_dim if i == 0 else hidden, hidden, aggr)
                                   for i in range(num_layers))
        self.bns = nn.ModuleList(nn.BatchNorm1d(hidden) for _ in range(num_layers))
        self.lin = nn.Sequential(nn.Linear(2 * hidden * num_layers, hidden), nn.BatchNorm1d(hidden), nn.ReLU())
        self.lin_class = nn.Linear(hidden, num_classes)
        self.out_dim, self.dropout = hidden, dropout

    def represent(self, data) -> torch.Tensor:
        x, n, b = data.x.float(), int(data.num_graphs), data.batch
        w = getattr(data, "node_weight", None)
        w = None if w is None else w.view(-1, 1)
        pos, hs = x[:, self.pos_cols], []
        for conv, bn in zip(self.convs, self.bns):
            x = F.relu(bn(conv(x, pos, data.edge_index, w)))
            hs.append(x)
        h = torch.cat(hs, 1)  # >= 0, so a zeroed row never wins the max pooling
        if w is None:
            mean, top = global_mean_pool(h, b, n), global_max_pool(h, b, n)
        else:
            hw = h * w
            mean = global_add_pool(hw, b, n) / global_add_pool(w, b, n).clamp_min(1e-6)
            top = global_max_pool(hw, b, n)
        return self.lin(torch.cat([mean, top], 1))

    def forward(self, data) -> torch.Tensor:
        x = F.dropout(self.represent(data), p=self.dropout, training=self.training)
        return F.log_softmax(self.lin_class(x), dim=-1)
