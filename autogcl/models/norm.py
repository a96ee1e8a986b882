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

    def forward(self, x: torch.Tensor, segments: tuple[int, ...] | None = None,
                alive: torch.Tensor | None = None) -> torch.Tensor:
        """``alive`` (one 0/1 weight per row, or ``None``): in training, the statistics read only
        the rows of weight 1, as if the others were not there (the rows of the atoms a view
        removed in place, :class:`autogcl.augment.learnable.MoleculeViewGenerator` with
        ``static_shapes``); every row is normalised with them."""
        synced = self.synced and self.training and dist.is_available() and dist.is_initialized()
        if synced or (alive is not None and self.training):
            return self._weighted(x, segments, alive, synced)
        if segments is None or len(segments) == 1 or not self.training:
            return super().forward(x)
        return torch.cat([super(SegmentBatchNorm, self).forward(part) for part in x.split(list(segments))])

    def _weighted(self, x: torch.Tensor, segments, alive: torch.Tensor | None, synced: bool) -> torch.Tensor:
        """Mean and biased variance of each segment over its rows of weight 1 (``alive``; all rows
        without), on every process together when ``synced`` (as ``torch.nn.SyncBatchNorm``; two
        passes, for the numbers of one process on all rows); running statistics updated per
        segment, in order, with the unbiased variance. A segment of one such row (over every
        process) is normalised with the running statistics and leaves them unchanged
        (:class:`autogcl.augment.ops.RowBatchNorm`); synced without ``alive``, such a segment keeps
        the rule it had before rows were weighed (its variance 0, the count incremented), so a
        data-parallel run with atoms removed in place differs from removal there, in a view of
        one atom over all processes. The counts stay on the device: nothing here waits for it,
        unless ``momentum`` is ``None`` (a cumulative average)."""
        if x.dim() != 2:
            raise ValueError(f"SegmentBatchNorm takes rows x features here, got shape {tuple(x.shape)}")
        if x.dtype in (torch.float16, torch.bfloat16):  # statistics in float32, as BatchNorm under autocast
            x = x.float()
        sizes = list(segments) if segments else [x.shape[0]]
        parts = x.split(sizes) if len(sizes) > 1 else [x]
        weights = [None] * len(parts) if alive is None else \
            list(alive.to(x.dtype).view(-1, 1).split(sizes) if len(sizes) > 1 else [alive.to(x.dtype).view(-1, 1)])
        k = len(parts)
        sums = torch.stack([p.sum(0) if w is None else (p * w).sum(0) for p, w in zip(parts, weights)]).flatten()
        counts = x.new_tensor(sizes) if alive is None else torch.stack([w.sum() for w in weights])
        local = torch.cat([sums, counts])
        total = _AllReduceSum.apply(local, self.process_group) if synced else local
        n = total[-k:].clamp_min(1.0)  # a segment empty everywhere: nothing to normalise
        mean = total[:-k].view(k, -1) / n[:, None]
        centred = [p - mean[i] for i, p in enumerate(parts)]
        squares = torch.stack([(c * c).sum(0) if w is None else (c * c * w).sum(0) for c, w in zip(centred, weights)])
        var = (_AllReduceSum.apply(squares, self.process_group) if synced else squares) / n[:, None]
        scale = torch.rsqrt(var + self.eps)
        # rows weighed: a segment of one row is normalised with the running statistics as the
        # segments before it left them, and leaves them unchanged (RowBatchNorm)
        single = total[-k:] <= 1.0 if alive is not None and self.track_running_stats else None
        before = []  # the running statistics each segment sees
        if self.track_running_stats:
            with torch.no_grad():
                unbiased = var * (n / (n - 1).clamp_min(1.0))[:, None]
                for i in range(k):
                    if single is None:
                        self.num_batches_tracked.add_(1)
                        m = self.momentum if self.momentum is not None else 1.0 / float(self.num_batches_tracked)
                    else:
                        before.append((self.running_mean.clone(), self.running_var.clone()))
                        self.num_batches_tracked.add_((~single[i]).to(self.num_batches_tracked.dtype))
                        m = self.momentum if self.momentum is not None else \
                            1.0 / max(float(self.num_batches_tracked), 1.0)  # none counted yet: unused
                        m = torch.where(single[i], 0.0, m).to(self.running_mean.dtype)
                    self.running_mean.lerp_(mean[i].to(self.running_mean.dtype), m)
                    self.running_var.lerp_(unbiased[i].to(self.running_var.dtype), m)
        if single is not None:
            scale, centred = self._running(parts, single, scale, centred, before)
        if self.affine:
            outs = [torch.addcmul(self.bias, c, scale[i] * self.weight) for i, c in enumerate(centred)]
        else:
            outs = [c * scale[i] for i, c in enumerate(centred)]
        return torch.cat(outs) if k > 1 else outs[0]

    def _running(self, parts, single, scale, centred, before):
        """Where a segment has a single counted row, the scale and centred rows of the running
        statistics it sees (``before``) instead of the batch's (chosen on the device, without
        waiting for it)."""
        r_scale = torch.stack([torch.rsqrt(v + self.eps) for _, v in before]).to(scale.dtype)
        scale = torch.where(single[:, None], r_scale, scale)
        centred = [torch.where(single[i], p - before[i][0].to(p.dtype), c)
                   for i, (p, c) in enumerate(zip(parts, centred))]
        return scale, centred


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
