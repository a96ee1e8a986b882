"""Supervised fine-tuning of a multi-task molecule predictor: masked BCE over the labeled
(task, molecule) entries (the transfer protocol of Hu et al. 2020 and the AutoGCL paper), or,
for numeric targets, masked MSE on standardised targets."""

from __future__ import annotations

import math

import torch

from ..losses import masked_bce, masked_mse
from .loop import Strategy


def cosine_lr(base_lr: float, epochs: int):
    """The ``lr_at`` of ``lr_schedule="cosine"``: epoch ``e`` (1 to ``epochs``) trains at
    ``base_lr * (1 + cos(pi * (e - 1) / epochs)) / 2``, from ``base_lr`` in the first epoch
    towards 0 after the last.

    These are the rates of ``torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)``
    (``eta_min=0``) stepped once after every epoch (``tests/train/test_finetune.py`` compares
    them). It is written out as a function of the epoch alone, not taken from torch, so that a
    resumed fit sets the same rate for its epoch with no scheduler state in its checkpoint."""
    return lambda epoch: base_lr * 0.5 * (1.0 + math.cos(math.pi * (epoch - 1) / epochs))


class FinetuneStrategy(Strategy):
    """One epoch of updates of ``model`` (``model(batch)``: graphs x tasks outputs): masked BCE
    of logits (``task="classification"``), or masked MSE of the outputs against the targets
    standardised with ``scaling`` (``{"mean": [...], "std": [...]}`` per task,
    ``task="regression"``)."""

    terms = ("loss",)
    loss_name = "fine-tuning"

    def __init__(self, model, optimizer, task: str = "classification", scaling: dict | None = None, lr_at=None):
        self.model, self.opt, self.task = model, optimizer, task
        self.scaling = scaling
        self.lr_at = lr_at  # epoch -> learning rate, set before each epoch (None: the optimizer's own)
        self._scale = None  # (mean, std) tensors on the batches' device

    def train_epoch(self, data, epoch: int) -> dict:
        if self.lr_at is not None:  # a function of the epoch alone: a resumed fit continues it exactly
            for group in self.opt.param_groups:
                group["lr"] = self.lr_at(epoch)
        return super().train_epoch(data, epoch)

    def _standardised(self, y: torch.Tensor) -> torch.Tensor:
        if self._scale is None or self._scale[0].device != y.device:
            self._scale = tuple(torch.as_tensor(self.scaling[k], dtype=torch.float32, device=y.device)
                                for k in ("mean", "std"))
        mean, std = self._scale
        return (y.view(y.shape[0], -1) - mean) / std

    def step(self, batch, epoch: int, step: int) -> dict:
        self.opt.zero_grad()
        with self.autocast():
            out = self.model(batch)
        if self.task == "regression":
            loss = masked_mse(out.float(), self._standardised(batch.y))
        else:
            loss = masked_bce(out.float(), batch.y)
        loss.backward()
        self.opt.step()
        return {"loss": loss.detach()}
