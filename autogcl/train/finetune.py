"""Supervised fine-tuning of a multi-task molecule predictor: masked BCE over the labeled
(task, molecule) entries (the transfer protocol of Hu et al. 2020 and the AutoGCL paper)."""

from __future__ import annotations

from ..losses import masked_bce
from .loop import Strategy


class FinetuneStrategy(Strategy):
    """One epoch of masked-BCE updates of ``model`` (``model(batch)``: graphs x tasks logits)."""

    terms = ("loss",)
    loss_name = "fine-tuning"

    def __init__(self, model, optimizer):
        self.model, self.opt = model, optimizer

    def step(self, batch, epoch: int, step: int) -> dict:
        self.opt.zero_grad()
        with self.autocast():
            logits = self.model(batch)
        loss = masked_bce(logits.float(), batch.y)
        loss.backward()
        self.opt.step()
        return {"loss": loss.detach()}
