"""The optimizer every training loop uses: Adam with its fused implementation (one kernel for
all parameters instead of a dozen small operations per parameter tensor) where this torch
build has one for the parameters' device, else its ``foreach`` (multi-tensor) form."""

from __future__ import annotations

import torch

__all__ = ["adam"]


def adam(params, lr: float = 0.001, weight_decay: float = 0.0) -> torch.optim.Adam:
    """``torch.optim.Adam(params, lr, weight_decay)``, fused (CPU and CUDA float parameters), so
    that an optimizer step is a few operations whatever the number of parameter tensors. The
    same update rule as the per-parameter form (results agree to float rounding)."""
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, fused=True)
    except (RuntimeError, ValueError):  # a device or dtype without the fused kernel
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, foreach=True)
