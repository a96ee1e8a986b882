"""Run units and run directories: atomic writes, checkpoints, resume.

A *unit* is one independent piece of a sweep (for the unsupervised protocol: one
dataset x method x seed). A unit works in ``<dir>.partial/`` (checkpoints, metrics so far)
and, when finished, that folder is renamed atomically to ``<dir>``, which then holds
``config.json``, ``metrics.csv`` and ``result.json``. A finished unit is never redone on
``--resume``; a partial one continues from its last checkpoint.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .atomic import (
    atomic_save,
    atomic_write_csv,
    atomic_write_json,
    atomic_write_text,
    read_json,
)
from .errors import ConfigError

__all__ = ["Unit", "atomic_save", "atomic_write_csv", "atomic_write_json", "atomic_write_text",
           "check_resumable", "config_diff", "read_json", "rng_state", "run_serial",
           "seed_everything", "set_rng_state"]


def seed_everything(seed: int) -> torch.Generator:
    """Seed python, numpy and torch; return a torch generator for data shuffling."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    gen = torch.Generator()
    gen.manual_seed(seed)
    return gen


def rng_state(loader_gen: torch.Generator) -> dict:
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
            "python": random.getstate(), "loader": loader_gen.get_state()}


def set_rng_state(state: dict, loader_gen: torch.Generator) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    loader_gen.set_state(state["loader"])


@dataclass
class Unit:
    """One independent piece of a sweep."""

    dir: Path
    config: dict
    seed: int
    label: str = ""

    @property
    def partial(self) -> Path:
        return self.dir.parent / f".{self.dir.name}.partial"

    @property
    def finished(self) -> bool:
        return (self.dir / "result.json").is_file()

    def result(self) -> dict:
        return read_json(self.dir / "result.json")

    def finish(self) -> None:
        """Atomically publish the partial folder as the finished unit."""
        if self.dir.exists():
            shutil.rmtree(self.dir)
        os.replace(self.partial, self.dir)


def config_diff(a: dict, b: dict) -> list[str]:
    """The keys whose values differ, compared as JSON (a tuple equals the list it is saved as)."""
    import json

    a, b = (json.loads(json.dumps(d, default=str)) for d in (a, b))
    keys = sorted(set(a) | set(b))
    return [f"{k}: {a.get(k)!r} != {b.get(k)!r}" for k in keys if a.get(k) != b.get(k)]


def check_resumable(units: Iterable[Unit], resume: bool) -> None:
    """Refuse to mix results of different configs or to overwrite finished work silently."""
    for u in units:
        if not u.finished:
            continue
        if not resume:
            raise ConfigError(
                f"{u.dir} already holds a finished run; pass --resume to keep it and run only "
                "what is missing, or choose another --out"
            )
        old = read_json(u.dir / "config.json")
        diff = config_diff(old, u.config)
        if diff:
            raise ConfigError(
                f"{u.dir} was run with a different configuration ({'; '.join(diff)}); "
                "use another --out"
            )


def run_serial(units: list[Unit], fn: Callable[[Unit], dict], progress=None) -> list[dict]:
    """The default executor: run the unfinished units one after the other.

    Units are independent, so a parallel or distributed executor can replace this one."""
    results = []
    for u in units:
        if not u.finished:
            fn(u)
        results.append(u.result())
        if progress is not None:
            progress.update(1)
    return results


def start_work(unit: Unit) -> Path:
    """Create the unit's partial folder and record its configuration; refuse to continue an
    interrupted run of another configuration there."""
    work = unit.partial
    work.mkdir(parents=True, exist_ok=True)
    started = work / "config.json"
    if started.is_file():
        diff = config_diff(read_json(started), unit.config)
        if diff:
            raise ConfigError(f"{work} holds an interrupted run with another configuration "
                              f"({'; '.join(diff)}); delete it or use another --out")
    atomic_write_json(started, unit.config)
    return work


def save_checkpoint(path: Path, modules: dict, optimizer, loader_gen: torch.Generator, **extra) -> None:
    """Weights, optimizer state, every RNG state and ``extra`` (progress so far), atomically."""
    atomic_save({"modules": {k: m.state_dict() for k, m in modules.items()},
                 "optimizer": optimizer.state_dict(), "rng": rng_state(loader_gen), **extra}, path)


def load_checkpoint(path: Path, modules: dict, optimizer, loader_gen: torch.Generator) -> dict | None:
    """Restore what :func:`save_checkpoint` wrote (``None`` when there is no checkpoint);
    returns the extra entries."""
    if not Path(path).is_file():
        return None
    state = torch.load(path, weights_only=False)
    for name, mod in modules.items():
        mod.load_state_dict(state["modules"][name])
    optimizer.load_state_dict(state["optimizer"])
    set_rng_state(state["rng"], loader_gen)
    return {k: v for k, v in state.items() if k not in ("modules", "optimizer", "rng")}


def publish(unit: Unit, rows: list[dict], result: dict) -> dict:
    """Write ``metrics.csv`` and ``result.json``, drop the checkpoint, publish the unit."""
    atomic_write_csv(unit.partial / "metrics.csv", rows)
    atomic_write_json(unit.partial / "result.json", result)
    (unit.partial / "checkpoint.pt").unlink(missing_ok=True)
    unit.finish()
    return result


def run_units(units: list[Unit], fn: Callable[[Unit], dict], resume: bool, desc: str, what: str = "seed",
              show_progress: bool | None = None) -> list[dict]:
    """Run a sweep's units with a progress bar: refuse to mix configurations or overwrite
    finished work (:func:`check_resumable`), drop stale partial work unless resuming, run the
    unfinished units (:func:`run_serial`) and return every unit's result."""
    from tqdm.auto import tqdm

    check_resumable(units, resume)
    todo = [u for u in units if not u.finished]
    if not resume:
        for u in todo:  # a stale partial from an earlier run is not ours to continue
            if u.partial.exists():
                shutil.rmtree(u.partial)
    bar = tqdm(total=len(units), initial=len(units) - len(todo), desc=desc, unit=what,
               disable=None if show_progress is None else not show_progress)
    run_serial(todo, fn, progress=bar)
    bar.close()
    return [u.result() for u in units]
