"""GraphCL's random augmentations (You et al. 2020), applied to a whole batch at once, on the
batch's device.

Each takes a PyG ``Batch`` and a ratio and returns a new batch; graphs never lose all of
their nodes. ``RandomAugmentor("random4")`` picks one of the four at every call, so the
two views of a mini-batch get two independently drawn augmentations.
"""

from __future__ import annotations

import copy

import torch
from torch_geometric.utils import scatter

from ..choices import AUGMENTATIONS as AUGMENTATION_NAMES
from ..errors import ConfigError
from .ops import graph_sizes, keep_nodes, rank_within_group


def _count(n: torch.Tensor, ratio: float) -> torch.Tensor:
    return torch.floor(n.double() * ratio).long()


def node_drop_mask(data, ratio: float = 0.2) -> torch.Tensor:
    """Which nodes :func:`node_drop` keeps: all but ``floor(n * ratio)`` random nodes per graph."""
    g = int(data.num_graphs)
    n = graph_sizes(data.batch, g)
    k = torch.minimum(_count(n, ratio), (n - 1).clamp(min=0))
    return rank_within_group(data.batch, g) >= k[data.batch]


def node_drop(data, ratio: float = 0.2):
    """Remove ``floor(n * ratio)`` random nodes of each graph (at least one stays)."""
    return keep_nodes(data, node_drop_mask(data, ratio))


def edge_pert(data, ratio: float = 0.2):
    """Remove ``floor(E * ratio)`` random (directed) edges of each graph and add as many
    random node pairs of the same graph."""
    g = int(data.num_graphs)
    n = graph_sizes(data.batch, g)
    ptr = torch.cat([n.new_zeros(1), n.cumsum(0)])
    ei = data.edge_index
    edge_graph = data.batch[ei[0]]
    k = _count(torch.bincount(edge_graph, minlength=g), ratio)
    kept = rank_within_group(edge_graph, g) >= k[edge_graph]
    new_graph = torch.repeat_interleave(torch.arange(g, device=ei.device), k)
    size = n[new_graph].double()
    draws = new_graph.numel()
    src = ptr[new_graph] + torch.floor(torch.rand(draws, dtype=torch.double, device=ei.device) * size).long()
    dst = ptr[new_graph] + torch.floor(torch.rand(draws, dtype=torch.double, device=ei.device) * size).long()
    out = copy.copy(data)
    out.edge_index = torch.cat([ei[:, kept], torch.stack([src, dst])], dim=1)
    if getattr(data, "edge_attr", None) is not None:
        # added edges carry the attributes of the edges they replace
        out.edge_attr = torch.cat([data.edge_attr[kept], data.edge_attr[~kept]], dim=0)
    return out


def subgraph(data, ratio: float = 0.2):
    """Keep a connected subgraph of ``max(1, floor(n * (1 - ratio)))`` nodes grown from a
    random centre by random breadth-first expansion (one tensor step per hop)."""
    g = int(data.num_graphs)
    n = graph_sizes(data.batch, g)
    ptr = torch.cat([n.new_zeros(1), n.cumsum(0)])
    target = torch.clamp(_count(n, 1.0 - ratio), min=1)
    centre = ptr[:-1] + torch.floor(torch.rand(g, dtype=torch.double, device=n.device) * n.double()).long()
    centre = centre[n > 0]
    in_set = torch.zeros(data.num_nodes, dtype=torch.bool, device=n.device)
    in_set[centre] = True
    size = graph_sizes(data.batch[in_set], g)
    src, dst = data.edge_index
    while True:
        need = target - size
        frontier = torch.zeros_like(in_set)
        frontier[dst[in_set[src]]] = True
        cand = (frontier & ~in_set & (need[data.batch] > 0)).nonzero().view(-1)
        if cand.numel() == 0:
            break
        cg = data.batch[cand]
        take = cand[rank_within_group(cg, g) < need[cg]]
        in_set[take] = True
        size = size + graph_sizes(data.batch[take], g)
    return keep_nodes(data, in_set)


def attr_mask(data, ratio: float = 0.2):
    """Replace the features of ``floor(n * ratio)`` random nodes of each graph by the
    graph's mean feature vector. Categorical (integer) features, such as atom ids, are
    masked the molecule way instead: the view marks those nodes with ``node_mask`` and the
    encoder gives them the mask token's embedding."""
    g = int(data.num_graphs)
    n = graph_sizes(data.batch, g)
    mask = rank_within_group(data.batch, g) < _count(n, ratio)[data.batch]
    out = copy.copy(data)
    if not torch.is_floating_point(data.x):
        out.node_mask = mask.float()
        out.node_keep = 1.0 - out.node_mask
        return out
    token = scatter(data.x.float(), data.batch, dim=0, dim_size=g, reduce="mean")
    out.x = torch.where(mask.view(-1, 1), token[data.batch], data.x.float())
    return out


def identity(data, ratio: float = 0.0):
    return data


AUGMENTATIONS = {
    "node_drop": node_drop,
    "edge_pert": edge_pert,
    "subgraph": subgraph,
    "attr_mask": attr_mask,
    "none": identity,
}
RANDOM4 = ("node_drop", "subgraph", "edge_pert", "attr_mask")


class RandomAugmentor:
    """Callable augmentation by name: one of :data:`AUGMENTATIONS` or ``random4`` (which
    draws one of the four for every call, from the CPU generator); ``view = aug(batch)``."""

    names = AUGMENTATION_NAMES  # AUGMENTATIONS and random4 (tests/test_choices.py)

    def __init__(self, name: str = "random4", ratio: float = 0.2):
        if name not in self.names:
            raise ConfigError(f"unknown augmentation {name!r}; choose from {', '.join(self.names)}")
        if not 0.0 <= ratio < 1.0:
            raise ConfigError(f"augmentation ratio must be in [0, 1), got {ratio}")
        self.name, self.ratio = name, ratio

    def __call__(self, data):
        name = self.name
        if name == "random4":
            name = RANDOM4[int(torch.randint(len(RANDOM4), (1,)))]
        return AUGMENTATIONS[name](data, self.ratio)

    def __repr__(self) -> str:
        return f"RandomAugmentor({self.name!r}, ratio={self.ratio})"
