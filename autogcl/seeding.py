"""Seeds and RNG states: seed every generator a run draws from, and save or restore them all
(the RNG part of a checkpoint, :mod:`autogcl.train.checkpoints`)."""

from __future__ import annotations

import logging
import random

import numpy as np
import torch

__all__ = ["rng_state", "seed_everything", "set_rng_state"]

log = logging.getLogger(__name__)


def seed_everything(seed: int) -> torch.Generator:
    """Seed python, numpy and torch (CPU and every CUDA device); return a CPU torch generator
    for data shuffling."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    gen = torch.Generator()
    gen.manual_seed(seed)
    return gen


def rng_state(loader_gen: torch.Generator) -> dict:
    """Every RNG state a run draws from, as tensors and plain containers (so that a checkpoint
    loads with ``torch.load(weights_only=True)``): torch CPU, every CUDA device, numpy,
    python and the loader's generator."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"torch": torch.get_rng_state(),
            # only where CUDA is in use: a CPU run never creates a context on the GPUs it sees
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else [],
            "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(gauss)],
            "python": random.getstate(), "loader": loader_gen.get_state()}


def set_rng_state(state: dict, loader_gen: torch.Generator) -> None:
    """Restore :func:`rng_state`; CUDA states are restored where the same GPUs are there
    (a checkpoint made on a GPU machine loads on a CPU-only one)."""
    torch.set_rng_state(state["torch"])
    cuda = state.get("cuda") or []
    if cuda and torch.cuda.is_available():
        if len(cuda) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(cuda)
        else:
            log.warning("checkpoint holds %d CUDA RNG states but %d devices are visible; CUDA RNG "
                        "not restored", len(cuda), torch.cuda.device_count())
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.int64).astype(np.uint32), pos, has_gauss, gauss))
    random.setstate(state["python"])
    loader_gen.set_state(state["loader"])
