"""Batched graph operations shared by the view generators (no Python loop over nodes/edges)."""

from __future__ import annotations

import copy
import functools

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.data import Batch, Data
from torch_geometric.utils import scatter, subgraph

from ..errors import DataError
__all__ = ["RowBatchNorm", "as_batch", "first_argmax_per_group", "graph_or_batch", "graph_sizes", "isolate_nodes",
           "keep_nodes", "rank_within_group", "split_graphs", "unbatch"]


class RowBatchNorm(nn.BatchNorm1d):
    """``nn.BatchNorm1d`` (same parameters, buffers and state dict) that also trains on a
    single row: a batch holding one 1-node graph has no batch statistics (its variance is 0),
    so that row is normalised with the running statistics, which it leaves unchanged, instead
    of failing ("Expected more than 1 value per channel when training")."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or x.shape[0] > 1 or self.running_mean is None:
            return super().forward(x)
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps)


def graph_sizes(batch: torch.Tensor, num_graphs: int) -> torch.Tensor:
    return torch.bincount(batch, minlength=num_graphs)


def rank_within_group(group: torch.Tensor, num_groups: int) -> torch.Tensor:
    """A uniformly random rank 0..n_g-1 for every element inside its group."""
    n = group.numel()
    perm = torch.randperm(n, device=group.device)
    perm = perm[torch.argsort(group[perm], stable=True)]
    counts = torch.bincount(group, minlength=num_groups)
    start = torch.cumsum(counts, 0) - counts
    rank = torch.empty(n, dtype=torch.long, device=group.device)
    rank[perm] = torch.arange(n, device=group.device) - start[group[perm]]
    return rank


def first_argmax_per_group(score: torch.Tensor, group: torch.Tensor, num_groups: int) -> torch.Tensor:
    """Index of the (first) highest-scoring element of every group (NaN counts as -inf)."""
    score = torch.nan_to_num(score, nan=float("-inf"))
    best = scatter(score, group, dim=0, dim_size=num_groups, reduce="max")
    idx = torch.arange(score.numel(), device=score.device)
    cand = torch.where(score == best[group], idx, torch.full_like(idx, score.numel()))
    return scatter(cand, group, dim=0, dim_size=num_groups, reduce="min")


#: node-level tensors besides ``x`` and ``batch`` that follow their nodes when some are removed
NODE_ATTRS = ("pos", "node_keep", "node_mask", "node_weight", "node_alive")


def keep_nodes(data, keep: torch.Tensor, x: torch.Tensor | None = None):
    """A shallow copy of ``data`` with only the nodes where ``keep`` is true (relabelled);
    the node-level tensors of :data:`NODE_ATTRS` are subset with them.

    ``x`` replaces the node features before selection (to carry gradients)."""
    out = copy.copy(data)
    x = data.x if x is None else x
    idx = keep.nonzero().view(-1)
    edge_index, edge_attr = subgraph(
        keep, data.edge_index, getattr(data, "edge_attr", None), relabel_nodes=True,
        num_nodes=keep.numel(),
    )
    out.x = x[idx]
    for name in NODE_ATTRS:
        value = getattr(data, name, None)
        if value is not None:
            setattr(out, name, value[idx])
    out.edge_index = edge_index
    if getattr(data, "edge_attr", None) is not None:
        out.edge_attr = edge_attr
    out.batch = data.batch[idx]
    counts = graph_sizes(out.batch, data.num_graphs)
    out.ptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    return out


def isolate_nodes(data, keep: torch.Tensor, x: torch.Tensor):
    """A shallow copy of ``data`` whose edges touching a dropped node are removed; the
    dropped nodes stay as isolated nodes (the released AutoGCL behaviour)."""
    out = copy.copy(data)
    edge_index, edge_attr = subgraph(
        keep, data.edge_index, getattr(data, "edge_attr", None), num_nodes=keep.numel()
    )
    out.x = x
    out.edge_index = edge_index
    if getattr(data, "edge_attr", None) is not None:
        out.edge_attr = edge_attr
    return out


def as_batch(data, what: str = "the augmentation"):
    """``(batch, single)``: ``data`` as a batch (a ``Data`` becomes a batch of one graph,
    ``single`` true) after checking that it has node features."""
    if not isinstance(data, Data):
        raise DataError(f"{what}: expected a PyG Data or Batch, got {type(data).__name__}")
    if getattr(data, "x", None) is None:
        raise DataError(f"{what}: the graph has no node features (x is None); give it some first, e.g. "
                        "with autogcl.NodeFeatures('deg+odeg100')")
    if isinstance(data, Batch) or getattr(data, "batch", None) is not None:
        return data, False
    return Batch.from_data_list([data]), True


def unbatch(view, single: bool):
    """The view as the caller gave the graph: a ``Data`` (without ``batch``/``ptr``) for a
    single graph, else the batch itself."""
    if not single:
        return view
    return Data(**{k: v for k, v in view.to_dict().items() if k not in ("batch", "ptr")})


def graph_or_batch(fn):
    """Let a batch augmentation ``fn(batch, *args)`` also take a single ``Data`` (and return one)."""

    @functools.wraps(fn)
    def wrapper(data, *args, **kwargs):
        batch, single = as_batch(data, fn.__name__)
        return unbatch(fn(batch, *args, **kwargs), single)

    return wrapper


def split_graphs(batch) -> list[Data]:
    """The graphs of a batch as ``Data`` (edges relabelled from 0), read off ``batch.batch``
    (not the batch's slice records, which a view made by :func:`keep_nodes` leaves stale):
    node-level tensors (as many rows as nodes) and edge-level ones (as many rows as edges;
    ``edge`` in the name decides a tie) split with their graphs, one row per graph (``y``)
    goes to its graph; ``batch`` and ``ptr`` are left out."""
    g = int(batch.num_graphs)
    n_nodes, owner = int(batch.num_nodes), batch.batch
    counts = graph_sizes(owner, g)
    ptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    ei = batch.edge_index
    edge_owner = owner[ei[0]] if ei.numel() else ei.new_zeros(0)
    order = torch.argsort(edge_owner, stable=True)
    e_counts = torch.bincount(edge_owner, minlength=g).tolist()
    parts = {"edge_index": (ei[:, order] - ptr[edge_owner[order]]).split(e_counts, dim=1)}
    n_edges = ei.shape[1]
    for key, value in batch.to_dict().items():
        if key in ("batch", "ptr", "edge_index") or not isinstance(value, torch.Tensor) or value.dim() == 0:
            continue
        rows = value.shape[0]
        if rows == n_edges and ("edge" in key or rows != n_nodes):
            parts[key] = value[order].split(e_counts)
        elif rows == n_nodes:
            parts[key] = value.split(counts.tolist())
        elif rows == g:
            parts[key] = value.split(1)
    sized = {} if any(k in parts for k in ("x", "pos")) else {"num_nodes": counts.tolist()}  # else x gives it
    return [Data(**{k: v[i] for k, v in {**parts, **sized}.items()}) for i in range(g)]
