"""Batch normalisation over segments of the rows: the statistics of each segment apart, as if
each segment went through the layer in its own forward pass (running statistics updated once
per segment, in order). Lets an encoder read two views of a batch in one pass (half the
operations) with the numbers of two passes. A one-row segment (a batch holding one 1-node
graph) is normalised with the running statistics (:class:`autogcl.augment.ops.RowBatchNorm`).
:func:`settle_batchnorm` gives a model's BatchNorms the statistics of its current weights."""

from __future__ import annotations

import torch

from ..augment.ops import RowBatchNorm

__all__ = ["SegmentBatchNorm", "settle_batchnorm"]


class SegmentBatchNorm(RowBatchNorm):
    """``nn.BatchNorm1d`` (the same parameters, buffers and state dict) whose forward takes
    ``segments``: the row counts of consecutive segments normalised apart (``None``: all rows
    together, plain BatchNorm)."""

    def forward(self, x: torch.Tensor, segments: tuple[int, ...] | None = None) -> torch.Tensor:
        if segments is None or len(segments) == 1 or not self.training:
            return super().forward(x)
        return torch.cat([super(SegmentBatchNorm, self).forward(part) for part in x.split(list(segments))])


@torch.no_grad()
def settle_batchnorm(module: torch.nn.Module, loader, fn=None) -> int:
    """Set the running statistics of every BatchNorm in ``module`` to the mean and population
    variance (ddof 0) of what it reads over all of ``loader``'s batches, in a pass where the
    BatchNorms normalise with their batch statistics (as in training) and every other layer is
    in eval mode; no weight changes, no random number is drawn by the pass itself. Eval mode
    then normalises with the statistics of the current weights over those graphs, instead of
    running averages that also remember earlier weights and their initial values (mean 0,
    variance 1). ``fn(batch)`` (default ``module(batch)``) is the forward pass. Every module's
    mode is restored; returns the number of BatchNorms set."""
    bns = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
           and m.track_running_stats]
    if not bns:
        return 0
    acc: dict = {}

    def record(m, inputs, _out):  # Chan et al.'s pairwise update of count, mean and squared deviations
        x = inputs[0].detach().double().reshape(-1, m.num_features)
        n_b = x.shape[0]
        if n_b == 0:
            return
        mean_b = x.mean(0)
        m2_b = ((x - mean_b) ** 2).sum(0)
        if m not in acc:
            acc[m] = [n_b, mean_b, m2_b]
            return
        n_a, mean_a, m2_a = acc[m]
        n = n_a + n_b
        delta = mean_b - mean_a
        acc[m] = [n, mean_a + delta * (n_b / n), m2_a + m2_b + delta ** 2 * (n_a * n_b / n)]

    modes = {m: m.training for m in module.modules()}
    tracked = {m: m.num_batches_tracked.clone() for m in bns if m.num_batches_tracked is not None}
    hooks = [m.register_forward_hook(record) for m in bns]
    fn = fn or module
    try:
        module.eval()
        for m in bns:
            m.train()
        device = next(module.parameters(), torch.empty(0)).device
        for batch in loader:
            fn(batch.to(device))
    finally:
        for h in hooks:
            h.remove()
        for m, was in modes.items():
            m.training = was
    for m in bns:
        if m in acc:
            n, mean, m2 = acc[m]
            m.running_mean.copy_(mean.to(m.running_mean.dtype))
            m.running_var.copy_((m2 / n).to(m.running_var.dtype))
        if m in tracked:
            m.num_batches_tracked.copy_(tracked[m])
    return len(acc)
