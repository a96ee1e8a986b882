"""Losses: NT-Xent contrastive loss, the generators' similarity loss, classification losses
(AutoGCL paper, Section 3.2), as functions and as ``nn.Module`` objects (:class:`NTXent`,
:class:`SimilarityLoss`, :class:`ClassificationLoss`, :class:`MaskedBCE`) for own loops."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .choices import CL_SIMCLR, CL_VARIANTS, SIM_COSINE, SIM_MSE, check_choice
from .errors import ConfigError

SIM_KINDS = (SIM_COSINE, SIM_MSE)


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, tau: float = 0.5, exclude_positive: bool = False,
            symmetric: bool = True, gather=None) -> torch.Tensor:
    """Contrastive loss between two views; row i of ``z1`` and row i of ``z2`` are positives.

    For graph i of view 1: ``-log(exp(s_ii/tau) / sum_j exp(s_ij/tau))`` with ``s`` the cosine
    similarities to the graphs of view 2 (the other graphs of the other view are the
    negatives). ``symmetric`` averages this with the view-2 -> view-1 direction.
    ``exclude_positive`` leaves ``j = i`` out of the denominator, as the released
    GraphCL/AutoGCL code does (AutoGCL: symmetric; GraphCL: one direction).

    ``gather`` (data-parallel training, :mod:`autogcl.train.distributed`): maps this process's
    rows to ``(rows of every process, offset of ours)``; the negatives are then the graphs of
    every process, and the loss is the mean over this process's graphs (averaged over the
    processes, as their gradients are, it is the loss of the whole batch on one process).
    """
    if z1.dtype in (torch.bfloat16, torch.float16) or z2.dtype in (torch.bfloat16, torch.float16):  # loss in float32
        z1, z2 = z1.float(), z2.float()
    a1, a2 = F.normalize(z1, dim=1), F.normalize(z2, dim=1)
    if gather is None:
        sim = a1 @ a2.t() / tau
        return 0.5 * (_one_way(sim, 0, exclude_positive) + _one_way(sim.t(), 0, exclude_positive)) if symmetric \
            else _one_way(sim, 0, exclude_positive)
    all2, offset = gather(a2)
    forward = _one_way(a1 @ all2.t() / tau, offset, exclude_positive)
    if not symmetric:
        return forward
    all1, _ = gather(a1)
    return 0.5 * (forward + _one_way(a2 @ all1.t() / tau, offset, exclude_positive))


def _one_way(s: torch.Tensor, offset: int, exclude_positive: bool) -> torch.Tensor:
    """Mean over the rows of ``-log softmax`` at the positive, row i's positive being column
    ``offset + i`` (``exclude_positive``: left out of the denominator)."""
    pos = s.diagonal(offset)
    if exclude_positive and s.shape[1] == 1:  # one graph: no negative to contrast, nothing to learn
        return s.sum() * 0.0
    if exclude_positive:
        s = s.diagonal_scatter(torch.full_like(pos, float("-inf")), offset)
    return (torch.logsumexp(s, dim=1) - pos).mean()


def cl_kwargs(variant: str, method: str) -> dict:
    """NT-Xent options of a named variant: ``simclr`` (published), ``released`` (the code)."""
    if check_choice("NT-Xent variant", variant, CL_VARIANTS) == CL_SIMCLR:
        return {"exclude_positive": False, "symmetric": True}
    return {"exclude_positive": True, "symmetric": method == "autogcl"}  # released


def similarity_loss(s1: torch.Tensor, s2: torch.Tensor, kind: str = SIM_COSINE,
                    weight: torch.Tensor | None = None) -> torch.Tensor:
    """How alike the two generators' per-node choices are (minimised to make views differ).

    ``cosine`` (published): mean over nodes of cos-sim of the one-hot sample rows.
    ``mse`` (released): 1 - MSE(keep1, keep2), keep = keep (+ mask) column.
    ``weight`` (0/1 per node, e.g. a padded batch's ``node_alive``): the means over the nodes of
    weight 1 only.
    """
    if check_choice("similarity loss", kind, SIM_KINDS) == SIM_COSINE:
        per_node = F.cosine_similarity(s1, s2, dim=1)
        return per_node.mean() if weight is None else _weighted_mean(per_node, weight)
    keep1 = s1[:, 0] + (s1[:, 2] if s1.shape[1] > 2 else 0)  # mse
    keep2 = s2[:, 0] + (s2[:, 2] if s2.shape[1] > 2 else 0)
    if weight is None:
        return 1.0 - F.mse_loss(keep1, keep2)
    return 1.0 - _weighted_mean((keep1 - keep2) ** 2, weight)


def _weighted_mean(values: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The mean of ``values`` over the entries of ``weight`` 1, summed in float32 at least (as
    ``F.mse_loss`` under autocast)."""
    values = values.float() if values.dtype in (torch.float16, torch.bfloat16) else values
    w = weight.to(values.dtype)
    return (values * w).sum() / w.sum().clamp_min(1.0)


def classification_loss(log_probs: list[torch.Tensor], y: torch.Tensor, reduce: str = "sum") -> torch.Tensor:
    """L_cls: the cross-entropies of several views' class log-probabilities (a classifier's
    log-softmax output) against ``y``; their sum (published) or mean (released)."""
    terms = torch.stack([F.nll_loss(lp, y.view(-1)) for lp in log_probs])
    return terms.sum() if reduce == "sum" else terms.mean()


def masked_bce(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Multi-task binary cross-entropy over the labeled entries only (``y`` is NaN where a
    label is missing); the mean over those entries (0 when there are none)."""
    y = y.view_as(logits)
    labeled = ~torch.isnan(y)
    if not labeled.any():
        return logits.sum() * 0.0
    return F.binary_cross_entropy_with_logits(logits[labeled], y[labeled])


def masked_mse(pred: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Multi-task mean squared error over the labeled entries only (``y`` is NaN where a
    label is missing); 0 when there are none."""
    y = y.view_as(pred)
    labeled = ~torch.isnan(y)
    if not labeled.any():
        return pred.sum() * 0.0
    return F.mse_loss(pred[labeled], y[labeled])


class NTXent(nn.Module):
    """``loss = NTXent(tau=0.5)(z1, z2)``: :func:`nt_xent` with a named variant
    (``simclr``, published; ``released``: positive left out of the denominator, and one
    direction when ``method="graphcl"``)."""

    def __init__(self, tau: float = 0.5, variant: str = CL_SIMCLR, method: str = "autogcl"):
        super().__init__()
        if not tau > 0:
            raise ConfigError(f"the NT-Xent temperature must be positive, got {tau}")
        self.tau, self.kwargs = tau, cl_kwargs(variant, method)

    def forward(self, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
        return nt_xent(z1, z2, self.tau, **self.kwargs)


class SimilarityLoss(nn.Module):
    """``SimilarityLoss("cosine")(sample1, sample2)``: :func:`similarity_loss` of two
    generators' one-hot samples (minimised to make the views differ)."""

    def __init__(self, kind: str = SIM_COSINE):
        super().__init__()
        self.kind = check_choice("similarity loss", kind, SIM_KINDS)

    def forward(self, s1: torch.Tensor, s2: torch.Tensor) -> torch.Tensor:
        return similarity_loss(s1, s2, self.kind)


class ClassificationLoss(nn.Module):
    """``ClassificationLoss()([logp_x, logp_x1, logp_x2], y)``: :func:`classification_loss`,
    the sum (published) or mean (released) of the views' cross-entropies."""

    def __init__(self, reduce: str = "sum"):
        super().__init__()
        if reduce not in ("sum", "mean"):
            raise ConfigError(f"reduce must be 'sum' or 'mean', got {reduce!r}")
        self.reduce = reduce

    def forward(self, log_probs: list[torch.Tensor], y: torch.Tensor) -> torch.Tensor:
        return classification_loss(log_probs, y, self.reduce)


class MaskedBCE(nn.Module):
    """``MaskedBCE()(logits, y)``: :func:`masked_bce`, multi-task BCE over the labeled entries."""

    def forward(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return masked_bce(logits, y)
