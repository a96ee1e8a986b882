"""Units of a sweep and the one runner: run folders, resume, and sweeps.

A *unit* is one independent piece of a sweep (for the unsupervised protocol: one
dataset x method x seed). A unit works in ``<dir>.partial/`` (checkpoints, metrics so far)
and, when finished, that folder is renamed atomically to ``<dir>``, which then holds
``config.json``, ``metrics.csv`` and ``result.json``. A finished unit is never redone on
``--resume``; a partial one continues from its last checkpoint. While a unit runs, its process
holds the lock file ``.<dir>.lock`` beside it (:func:`autogcl.locks.holding`), so that the same
command started twice on one run folder refuses the unit instead of racing over its checkpoint;
the file is removed when the unit ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .atomic import atomic_write_csv, atomic_write_json, read_json
from .errors import ConfigError, DamagedFileError, DataError
from .locks import exclusive, holding
from .paths import check_writable
from .provenance import commit_label

__all__ = [
    "Sweep",
    "Unit",
    "check_resumable",
    "check_run_folder",
    "config_diff",
    "hold_unit",
    "publish",
    "run_jobs",
    "run_one",
    "run_serial",
    "run_sweeps",
    "run_units",
    "start_work",
    "with_commit",
]

log = logging.getLogger(__name__)

#: keys of a stored ``config.json`` that describe where a unit ran, not what it computes
RUNTIME_KEY = "runtime"


@dataclass
class Unit:
    """One independent piece of a sweep."""

    dir: Path
    config: dict
    seed: int
    label: str = ""
    #: how a ``config.json`` of this unit written by an earlier version reads today (the same values
    #: in today's spelling, e.g. a shipped encoder's path recorded as its name), applied to the stored
    #: config before it is compared with ``config``; ``None``: compared as stored
    upgrade: Callable[[dict], dict] | None = None

    def stored_diff(self, stored: dict) -> list[str]:
        """:func:`config_diff` of a stored ``config.json`` (read as today's, :attr:`upgrade`) and this unit's config."""
        return config_diff(self.upgrade(stored) if self.upgrade else stored, self.config)

    @property
    def partial(self) -> Path:
        return self.dir.parent / f".{self.dir.name}.partial"

    @property
    def lock(self) -> Path:
        return self.dir.parent / f".{self.dir.name}.lock"

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
    keys = sorted((set(a) | set(b)) - {RUNTIME_KEY})
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
        diff = u.stored_diff(read_json(u.dir / "config.json"))
        if diff:
            raise ConfigError(
                f"{u.dir} was run with a different configuration ({'; '.join(diff)}); "
                "use another --out"
            )


def hold_unit(unit: Unit, wait: float = 30.0):
    """Hold ``unit``'s lock file while a ``with`` block runs (:func:`autogcl.locks.holding`)."""
    return holding(unit.lock, unit.label or str(unit.dir), wait)


def run_one(unit: Unit, fn: Callable[[Unit], dict], restart_damaged: bool = False, wait: float = 30.0) -> None:
    """Run one unfinished unit (wherever an executor runs it), holding its lock
    (:func:`hold_unit`, ``wait`` seconds at most for another holder). A unit whose interrupted
    work cannot be read back (a truncated checkpoint, a damaged ``config.json``) is restarted
    from the beginning with ``restart_damaged``, else refused with the unit named."""
    if unit.finished:
        return
    with hold_unit(unit, wait):
        if unit.finished:  # finished by the holder we waited for: kept only if it is this configuration
            check_resumable([unit], resume=True)
            return
        _run_restarting_damaged(unit, fn, restart_damaged)


def _run_restarting_damaged(unit: Unit, fn: Callable[[Unit], dict], restart_damaged: bool) -> None:
    try:
        fn(unit)
    except DamagedFileError as exc:
        if not restart_damaged:
            raise DataError(f"{unit.label or unit.dir}: its interrupted work is damaged ({exc}); rerun "
                            f"with --restart-damaged to restart this unit from the beginning "
                            f"(or delete {unit.partial})") from exc
        log.warning("%s: interrupted work is damaged (%s); restarting the unit", unit.label or unit.dir, exc)
        shutil.rmtree(unit.partial, ignore_errors=True)
        fn(unit)


def run_serial(units: list[Unit], fn: Callable[[Unit], dict], progress=None,
               restart_damaged: bool = False) -> list[dict]:
    """Run the unfinished units one after the other in this process; every unit's result."""
    run_jobs([(u, fn) for u in units], lambda u: progress.update(1) if progress is not None else None,
             restart_damaged)
    return [u.result() for u in units]


def run_jobs(jobs: Sequence[tuple[Unit, Callable[[Unit], dict]]], on_done: Callable[[Unit], None],
             restart_damaged: bool = False) -> None:
    """Each ``(unit, fn)`` through :func:`run_one`, one after the other in this process, then
    ``on_done(unit)``: the default executor of :func:`run_units` (an executor of
    :mod:`autogcl.executors` runs the same jobs elsewhere)."""
    for unit, fn in jobs:
        run_one(unit, fn, restart_damaged)
        on_done(unit)


def start_work(unit: Unit, runtime: dict | None = None) -> Path:
    """Create the unit's partial folder and record its configuration and ``runtime`` (device,
    threads: :func:`autogcl.devices.runtime_info`) in ``config.json``; refuse to continue an
    interrupted run of another configuration there, and warn when it continues on another
    runtime (its numbers then differ from an uninterrupted run's)."""
    work = unit.partial
    work.mkdir(parents=True, exist_ok=True)
    started = work / "config.json"
    if started.is_file():
        try:
            old = read_json(started)
        except DataError as exc:
            raise DamagedFileError(str(exc)) from exc
        diff = unit.stored_diff(old)
        if diff:
            raise ConfigError(f"{work} holds an interrupted run with another configuration "
                              f"({'; '.join(diff)}); delete it or use another --out")
        before = old.get(RUNTIME_KEY)
        if runtime is not None and before is not None and any(
                before[k] != runtime[k] for k in set(before) & set(runtime)):  # keys both record
            log.warning("%s was started on %s and continues on %s: its numbers will not match an "
                        "uninterrupted run", unit.label or work, before, runtime)
    atomic_write_json(started, {**unit.config, **({RUNTIME_KEY: runtime} if runtime else {})})
    return work


def with_commit(result: dict) -> dict:
    """``result`` with the ``code_commit`` that runs it (:func:`autogcl.provenance.commit_label`),
    where known and not already there."""
    if "code_commit" in result:
        return result
    label = commit_label()
    return {**result, **({"code_commit": label} if label else {})}


def publish(unit: Unit, rows: list[dict], result: dict) -> dict:
    """Write ``metrics.csv`` and ``result.json`` (:func:`with_commit`), drop the checkpoint,
    publish the unit."""
    result = with_commit(result)
    atomic_write_csv(unit.partial / "metrics.csv", rows)
    atomic_write_json(unit.partial / "result.json", result)
    (unit.partial / "checkpoint.pt").unlink(missing_ok=True)
    unit.finish()
    return result


def check_run_folder(out: Path, what: str) -> None:
    """The ``--out`` folder of a one-unit run (pre-training, the views figure): new, empty or
    holding a finished ``what`` run; never a file, nor a folder of other files, which the
    finished run would replace."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; name a folder for the run")
    if out.is_dir() and not (out / "result.json").is_file() and any(
            not (p.name.startswith(".") and p.name.endswith(".lock")) for p in out.iterdir()):
        raise ConfigError(f"--out {out} holds other files and no finished {what} run; name a new or empty folder")


def run_units(units: list[Unit], fn: Callable[[Unit], dict] | Sequence[Callable[[Unit], dict]], resume: bool,
              desc: str, what: str = "seed", show_progress: bool | None = None, restart_damaged: bool = False,
              executor=None, on_done: Callable[[Unit], None] | None = None, lock_folder: bool = True) -> list[dict]:
    """Run a sweep's units with a progress bar counting finished units: check the output
    folders can be written, refuse to mix configurations or overwrite finished work
    (:func:`check_resumable`), drop stale partial work unless resuming, run the unfinished
    units on ``executor`` (default: :class:`autogcl.executors.SerialExecutor`) and return
    every unit's result. ``fn``: the function of every unit, or one per unit; ``on_done(unit)``
    runs here as each unit finishes (its ``dir`` made absolute).

    The sweep's folder (the deepest one holding every unit) is locked while it runs
    (:func:`autogcl.locks.exclusive`): the same command started twice on one ``--out`` stops at
    once, naming the process that holds it (``lock_folder=False``: a one-unit run whose unit
    folder is the ``--out`` itself, where the unit's own lock, :func:`hold_unit`, is the run's). Where no progress bar is shown (output not a
    terminal), each finished unit is one ``logging`` line with the time left."""

    fns = list(fn) if isinstance(fn, Sequence) else [fn] * len(units)
    if len(fns) != len(units):
        raise ValueError(f"{len(fns)} unit functions for {len(units)} units")
    # absolute folders: an executor's workers need not share this process's working directory
    units = [replace(u, dir=Path(u.dir).absolute()) for u in units]
    for folder in sorted({u.dir.parent for u in units}):
        check_writable(folder)
    if not units:
        return []
    root = Path(os.path.commonpath([str(u.dir.parent) for u in units]))
    with exclusive(root, f"--out {root}", folder=True) if lock_folder else contextlib.nullcontext():
        return _run_units(units, fns, resume, desc, what, show_progress, restart_damaged, executor, on_done)


def _run_units(units, fns, resume, desc, what, show_progress, restart_damaged, executor, on_done) -> list[dict]:
    from tqdm.auto import tqdm

    check_resumable(units, resume)
    todo = [(u, f) for u, f in zip(units, fns) if not u.finished]
    if not resume:
        for u, _ in todo:  # a stale partial from an earlier run is not ours to continue
            if u.partial.exists():
                with hold_unit(u, wait=5):  # unless a live run is working in it
                    shutil.rmtree(u.partial)
    bar = tqdm(total=len(units), initial=len(units) - len(todo), desc=desc, unit=what,
               disable=None if show_progress is None else not show_progress)
    t0, finished = time.monotonic(), []

    def done(unit: Unit) -> None:
        bar.update(1)
        finished.append(unit)
        if bar.disable:  # no bar: a log line per finished unit
            left = len(todo) - len(finished)
            eta = (time.monotonic() - t0) / len(finished) * left
            log.info("%s: %s finished (%d of %d %ss done, about %.0f s left)", desc, unit.label or unit.dir.name,
                     len(units) - left, len(units), what, eta)
        if on_done is not None:
            on_done(unit)

    try:
        if executor is None:
            run_jobs(todo, done, restart_damaged)
        else:
            executor.run(todo, done, restart_damaged)
    finally:
        bar.close()
    return [u.result() for u in units]


@dataclass
class Sweep:
    """Units that make one summary: ``fn`` runs a unit, ``finish`` turns the units' results
    into the summary (and writes it). Several sweeps run as one pool of units
    (:func:`run_sweeps`), so that an executor can run units of different rows, datasets or
    grid points side by side."""

    units: list[Unit]
    fn: Callable[[Unit], dict]
    finish: Callable[[list[dict]], dict]


def run_sweeps(sweeps: Sequence[Sweep], resume: bool, desc: str, what: str = "unit",
               show_progress: bool | None = None, restart_damaged: bool = False, executor=None) -> list[dict]:
    """Every unit of every sweep through one :func:`run_units`; each sweep's summary, written
    as soon as that sweep's own units have finished (so an interrupted pool keeps the
    summaries of the sweeps it completed)."""
    units = [u for s in sweeps for u in s.units]
    fns = [s.fn for s in sweeps for _ in s.units]
    owner = {Path(u.dir).absolute(): k for k, s in enumerate(sweeps) for u in s.units}
    left = [sum(not u.finished for u in s.units) for s in sweeps]
    summaries: dict[int, dict] = {}

    def done(unit: Unit) -> None:
        k = owner[unit.dir]
        left[k] -= 1
        if left[k] == 0:
            summaries[k] = sweeps[k].finish([u.result() for u in sweeps[k].units])

    run_units(units, fns, resume, desc, what, show_progress, restart_damaged, executor, on_done=done)
    return [summaries[k] if k in summaries else s.finish([u.result() for u in s.units])
            for k, s in enumerate(sweeps)]
