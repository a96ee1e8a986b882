"""Batch normalisation over segments of the rows: the statistics of each segment apart, as if
each segment went through the layer in its own forward pass (running statistics updated once
per segment, in order). Lets an encoder read two views of a batch in one pass (half the
operations) with the numbers of two passes. A one-row segment (a batch holding one 1-node
graph) is normalised with the running statistics (:class:`autogcl.augment.ops.RowBatchNorm`)."""

from __future__ import annotations

import torch

from ..augment.ops import RowBatchNorm

__all__ = ["SegmentBatchNorm"]


class SegmentBatchNorm(RowBatchNorm):
    """``nn.BatchNorm1d`` (the same parameters, buffers and state dict) whose forward takes
    ``segments``: the row counts of consecutive segments normalised apart (``None``: all rows
    together, plain BatchNorm)."""

    def forward(self, x: torch.Tensor, segments: tuple[int, ...] | None = None) -> torch.Tensor:
        if segments is None or len(segments) == 1 or not self.training:
            return super().forward(x)
        return torch.cat([super(SegmentBatchNorm, self).forward(part) for part in x.split(list(segments))])
