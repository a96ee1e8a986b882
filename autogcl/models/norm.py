"""Batch normalisation over segments of the rows: the statistics of each segment apart, as if
each segment went through the layer in its own forward pass (running statistics updated once
per segment, in order). Lets an encoder read two views of a batch in one pass (half the
operations) with the numbers of two passes. A one-row segment (a batch holding one 1-node
graph) is normalised with the running statistics (:class:`autogcl.augment.ops.RowBatchNorm`).

In a data-parallel run the same layer is *synced* (:func:`sync`): each segment's statistics
are those of its rows on every process together (two all-reduces per layer, whatever the
number of segments, on any backend: gloo on CPUs, NCCL on GPUs), with gradients flowing back
through them. Syncing changes no parameter or buffer, so an optimizer built before keeps
training the layer.

:func:`settle_batchnorm` gives a model's BatchNorms the statistics of its current weights.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

from ..augment.ops import RowBatchNorm

__all__ = ["SegmentBatchNorm", "settle_batchnorm", "sync"]


class _AllReduceSum(torch.autograd.Function):
    """The sum over the processes, whose gradient is the sum of the processes' gradients
    (every process's statistics feed every process's output)."""

    @staticmethod
    def forward(ctx, t, group):
        ctx.group = group
        t = t.clone()
        dist.all_reduce(t, group=group)
        return t

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class SegmentBatchNorm(RowBatchNorm):
    """``nn.BatchNorm1d`` (the same parameters, buffers and state dict) whose forward takes
    ``segments``: the row counts of consecutive segments normalised apart (``None``: all rows
    together, plain BatchNorm)."""

    #: set by :func:`sync`: in training, statistics over every process of ``process_group``
    synced = False
    process_group = None

    def forward(self, x: torch.Tensor, segments: tuple[int, ...] | None = None) -> torch.Tensor:
        if self.synced and self.training and dist.is_available() and dist.is_initialized():
            return self._synced(x, segments)
        if segments is None or len(segments) == 1 or not self.training:
            return super().forward(x)
        return torch.cat([super(SegmentBatchNorm, self).forward(part) for part in x.split(list(segments))])

    def _synced(self, x: torch.Tensor, segments) -> torch.Tensor:
        """Mean and biased variance of each segment over the rows of every process (as
        ``torch.nn.SyncBatchNorm``; two passes, for the numbers of one process on all rows);
        running statistics updated per segment, in order, with the unbiased variance."""
        if x.dim() != 2:
            raise ValueError(f"a synced SegmentBatchNorm takes rows x features, got shape {tuple(x.shape)}")
        if x.dtype in (torch.float16, torch.bfloat16):  # statistics in float32, as BatchNorm under autocast
            x = x.float()
        sizes = list(segments) if segments else [x.shape[0]]
        parts = x.split(sizes) if len(sizes) > 1 else [x]
        k = len(parts)
        local = torch.cat([torch.stack([p.sum(0) for p in parts]).flatten(), x.new_tensor(sizes)])
        total = _AllReduceSum.apply(local, self.process_group)
        n = total[-k:].clamp_min(1.0)  # a segment empty everywhere: nothing to normalise
        mean = total[:-k].view(k, -1) / n[:, None]
        centred = [p - mean[i] for i, p in enumerate(parts)]
        var = _AllReduceSum.apply(torch.stack([(c * c).sum(0) for c in centred]), self.process_group) / n[:, None]
        scale = torch.rsqrt(var + self.eps)
        if self.affine:
            outs = [torch.addcmul(self.bias, c, scale[i] * self.weight) for i, c in enumerate(centred)]
        else:
            outs = [c * scale[i] for i, c in enumerate(centred)]
        if self.track_running_stats:
            with torch.no_grad():
                unbiased = var * (n / (n - 1).clamp_min(1.0))[:, None]
                for i in range(k):
                    self.num_batches_tracked.add_(1)
                    m = self.momentum if self.momentum is not None else 1.0 / float(self.num_batches_tracked)
                    self.running_mean.lerp_(mean[i].to(self.running_mean.dtype), m)
                    self.running_var.lerp_(unbiased[i].to(self.running_var.dtype), m)
        return torch.cat(outs) if k > 1 else outs[0]


def sync(module: nn.Module, process_group=None) -> nn.Module:
    """Every BatchNorm of ``module`` computing its training statistics over the processes of
    ``process_group`` (``None``: all), in place. A :class:`SegmentBatchNorm` is flagged; any
    other ``BatchNorm1d`` is replaced by a :class:`SegmentBatchNorm` holding the *same*
    parameter and buffer objects, so an optimizer built before still trains them."""
    for name, child in list(module.named_children()):
        if isinstance(child, SegmentBatchNorm):
            child.synced, child.process_group = True, process_group
        elif isinstance(child, nn.modules.batchnorm._BatchNorm):
            if not isinstance(child, nn.BatchNorm1d):
                raise ValueError(f"{name}: {type(child).__name__} cannot be synced (only BatchNorm1d layers)")
            new = SegmentBatchNorm(child.num_features, child.eps, child.momentum, child.affine,
                                   child.track_running_stats, device="meta")
            for key, value in child._parameters.items():
                new._parameters[key] = value
            for key, value in child._buffers.items():
                new._buffers[key] = value
            new.train(child.training)
            new.synced, new.process_group = True, process_group
            setattr(module, name, new)
        else:
            sync(child, process_group)
    return module

@torch.no_grad()
def settle_batchnorm(module: torch.nn.Module, loader, fn=None) -> int:
    """Set the running statistics of every BatchNorm in ``module`` to the mean and population
    variance (ddof 0) of what it reads over all of ``loader``'s batches, in a pass where the
    BatchNorms normalise with their batch statistics (as in training) and every other layer is
    in eval mode; no weight changes, no random number is drawn by the pass itself. Eval mode
    then normalises with the statistics of the current weights over those graphs, instead of
    running averages that also remember earlier weights and their initial values (mean 0,
    variance 1). ``fn(batch)`` (default ``module(batch)``) is the forward pass. Every module's
    mode is restored; returns the number of BatchNorms set.

    :func:`torch.optim.swa_utils.update_bn` does the same job with a cumulative moving average
    of the per-batch means and (unbiased, per-batch) variances; here the batches are pooled
    exactly (Chan et al.'s update of count, mean and squared deviations, in float64), so the
    result is the population variance over all of ``loader``'s rows whatever the batch sizes,
    and the modules' modes are restored afterwards. Cost: one forward pass over ``loader`` (no
    backward), paid each time it is called; :class:`autogcl.SemiSupervised` with
    ``bn_stats="settled"`` calls it before every evaluation and once after ``fit``."""
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
