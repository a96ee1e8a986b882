"""The learnable view generator of AutoGCL (paper, Section 3.1).

A small GIN scores every node with one logit per operation (0 = keep, 1 = drop,
2 = mask), samples one operation per node with the hard Gumbel-softmax (straight-through
gradient) and applies it to the whole batch at once. :meth:`ViewGenerator.inspect` shows
what a generator does to a batch: the operation of every node and their probabilities.
"""

from __future__ import annotations

from ..choices import DROPPED, DROP_ISOLATE, DROP_REMOVE, DROP_WEIGHT, MASK_SCALAR, MASK_TOKENS, check_choice
import copy
from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GINConv
from torch_geometric.transforms import BaseTransform

from ..errors import ConfigError, DataError, TrainingError
from .ops import NODE_ATTRS, RowBatchNorm, as_batch, isolate_nodes, keep_nodes, unbatch
__all__ = ["OPERATIONS", "FixedView", "GeneratedView", "GeometryKeepingGenerator",
           "MoleculeViewGenerator", "NodeScorer", "ViewDecision", "ViewGenerator", "sample_grouped",
           "shared_first_aggregate"]


KEEP, DROP, MASK = 0, 1, 2
#: operation names by column of a generator's sample matrix
OPERATIONS = ("keep", "drop", "mask")


class ViewDecision(NamedTuple):
    """What a generator does to a batch (:meth:`ViewGenerator.inspect`).

    ``op``: the operation of every node (0 keep, 1 drop, 2 mask; names in ``names``);
    ``probs``: nodes x operations, the softmax of the generator's scores; ``sample``: the
    one-hot matrix the view was made with."""

    op: torch.Tensor
    probs: torch.Tensor
    sample: torch.Tensor
    names: tuple[str, ...]


class NodeScorer(nn.Module):
    """GIN layers ``GINConv(MLP) -> ReLU -> BatchNorm``; the last outputs ``out_dim`` logits."""

    def __init__(self, in_dim: int, hidden: int = 128, out_dim: int = 2, num_layers: int = 2):
        super().__init__()
        self.convs, self.bns = nn.ModuleList(), nn.ModuleList()
        for i in range(num_layers):
            d_in = in_dim if i == 0 else hidden
            d_out = out_dim if i == num_layers - 1 else hidden
            mlp = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, d_out))
            self.convs.append(GINConv(mlp))
            self.bns.append(RowBatchNorm(d_out))  # BatchNorm1d that also trains on a 1-node batch

    def first_aggregate(self, data) -> torch.Tensor:
        """The first layer's neighbour sum, ``sum_j x_j`` (what two scorers of the same batch share)."""
        x = data.x.float()  # integer or float64 features are read as float32, as the encoder reads them
        return self.convs[0].propagate(data.edge_index, x=(x, x), size=None)

    def forward(self, data, first: torch.Tensor | None = None) -> torch.Tensor:
        """Logits of every node; ``first``: :meth:`first_aggregate` of ``data``, when already
        computed (the result is the same, bit for bit)."""
        x = data.x.float()
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            if i == 0 and first is not None:  # GINConv.forward with its neighbour sum given
                h = conv.nn(first + (1 + conv.eps) * x)
            else:
                h = conv(x, data.edge_index)
            x = bn(F.relu(h, inplace=True))  # in place: as GINEncoder
        return x


def shared_first_aggregate(gens, data) -> torch.Tensor | None:
    """The first-layer neighbour sum that the GIN scorers of ``gens`` share on ``data`` (their
    first layers read the same features over the same edges), or ``None`` when a generator
    has another scorer."""
    scorers = [getattr(g, "scorer", None) for g in gens]
    if len(scorers) < 2 or not all(type(s) is NodeScorer for s in scorers):
        return None
    return scorers[0].first_aggregate(data)


def sample_grouped(gens, data) -> list[torch.Tensor] | None:
    """The samples of several generators of one setting on ``data`` from one grouped pass (their
    scorers as one network of stacked channels, e.g.
    :func:`autogcl.models.mol_gin.grouped_scores`), one Gumbel draw for all (``F.gumbel_softmax``
    of the ``nodes x generators x operations`` logits) and one forced-keep pass; ``None`` where
    they cannot be grouped. Given the same noise, equal to each generator's own
    :meth:`ViewGenerator.sample` to float rounding; the random stream is not that of separate
    draws."""
    g0 = gens[0]
    grouped = getattr(type(g0.scorer), "grouped", None)
    if grouped is None or any(type(g) is not type(g0) or type(g.scorer) is not type(g0.scorer) or g.tau != g0.tau
                              or g.add_mask != g0.add_mask for g in gens):
        return None
    logits = grouped([g.scorer for g in gens], data)  # nodes x generators x operations
    if logits is None:
        return None
    n, k, ops = logits.shape
    flat = F.gumbel_softmax(logits, tau=g0.tau, hard=True).view(n * k, ops)
    # every (graph, generator) pair a group of its own: row i * k + j is node i of generator j
    groups = (data.batch.view(-1, 1) * k + torch.arange(k, device=data.batch.device)).view(-1)
    alive = getattr(data, "node_alive", None)
    alive = None if alive is None else alive.view(-1, 1).expand(n, k).reshape(-1)
    flat = flat.index_add(0, *g0._forced_keep(flat.detach(), logits[..., KEEP].detach().reshape(-1), groups,
                                              int(data.num_graphs) * k, alive))
    sample = flat.view(n, k, ops)
    return [sample[:, j] for j in range(k)]


class ViewGenerator(nn.Module):
    """Learnable augmentation: ``view, sample = gen(batch)``.

    Args:
        in_dim: node feature size.
        hidden, num_layers: the scoring GIN (released: 2 layers of 128).
        add_mask: offer the mask operation (3 operations instead of 2).
        dropped: ``"isolate"`` keeps dropped nodes as zero-feature isolated nodes (released
            code); ``"remove"`` deletes them from the batch.
        mask_token: ``"scalar"`` (the mean of the whole feature matrix, released) or
            ``"feature"`` (the per-feature mean over the batch).
        tau: Gumbel-softmax temperature.
        scorer: replace the GIN scorer (e.g. for molecules with embedded atom types); it
            maps a batch to ``num_nodes x num_ops`` logits.
    """

    def __init__(
        self,
        in_dim: int,
        hidden: int = 128,
        num_layers: int = 2,
        add_mask: bool = False,
        dropped: str = DROP_ISOLATE,
        mask_token: str = MASK_SCALAR,
        tau: float = 1.0,
        scorer: nn.Module | None = None,
    ):
        super().__init__()
        check_choice("dropped", dropped, DROPPED)
        check_choice("mask_token", mask_token, MASK_TOKENS)
        if not tau > 0:
            raise ConfigError(f"the Gumbel-softmax temperature must be positive, got {tau}")
        self.num_ops = 3 if add_mask else 2
        self.add_mask, self.dropped, self.mask_token, self.tau = add_mask, dropped, mask_token, tau
        self.scorer = scorer or NodeScorer(in_dim, hidden, self.num_ops, num_layers)

    def scores(self, data, first: torch.Tensor | None = None, check: bool = False) -> torch.Tensor:
        """The scorer's logits, nodes x operations; ``first``: the GIN scorer's first neighbour
        sum when already computed (:func:`shared_first_aggregate`). ``check`` reads the features
        and scores back to name a non-finite one (what :meth:`inspect` does; the training loop
        checks its data once, when it is batched, and its losses once per epoch)."""
        x = getattr(data, "x", None)
        if x is None:
            raise DataError("the graphs have no node features (x is None); give them some, e.g. with "
                            "autogcl.NodeFeatures('deg+odeg100')")
        if check:
            x_ok = torch.isfinite(x).view(x.shape[0], -1).all(1) if torch.is_floating_point(x) else None
            if x_ok is not None and not x_ok.all():
                bad = int((~x_ok).nonzero()[0])
                raise TrainingError(
                    f"node features are not finite at node {bad} of the batch (graph "
                    f"{int(data.batch[bad])} of the batch)"
                )
        logits = self.scorer(data) if first is None else self.scorer(data, first)
        if check and not torch.isfinite(logits).all():
            raise TrainingError("view generator scores are not finite (diverged weights? "
                                "try a lower learning rate)")
        return logits

    def probabilities(self, data) -> torch.Tensor:
        """Per-node operation probabilities (nodes x operations; columns keep, drop[, mask]) of a
        ``Batch`` or a single ``Data``."""
        return self.scores(as_batch(data, "ViewGenerator")[0], check=True).softmax(-1)

    def sample(self, data, deterministic: bool = False, logits: torch.Tensor | None = None) -> torch.Tensor:
        """One-hot operation per node (``N x num_ops``) with straight-through gradients, and
        at least one kept node in every graph. ``deterministic`` takes every node's most
        probable operation instead of a Gumbel-softmax draw. Never waits for the device."""
        logits = self.scores(data) if logits is None else logits
        if deterministic:
            soft = logits.softmax(-1)
            hard = F.one_hot(logits.argmax(-1), self.num_ops).to(soft.dtype)
            sample = hard + soft - soft.detach()
        else:
            sample = F.gumbel_softmax(logits, tau=self.tau, hard=True)
        return sample.index_add(0, *self._forced_keep(sample.detach(), logits[:, KEEP].detach(), data.batch,
                                                      int(data.num_graphs), getattr(data, "node_alive", None)))

    def _forced_keep(self, sample: torch.Tensor, keep_logit: torch.Tensor, batch: torch.Tensor,
                     num_graphs: int, alive: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(forced, fix)``: in a graph left without a node, the node with the highest keep
        logit is kept: ``sample.index_add(0, forced, fix)`` turns its row into the keep row
        (``fix``: keep row - row there, 0 in the other graphs; the row keeps its gradient path).
        Computed for every graph and applied where needed, so that no step waits to learn which
        graphs need it; a few operations, none of them differentiated. ``alive`` (0/1 per node):
        a node of weight 0 (padding, :func:`autogcl.data.batching.pad_batch`) neither counts as
        kept nor is ever the one forced."""
        retained = sample[:, KEEP] + sample[:, MASK] if self.add_mask else sample[:, KEEP]  # masked nodes stay
        if alive is not None:
            retained = retained * alive.to(retained.dtype)
        kept = retained.new_zeros(num_graphs).index_add_(0, batch, retained)
        # the first node of highest keep logit in every graph (NaN counts as -inf)
        score = keep_logit.nan_to_num(nan=float("-inf"))
        if alive is not None:
            score = score.masked_fill(alive == 0, float("-inf"))
        best = score.new_zeros(num_graphs).scatter_reduce_(0, batch, score, "amax", include_self=False)
        idx = torch.arange(score.numel(), device=score.device)
        cand = torch.where(score == best.index_select(0, batch), idx, score.numel())
        forced = idx.new_zeros(num_graphs).scatter_reduce_(0, batch, cand, "amin", include_self=False)
        keep_row = torch.zeros(self.num_ops, dtype=sample.dtype, device=sample.device)
        keep_row[KEEP] = 1.0
        fix = (keep_row - sample.index_select(0, forced)) * (kept == 0).view(-1, 1)
        return forced, fix

    @torch.no_grad()
    def inspect(self, data, deterministic: bool = False) -> ViewDecision:
        """The operation chosen for every node of ``data`` (a sampled draw, or the argmax with
        ``deterministic``) and the per-node operation probabilities; no gradients. ``data``: a
        ``Batch`` or a single ``Data``."""
        data = as_batch(data, "ViewGenerator")[0]
        logits = self.scores(data, check=True)
        sample = self.sample(data, deterministic, logits)
        return ViewDecision(sample.argmax(-1), logits.softmax(-1), sample, OPERATIONS[: self.num_ops])

    def make_view(self, data, sample: torch.Tensor):
        """Apply a sample matrix to a batch; differentiable w.r.t. ``sample``. (Named so that it
        does not shadow ``nn.Module.apply``: ``gen.apply(init_fn)`` initialises weights.)"""
        keep = sample[:, KEEP]
        if self.add_mask:
            keep = keep + sample[:, MASK]
        x = data.x.float() * keep.view(-1, 1)
        if self.add_mask:
            m = sample[:, MASK].view(-1, 1)
            x = x * (1.0 - m) + self._token(data) * m
        keep_bool = keep.detach() > 0
        if self.dropped == DROP_REMOVE:
            return keep_nodes(data, keep_bool, x)
        return isolate_nodes(data, keep_bool, x)

    def _token(self, data) -> torch.Tensor:
        """The mask token: the batch's mean feature value (scalar) or mean feature vector."""
        base = data.x.detach().float()
        return base.mean() if self.mask_token == MASK_SCALAR else base.mean(0, keepdim=True)

    def forward(self, data, deterministic: bool = False):
        """``(view, sample)``: the augmented batch (a ``Data`` for a single ``Data``) and the
        one-hot operation matrix."""
        data, single = as_batch(data, "ViewGenerator")
        sample = self.sample(data, deterministic)
        return unbatch(self.make_view(data, sample), single), sample

    def as_transform(self, deterministic: bool = False) -> GeneratedView:
        """This generator as a PyG transform (:class:`GeneratedView`): ``view = t(data)``."""
        return GeneratedView(self, deterministic)


class FixedView(nn.Module):
    """A fixed (not learned) augmentation in the place of a view generator:
    ``(view, None)`` = ``FixedView(aug)(batch)``, so that one view of AutoGCL's naive
    strategy can be an augmentation of one's own (:class:`autogcl.augment.Compose`, a
    :class:`autogcl.RandomAugmentor`, any callable). It has no parameters and no operation
    sample (L_sim, which compares two generators' samples, is then left out)."""

    def __init__(self, augmentation=None):
        super().__init__()
        self.augmentation = augmentation

    def forward(self, data, deterministic: bool = False):
        if self.augmentation is None:
            raise ConfigError("this view's augmentation is not known (a loaded model records its repr only); "
                              "give it again with model.set_views(...)")
        return self.augmentation(data), None

    def extra_repr(self) -> str:
        return repr(self.augmentation)


class GeneratedView(BaseTransform):
    """A :class:`ViewGenerator` as a PyG ``BaseTransform``: ``view = GeneratedView(gen)(data)``
    gives the generator's view of a ``Data`` or ``Batch`` (in eval mode, without gradients;
    ``deterministic``: every node's most probable operation), e.g. as a dataset's ``transform``
    or inside :class:`autogcl.augment.Compose`."""

    def __init__(self, generator: ViewGenerator, deterministic: bool = False):
        self.generator, self.deterministic = generator, deterministic

    def forward(self, data):
        was = self.generator.training
        self.generator.eval()
        try:
            with torch.no_grad():
                return self.generator(data, self.deterministic)[0]
        finally:
            self.generator.train(was)

    def __repr__(self) -> str:
        return f"GeneratedView({type(self.generator).__name__}, deterministic={self.deterministic})"


class GeometryKeepingGenerator(ViewGenerator):
    """A :class:`ViewGenerator` for graphs whose features hold node positions (``geometry``
    columns): the mask operation hides the other features only, so a masked superpixel
    keeps its place (positions are never scaled by the straight-through keep value).

    ``dropped`` adds ``"weight"`` to ``"remove"`` and ``"isolate"``: every node stays in the
    view with ``node_weight`` = its keep (+ mask) value, 0 for dropped nodes, which
    :class:`RelPosNet` treats as removal. The forward pass is that of ``"remove"``, but a
    dropped node's choice still gets a gradient (what putting it back would change); with
    ``"remove"`` it gets none, and a drop, once sampled, is never pushed back."""

    def __init__(self, in_dim: int, *args, geometry: Sequence[int], dropped: str = DROP_WEIGHT, **kwargs):
        super().__init__(in_dim, *args, dropped=DROP_ISOLATE if dropped == DROP_WEIGHT else dropped, **kwargs)
        self.dropped, self.geometry = dropped, list(geometry)

    def make_view(self, data, sample: torch.Tensor):
        keep = sample[:, KEEP] + (sample[:, MASK] if self.add_mask else 0)
        keep_bool = keep.detach() > 0
        if self.dropped == DROP_WEIGHT:
            view = copy.copy(data)
            x = data.x.float()
            if self.add_mask:
                m = sample[:, MASK].view(-1, 1)
                x = x * (1.0 - m) + self._token(data) * m
            view.node_weight = keep
        else:
            view = super().make_view(data, sample)
            x = view.x
        geo = data.x[:, self.geometry].float()
        if self.dropped == DROP_REMOVE:
            geo = geo[keep_bool]
        elif self.dropped == DROP_ISOLATE:
            geo = geo * keep_bool.view(-1, 1)
        x = x.clone()
        x[:, self.geometry] = geo
        view.x = x
        return view


class MoleculeViewGenerator(ViewGenerator):
    """The view generator for molecules, whose atoms are categorical ids (hidden 128, as the
    released code).

    Ids cannot be multiplied by the keep indicator, so the view carries the sample as node
    weights instead: ``node_keep`` (keep column) and ``node_mask`` (mask column), which the
    molecule encoder applies to the atom embeddings (``keep * emb(atom) + mask *
    emb(mask atom)``) with the straight-through gradient. Dropped atoms and their bonds
    are removed (``dropped="remove"``) or kept as isolated atoms with a zero embedding
    (``"isolate"``).

    Args:
        scorer: maps a molecule batch to ``num_nodes x (3 if add_mask else 2)`` logits
            (e.g. :class:`autogcl.models.mol_gin.MolNodeScorer`).
        static_shapes: with ``dropped="remove"``, remove atoms in place: the view keeps the
            batch's tensors (its shapes) and marks the atoms removed with ``node_alive`` 0,
            which the molecule encoder reads as removal (no bond, BatchNorm statistics or
            pooling reads them). The same numbers as removal to float rounding, without its two
            waits for the device (the numbers of atoms and bonds kept) and with shapes fixed by
            the batch (what CUDA graphs need); the removed atoms' rows are computed too.
    """

    def __init__(self, scorer: nn.Module, add_mask: bool = True, dropped: str = DROP_REMOVE,
                 tau: float = 1.0, static_shapes: bool = False):
        super().__init__(0, add_mask=add_mask, dropped=dropped, tau=tau, scorer=scorer)
        if static_shapes and dropped != DROP_REMOVE:
            raise ConfigError(f"static_shapes removes atoms in place: it needs dropped={DROP_REMOVE!r}, "
                              f"got {dropped!r} (whose views already keep the batch's atoms)")
        self.static_shapes = static_shapes

    def make_view(self, data, sample: torch.Tensor):
        keep_w = sample[:, KEEP]
        mask_w = sample[:, MASK] if self.add_mask else torch.zeros_like(keep_w)
        retained = (keep_w + mask_w).detach() > 0
        if self.dropped == DROP_REMOVE and self.static_shapes:
            out = copy.copy(data)
            alive = retained.to(keep_w.dtype)
            prior = getattr(data, "node_alive", None)  # a view of a view: removed stays removed
            out.node_alive = alive if prior is None else alive * prior
            # its own edge_index object: the bond structure is cached per edge_index tensor
            out.edge_index = data.edge_index.view(data.edge_index.shape)
        elif self.dropped == DROP_REMOVE:
            out, idx = remove_nodes(data, retained)
            keep_w, mask_w = keep_w.index_select(0, idx), mask_w.index_select(0, idx)
        else:
            out = isolate_nodes(data, retained, data.x)
        out.node_keep, out.node_mask = keep_w, mask_w
        return out


def remove_nodes(data, keep: torch.Tensor) -> tuple[object, torch.Tensor]:
    """``(view, idx)``: :func:`autogcl.augment.ops.keep_nodes` of ``data`` (the same tensors, bit
    for bit: the kept nodes relabelled in order, the bonds between two kept nodes in their
    order), with a dozen operations and two waits for the device (the numbers of kept nodes
    and of kept bonds) instead of PyG's ``subgraph`` and its glue; ``idx``: the kept nodes."""
    out = copy.copy(data)
    idx = keep.nonzero().view(-1)
    new_id = keep.long().cumsum(0) - 1  # a kept node's index in the view
    src, dst = data.edge_index[0], data.edge_index[1]
    kept_edges = (keep.index_select(0, src) & keep.index_select(0, dst)).nonzero().view(-1)
    out.edge_index = new_id[data.edge_index.index_select(1, kept_edges)]
    if getattr(data, "edge_attr", None) is not None:
        out.edge_attr = data.edge_attr.index_select(0, kept_edges)
    out.x = data.x.index_select(0, idx)
    for name in NODE_ATTRS:
        value = getattr(data, name, None)
        if value is not None:
            setattr(out, name, value.index_select(0, idx))
    out.batch = data.batch.index_select(0, idx)
    # each graph's kept nodes summed on the device (on CUDA, bincount reads the smallest and largest
    # index back to the host first: two more waits)
    counts = torch.zeros(int(data.num_graphs), dtype=torch.long, device=keep.device).index_add_(0, data.batch, keep.long())
    out.ptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    return out, idx
