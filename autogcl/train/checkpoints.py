"""Training checkpoints: weights, optimizer states and every RNG state, written atomically and
read back with ``weights_only=True`` (what exact resume of :class:`autogcl.train.loop.Trainer`
and the chunked pre-training rests on)."""

from __future__ import annotations

from pathlib import Path

import torch

from ..atomic import atomic_save
from ..errors import ConfigError, DamagedFileError
from ..seeding import rng_state, set_rng_state

__all__ = ["checkpoint_state", "load_checkpoint", "restore_state", "save_checkpoint"]


def _as_dict(optimizers) -> dict:
    return optimizers if isinstance(optimizers, dict) else {"optimizer": optimizers}


def checkpoint_state(modules: dict, optimizers, loader_gen: torch.Generator, **extra) -> dict:
    """What :func:`save_checkpoint` writes: weights, optimizer states, every RNG state and
    ``extra``; ``copy.deepcopy`` of it is a snapshot that later training leaves as it is."""
    return {"modules": {k: m.state_dict() for k, m in modules.items()},
            "optimizers": {k: o.state_dict() for k, o in _as_dict(optimizers).items()},
            "rng": rng_state(loader_gen), **extra}


def save_checkpoint(path: Path, modules: dict, optimizers, loader_gen: torch.Generator, **extra) -> None:
    """Weights, optimizer states, every RNG state and ``extra`` (progress so far: plain
    containers of numbers and strings), atomically. ``optimizers``: one or a name -> optimizer
    dict."""
    atomic_save(checkpoint_state(modules, optimizers, loader_gen, **extra), path)


def restore_state(state: dict, modules: dict, optimizers, loader_gen: torch.Generator,
                  source: str = "the checkpoint") -> dict:
    """Load a :func:`checkpoint_state` into the modules, optimizers and RNGs; its extra entries.
    A state written by another kind of training (other parts) or for another model (other
    shapes) is a :class:`ConfigError` naming ``source`` and the part that differs."""
    optimizers = _as_dict(optimizers)
    saved = (state.get("modules") or {}, state.get("optimizers") or {})
    for kind, have, mine in (("modules", saved[0], modules), ("optimizers", saved[1], optimizers)):
        if set(have) != set(mine):
            raise ConfigError(f"{source} was written by another kind of training: its {kind} are {sorted(have)}, "
                              f"this fit's {sorted(mine)}; resume it with the estimator and settings that wrote it, "
                              "or give this fit another checkpoint file")
    for kind, name, part, state_of in [("module", k, m, saved[0][k]) for k, m in modules.items()] + \
            [("optimizer", k, o, saved[1][k]) for k, o in optimizers.items()]:  # a module and an optimizer may share a name
        try:
            part.load_state_dict(state_of)
        except (RuntimeError, ValueError, KeyError) as exc:  # torch's size mismatch, an optimizer of other groups
            first = str(exc).strip().splitlines()
            detail = next((line.strip() for line in first if "mismatch" in line), first[0] if first else type(exc).__name__)
            raise ConfigError(f"{source} does not fit this fit's {kind} {name!r} ({detail}): it was written for another "
                              "model or settings; resume it with the settings that wrote it, or give this fit "
                              "another checkpoint file") from None
    set_rng_state(state["rng"], loader_gen)
    return {k: v for k, v in state.items() if k not in ("modules", "optimizers", "rng")}


def load_checkpoint(path: Path, modules: dict, optimizers, loader_gen: torch.Generator) -> dict | None:
    """Restore what :func:`save_checkpoint` wrote (``None`` when there is no checkpoint);
    returns the extra entries. Loaded with ``weights_only=True`` onto the CPU (tensors then
    follow the modules' and optimizers' devices), so a checkpoint runs no code when read and
    one made on a GPU loads on a machine without one."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a damaged or unsafe file
        raise DamagedFileError(f"{path}: not a readable autogcl checkpoint ({type(exc).__name__}: "
                               f"{str(exc).splitlines()[0] if str(exc) else ''})") from exc
    return restore_state(state, modules, optimizers, loader_gen, str(path))
