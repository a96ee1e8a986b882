"""Choosing the epoch on validation: :class:`BestEpoch` keeps the weights of the epoch with the
best validation score and stops training after ``patience`` epochs without improvement (what
``fit(validation=..., patience=...)`` does), its state checkpointed with the fit's own, so a
resumed fit keeps the same best epoch."""

from __future__ import annotations

import math

import torch

from ..errors import ConfigError

__all__ = ["BestEpoch", "check_patience"]


def check_patience(patience) -> int | None:
    """``patience`` checked: ``None`` (no early stopping) or a positive int."""
    if patience is not None and (isinstance(patience, bool) or not isinstance(patience, int) or patience < 1):
        raise ConfigError(f"patience must be a positive int (epochs without a better validation score) or None, "
                          f"got {patience!r}")
    return patience


class BestEpoch:
    """The best epoch by a score (higher is better; the first best on ties) and its weights.

    ``module``: the model whose ``state_dict`` is kept (every weight and buffer, e.g. BatchNorm
    statistics); ``key``: the score's name in the fit's rows (e.g. ``"val_acc"``);
    ``patience``: stop after this many epochs without a better score (``None``: never).
    :attr:`state` is the fit's checkpointed ``extra`` (give it to
    :meth:`autogcl.train.Trainer.fit`), so a resumed fit continues with the same best epoch."""

    def __init__(self, module: torch.nn.Module, key: str, patience: int | None = None):
        self.module, self.key, self.patience = module, key, check_patience(patience)
        self.state: dict = {"best_epoch": None, "best_score": None, "best_weights": None}

    def observe(self, epoch: int, score: float) -> None:
        """Record epoch ``epoch``'s score; a better one than every earlier epoch's keeps a CPU
        copy of the module's current weights."""
        score = float(score)
        if not math.isfinite(score):
            return
        best = self.state["best_score"]
        if best is None or score > best:
            self.state.update(best_epoch=int(epoch), best_score=score, best_weights={
                k: v.detach().to("cpu", copy=True) for k, v in self.module.state_dict().items()})

    def stop(self, row: dict) -> bool:
        """Whether the fit stops after ``row``'s epoch: ``patience`` epochs have passed since
        the best one (read from the state alone, so asking twice gives the same answer)."""
        best = self.state["best_epoch"]
        return self.patience is not None and best is not None and row["epoch"] - best >= self.patience

    def restore(self) -> int | None:
        """Load the best epoch's weights back into the module; that epoch (``None`` when no
        epoch had a finite score: the weights stay as they are)."""
        if self.state["best_weights"] is None:
            return None
        self.module.load_state_dict(self.state["best_weights"])
        return self.state["best_epoch"]
