"""ResGCN classifier of Chen et al. 2019 ("Are powerful graph neural nets necessary?"),
as used by the GraphCL/AutoGCL semi-supervised experiments (docs/method.md).

BatchNorm on the input features, one GCN feature layer, ``num_conv_layers`` blocks of
BN -> GCNConv -> ReLU, sum pooling, ``num_fc_layers - 1`` blocks of BN -> Linear -> ReLU,
BN, the class layer and log-softmax. Its BatchNorms take a single row in training (a batch
of one graph, or of one 1-node graph) with the running statistics
(:class:`autogcl.augment.ops.RowBatchNorm`), so every batch a loader makes trains.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv, global_add_pool

from ..augment.ops import RowBatchNorm
from .embed import embed


class ResGCN(nn.Module):
    """``model(batch)`` gives log-probabilities; ``model.represent(batch)`` the ``hidden``-d
    graph representation (before the class layer) that the contrastive losses use."""

    def __init__(self, in_dim: int, num_classes: int, hidden: int = 128, num_conv_layers: int = 3,
                 num_fc_layers: int = 2, dropout: float = 0.0):
        super().__init__()
        self.out_dim = hidden
        self.bn_feat = RowBatchNorm(in_dim)
        self.conv_feat = GCNConv(in_dim, hidden)
        self.bns_conv = nn.ModuleList(RowBatchNorm(hidden) for _ in range(num_conv_layers))
        self.convs = nn.ModuleList(GCNConv(hidden, hidden) for _ in range(num_conv_layers))
        self.bns_fc = nn.ModuleList(RowBatchNorm(hidden) for _ in range(num_fc_layers - 1))
        self.lins = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(num_fc_layers - 1))
        self.bn_hidden = RowBatchNorm(hidden)
        self.lin_class = nn.Linear(hidden, num_classes)
        self.dropout = dropout
        for m in self.modules():  # BN initialisation of the reference implementation
            if isinstance(m, RowBatchNorm):
                nn.init.constant_(m.weight, 1.0)
                nn.init.constant_(m.bias, 1e-4)

    def represent(self, data) -> torch.Tensor:
        x, ei = data.x.float(), data.edge_index
        x = F.relu(self.conv_feat(self.bn_feat(x), ei))
        for bn, conv in zip(self.bns_conv, self.convs):
            x = F.relu(conv(bn(x), ei))
        x = global_add_pool(x, data.batch, size=int(data.num_graphs))
        for bn, lin in zip(self.bns_fc, self.lins):
            x = F.relu(lin(bn(x)))
        return self.bn_hidden(x)

    def embed(self, loader):
        """``represent`` of every graph the loader yields (eval mode), and the labels."""
        return embed(self, loader, self.represent)

    def forward(self, data) -> torch.Tensor:
        x = self.represent(data)
        if self.dropout > 0:
            x = F.dropout(x, p=self.dropout, training=self.training)
        return F.log_softmax(self.lin_class(x), dim=-1)
