"""Run units and run directories: atomic writes, checkpoints, resume.

A *unit* is one independent piece of a sweep (for the unsupervised protocol: one
dataset x method x seed). A unit works in ``<dir>.partial/`` (checkpoints, metrics so far)
and, when finished, that folder is renamed atomically to ``<dir>``, which then holds
``config.json``, ``metrics.csv`` and ``result.json``. A finished unit is never redone on
``--resume``; a partial one continues from its last checkpoint.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import torch

from .errors import ConfigError


def atomic_write_text(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (Path,)):
        return str(o)
    if isinstance(o, (tuple, set)):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def read_json(path: Path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def atomic_write_csv(path: Path, rows: list[dict]) -> None:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys)
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(path, buf.getvalue())


def atomic_save(obj, path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


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
    extra: dict = field(default_factory=dict)

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
