"""GraphCL's random augmentations (You et al. 2020), applied to a whole batch at once, on the
batch's device.

Each takes a PyG ``Batch`` (or a single ``Data``, returned as a ``Data``) and a ratio and
returns a new one; graphs never lose all of their nodes. ``RandomAugmentor("random4")``
picks one of the four at every call, so the two views of a mini-batch get two
independently drawn augmentations.

:class:`RandomAugmentor`, :class:`Compose` and :class:`RandomChoice` are PyG
``BaseTransform`` objects: they can be a dataset's ``transform``, and combine into one's own
views (``Compose([RandomAugmentor("node_drop", 0.1), RandomAugmentor("attr_mask", 0.3)])``),
which ``autogcl.GraphCL(aug=...)`` takes for either view. Random draws come from torch's
global generator (``autogcl.seed_everything`` fixes them).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Sequence

import torch
from torch_geometric.data import Batch, Data
from torch_geometric.transforms import BaseTransform
from torch_geometric.utils import scatter

from ..choices import (
    AUGMENTATIONS as AUGMENTATION_NAMES,
    AUG_ATTR_MASK,
    AUG_EDGE_PERT,
    AUG_NODE_DROP,
    AUG_RANDOM4,
    AUG_SUBGRAPH,
    check_choice,
)
from ..errors import ConfigError, DataError
from .ops import as_batch, graph_or_batch, graph_sizes, keep_nodes, rank_within_group, split_graphs, unbatch

__all__ = ["AUGMENTATIONS", "RANDOM4", "CheckedAugmentation", "Compose", "PerGraph", "RandomAugmentor", "RandomChoice",
           "as_augmentation", "attr_mask", "edge_pert", "identity", "node_drop", "node_drop_mask", "subgraph"]


def _count(n: torch.Tensor, ratio: float) -> torch.Tensor:
    return torch.floor(n.double() * ratio).long()


def node_drop_mask(data, ratio: float = 0.2) -> torch.Tensor:
    """Which nodes :func:`node_drop` keeps: all but ``floor(n * ratio)`` random nodes per graph."""
    g = int(data.num_graphs)
    n = graph_sizes(data.batch, g)
    k = torch.minimum(_count(n, ratio), (n - 1).clamp(min=0))
    return rank_within_group(data.batch, g) >= k[data.batch]


@graph_or_batch
def node_drop(data, ratio: float = 0.2):
    """Remove ``floor(n * ratio)`` random nodes of each graph (at least one stays)."""
    return keep_nodes(data, node_drop_mask(data, ratio))


@graph_or_batch
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


@graph_or_batch
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


@graph_or_batch
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
        if not _molecule_layout(data):
            warnings.warn(f"attr_mask: x holds integers ({data.x.dtype}), read as category ids: masked nodes are "
                          "marked with node_mask, which only an encoder of categories (the molecule encoder) reads, "
                          "and x is unchanged; for numeric features convert x to float first (x.float())",
                          UserWarning, stacklevel=3)
        out.node_mask = mask.float()
        out.node_keep = 1.0 - out.node_mask
        return out
    token = scatter(data.x.float(), data.batch, dim=0, dim_size=g, reduce="mean")
    out.x = torch.where(mask.view(-1, 1), token[data.batch], data.x.float())
    return out


def _molecule_layout(data) -> bool:
    """Integer node and edge features of two columns each: the molecule graphs' atom and bond ids
    (:mod:`autogcl.data.molecules`), which :func:`attr_mask` masks the molecule way."""
    attr = getattr(data, "edge_attr", None)
    return data.x.dim() == 2 and data.x.shape[1] == 2 and attr is not None and not attr.is_floating_point()


def identity(data, ratio: float = 0.0):
    return data


AUGMENTATIONS = {
    AUG_NODE_DROP: node_drop,
    AUG_EDGE_PERT: edge_pert,
    AUG_SUBGRAPH: subgraph,
    AUG_ATTR_MASK: attr_mask,
    "none": identity,
}
RANDOM4 = (AUG_NODE_DROP, AUG_SUBGRAPH, AUG_EDGE_PERT, AUG_ATTR_MASK)


class RandomAugmentor(BaseTransform):
    """Augmentation by name, a PyG transform: one of :data:`AUGMENTATIONS` or ``random4``
    (which draws one of the four for every call, from torch's global generator);
    ``view = aug(batch)`` or ``view = aug(data)``."""

    names = AUGMENTATION_NAMES  # AUGMENTATIONS and random4 (tests/test_choices.py)

    def __init__(self, name: str = AUG_RANDOM4, ratio: float = 0.2):
        check_choice("augmentation", name, self.names)
        if not 0.0 <= ratio < 1.0:
            raise ConfigError(f"augmentation ratio must be in [0, 1), got {ratio}")
        self.name, self.ratio = name, ratio

    def forward(self, data):
        batch, single = as_batch(data, f"augmentation {self.name}")
        name = self.name
        if name == AUG_RANDOM4:
            name = RANDOM4[int(torch.randint(len(RANDOM4), (1,)))]
        return unbatch(AUGMENTATIONS[name](batch, self.ratio), single)

    def __repr__(self) -> str:
        return f"RandomAugmentor({self.name!r}, ratio={self.ratio})"


def _check_augmentations(augs, what: str) -> list:
    augs = list(augs)
    if not augs:
        raise ConfigError(f"{what} needs at least one augmentation")
    bad = [a for a in augs if not callable(a)]
    if bad:
        raise ConfigError(f"{what}: {bad[0]!r} is not an augmentation (a callable taking a graph or batch)")
    return [as_augmentation(a) for a in augs]


def is_per_graph(transform) -> bool:
    """A PyG transform (``torch_geometric.transforms``), written for one graph at a time: on a
    batch it would treat all graphs as one (``T.VirtualNode`` would link every graph of it)."""
    return isinstance(transform, BaseTransform) and type(transform).__module__.startswith("torch_geometric.")


class PerGraph(BaseTransform):
    """A per-graph transform (PyG's ``T.VirtualNode``, ``T.HalfHop``, ...) as an augmentation
    of a batch: applied to every graph of the batch apart (:func:`autogcl.augment.ops.split_graphs`),
    then batched again. A Python loop over the graphs: slower than the batched augmentations."""

    def __init__(self, transform: Callable):
        self.transform = transform

    def forward(self, data):
        batch, single = as_batch(data, repr(self.transform))
        graphs = [self.transform(g) for g in split_graphs(batch)]
        return unbatch(Batch.from_data_list(graphs), single)

    def __repr__(self) -> str:
        return f"PerGraph({self.transform!r})"


class CheckedAugmentation(BaseTransform):
    """An augmentation of one's own, checked at every call: a per-graph PyG transform runs per
    graph (:class:`PerGraph`), and the view must be a PyG ``Data``/``Batch`` with as many graphs
    and node features of the same width, or a :class:`autogcl.DataError` names the
    augmentation. Its ``repr`` is the augmentation's (what a model file records)."""

    def __init__(self, augmentation: Callable):
        self.augmentation = augmentation
        self._apply = PerGraph(augmentation) if is_per_graph(augmentation) else augmentation

    def forward(self, data):
        batch, single = as_batch(data, repr(self.augmentation))
        try:
            view = self._apply(batch)
        except (ValueError, TypeError, IndexError, RuntimeError, KeyError, AttributeError) as exc:
            if isinstance(exc, torch.cuda.OutOfMemoryError):
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise DataError(f"augmentation {self.augmentation!r} failed on a batch of {batch.num_graphs} graphs "
                            f"({type(exc).__name__}: {first})") from exc
        _check_view(batch, view, self.augmentation)
        return unbatch(view, single)

    def __repr__(self) -> str:
        return repr(self.augmentation)


def _check_view(batch, view, aug) -> None:
    if not isinstance(view, Data):
        raise DataError(f"augmentation {aug!r} returned a {type(view).__name__}, not a PyG Data or Batch")
    x = getattr(view, "x", None)
    if not isinstance(x, torch.Tensor):
        raise DataError(f"augmentation {aug!r} returned a view without node features (x)")
    before, after = batch.x.shape[1:], x.shape[1:]
    if before != after:
        width = f"{before[0] if before else 1} to {after[0] if after else 1}" if len(before) < 2 else \
            f"{tuple(before)} to {tuple(after)}"
        raise DataError(f"augmentation {aug!r} changes the width of the node features x from {width}: the encoder "
                        "reads as many features as the graphs have, so a view must keep them (a transform that adds "
                        "features, such as T.LocalDegreeProfile, belongs in the dataset's transform, applied before "
                        "the model reads the graphs)")
    owner = getattr(view, "batch", None)
    if owner is not None and owner.numel() != x.shape[0]:
        raise DataError(f"augmentation {aug!r} returned a view whose x has {x.shape[0]} rows for {owner.numel()} "
                        "nodes in its batch vector (a transform written for one graph, applied to a batch?)")
    if int(getattr(view, "num_graphs", 1) or 1) != int(batch.num_graphs):
        raise DataError(f"augmentation {aug!r} returned a view of {view.num_graphs} graphs for a batch of "
                        f"{batch.num_graphs}")


def as_augmentation(aug: Callable) -> Callable:
    """``aug`` ready to augment batches: autogcl's own augmentations as they are, any other
    callable as a :class:`CheckedAugmentation`."""
    if isinstance(aug, (RandomAugmentor, Compose, RandomChoice, CheckedAugmentation, PerGraph)):
        return aug
    return CheckedAugmentation(aug)


class Compose(BaseTransform):
    """Apply augmentations one after another: ``Compose([a, b])(batch) == b(a(batch))``.

    Each is a :class:`RandomAugmentor`, another ``Compose`` / :class:`RandomChoice`, or any
    callable taking a ``Batch`` and returning its view (PyG transforms too)."""

    def __init__(self, augmentations: Sequence[Callable]):
        self.augmentations = _check_augmentations(augmentations, "Compose")

    def forward(self, data):
        batch, single = as_batch(data, "Compose")
        for aug in self.augmentations:
            batch = aug(batch)
        return unbatch(batch, single)

    def __repr__(self) -> str:
        return f"Compose([{', '.join(map(repr, self.augmentations))}])"


class RandomChoice(BaseTransform):
    """Apply ``num_choices`` of the augmentations, drawn without replacement at every call
    (in the order they are given), to the whole batch."""

    def __init__(self, augmentations: Sequence[Callable], num_choices: int = 1):
        self.augmentations = _check_augmentations(augmentations, "RandomChoice")
        if not 1 <= num_choices <= len(self.augmentations):
            raise ConfigError(f"RandomChoice: num_choices must be in [1, {len(self.augmentations)}], got {num_choices}")
        self.num_choices = num_choices

    def forward(self, data):
        batch, single = as_batch(data, "RandomChoice")
        picks = torch.randperm(len(self.augmentations))[: self.num_choices].sort().values.tolist()
        for i in picks:
            batch = self.augmentations[i](batch)
        return unbatch(batch, single)

    def __repr__(self) -> str:
        return f"RandomChoice([{', '.join(map(repr, self.augmentations))}], num_choices={self.num_choices})"
