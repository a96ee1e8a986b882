"""The command that runs the manifest's cells (``autogcl reproduce``): :func:`reproduce` runs the
commands of the cells that are not done and publishes each cell it fills; :func:`run_budget` does
it within a time budget (only units whose estimate fits start; running ones are stopped with
SIGTERM, which checkpoints them, at the budget). Starts processes: no torch."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import preempt
from ..config import Config, option
from ..errors import DataError
from ..paths import child_pythonpath
from .estimates import unit_seconds
from .manifest import CELLS, Cell, finished_units, missing, stale, unit_result
from .publishing import publish, publish_units, restore


#: a budgeted window starts a unit only when its estimate times this fits what is left: the
#: estimates are training times, and on an H100 (2026-11-26) units started with 173-177 s
#: estimates still had 3-24 of 100 epochs left after 200 s (start-up, 8 units and a test suite
#: sharing the machine)
MARGIN = 1.3


@dataclass
class ReproduceConfig(Config):
    """``autogcl reproduce``: which of the manifest's cells to run, and for how long."""

    missing: bool = option(False, "run every cell of the manifest that is not done (no summary, or fewer seeds "
                                  "than the paper's), then copy its summary and units into the committed folder")
    stale: bool = option(False, "rerun the cells whose committed run folder names no code commit (no "
                                "provenance.json: they predate it) at the code of this checkout: their "
                                "unrecorded units are not restored, so they run again, and the new summary "
                                "replaces the old (with --missing: both kinds)")
    compute: str = option("all", "only the cells that fit the 2-core CPU machine (cpu), only those queued for a "
                                 "GPU (gpu), or all", choices=("all", "cpu", "gpu"))
    only: str | None = option(None, "only the cells whose 'protocol / label' contains this text (e.g. "
                                    "'transfer / tox21'), or one of several texts separated by commas",
                              type=str, metavar="TEXT")
    budget: float | None = option(None, "seconds for the whole run: only units whose estimated time fits what is "
                                        "left start, and running ones are stopped (SIGTERM: they checkpoint) at "
                                        "the budget; finished units and summaries are published either way",
                                  type=float, low=0, metavar="SECONDS")
    jobs: int = option(1, "with --budget: units (processes) at a time, sharing the device (e.g. 8 on one GPU)", low=1)
    unit_seconds: float | None = option(None, "with --budget: the time assumed for a unit that no committed file "
                                              "estimates (default: such units are not started)", type=float, low=0,
                                        low_open=True, metavar="SECONDS")
    grace: float = option(60.0, "with --budget: seconds a stopped unit has to write its checkpoint", low=0)
    margin: float = option(MARGIN, "with --budget: a unit starts only when its estimate times this factor fits what "
                                "is left (the estimates are training times: the start-up and the units sharing "
                                "the device add to them)", low=1)
    dry_run: bool = option(False, "print the commands (and, with --budget, the estimates), run nothing")
    root: str = option(".", "the repository root (its docs/results/ receives the runs)")

    def __post_init__(self):
        self.check_choices()



def todo(cells, root: Path, *, missing_cells: bool = True, stale_cells: bool = False) -> list[Cell]:
    """The cells a reproduce runs, in manifest order: those not done (``missing_cells``) and those
    whose committed folder names no code commit (``stale_cells``: :func:`~.manifest.stale`)."""
    chosen = {id(c) for c in (missing(cells, root) if missing_cells else [])} | _reruns(cells, root, stale_cells)
    return [c for c in cells if id(c) in chosen]


def _reruns(cells, root: Path, stale_cells: bool) -> set[int]:
    """The ids of the stale cells a reproduce reruns (none unless ``stale_cells``): only their
    committed units that name a commit are restored, and their summary is replaced by one of as
    many seeds. A partial cell of unrecorded code, run because it is not done, keeps resuming
    from all its committed units."""
    return {id(c) for c in stale(cells, root)} if stale_cells else set()


def _restore_all(group: list[Cell], cells, root: Path, reruns: set[int]) -> None:
    """Before a command runs: restore the committed units of the cells it runs (:func:`restore`; a
    stale one's, only those that name their commit) and all of those of every other cell of
    ``cells`` or the manifest that shares the command (one ablation command runs every ratio:
    without its done ratios' units, ``--resume`` would train them again)."""
    for c in group:
        restore(c, root, recorded_only=id(c) in reruns)
    ids = {id(c) for c in group}
    for c in [*cells, *CELLS]:
        if c.command == group[0].command and id(c) not in ids:
            ids.add(id(c))
            restore(c, root)


def _seed(unit: Path) -> int | None:
    return unit_result(unit).get("seed")


def _argv(command: str, data_root: str | None, extra: list[str], resume: bool) -> list[str]:
    """A cell's command as ``autogcl`` arguments: the data root replaced, ``--resume`` kept only
    when resuming, the executor options added (a later ``--device`` overrides the cell's)."""
    import shlex

    argv = shlex.split(command)[1:]  # without "autogcl"
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--data-root" and data_root:
            out += [a, data_root]
            i += 2
            continue
        if a == "--device" and "--device" in extra:
            i += 2
            continue
        if a == "--resume" and not resume:
            i += 1
            continue
        out.append(a)
        i += 1
    return out + extra


def _with(argv: list[str], **options) -> list[str]:
    """``argv`` with ``--NAME VALUE`` set for each option (replaced where present)."""
    out = list(argv)
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if flag in out:
            out[out.index(flag) + 1] = str(value)
        else:
            out += [flag, str(value)]
    return out


def _device(argv: list[str]) -> str:
    return argv[argv.index("--device") + 1] if "--device" in argv else "cpu"


@dataclass
class Job:
    """One process of a budgeted reproduce: ``units`` units of ``cells`` (one seed of a cell, or
    a whole command), estimated at ``seconds`` (None: unknown)."""

    cells: list
    argv: list
    units: int
    seconds: float | None
    source: str
    label: str
    #: a semi command runs its folds in order, resumably: a job that does not fit whole may start
    #: with only the next folds that fit (``--fold-limit done + m``); ``per_unit`` is one fold's
    #: estimate, ``done`` the folds 0..done-1 finished before it (the semi command resumes under
    #: any limit, whatever folds its sweep folder's splits hold)
    per_unit: float | None = None
    done: int = 0
    #: what is left of the job after a shortened run of it (:meth:`shortened`)
    rest: "Job | None" = None

    def fitting(self, seconds_left: float, margin: float) -> "Job | None":
        """This job when its estimate x ``margin`` fits ``seconds_left``, else :meth:`shortened`
        (None: nothing of it fits, or it has no estimate)."""
        if self.seconds is None:
            return None
        return self if self.seconds * margin <= seconds_left else self.shortened(seconds_left, margin)

    def shortened(self, seconds_left: float, margin: float) -> "Job | None":
        """This job cut to the folds that fit ``seconds_left`` (each estimated at ``per_unit`` x
        ``margin``); None when it cannot be cut or not even one fold fits."""
        one = self.per_unit
        if one is None or not math.isfinite(one) or one <= 0 or self.units <= 1:
            return None
        m = min(int(seconds_left // (one * margin)), self.units - 1)
        if m < 1:
            return None
        limit = self.done + m
        name = self.label.rsplit(" (", 1)[0]
        rest = Job(self.cells, self.argv, self.units - m, one * (self.units - m), self.source,
                   f"{name} ({self.units - m} units)", per_unit=one, done=limit)
        return Job(self.cells, _with(self.argv, fold_limit=limit), m, one * m, self.source,
                   f"{name} ({m} of {self.units} units: --fold-limit {limit})", rest=rest)


def _fold_prefix(finished) -> int:
    """d for a one-seed semi sweep: folds 0..d-1 are finished (so ``--fold-limit d + m`` runs at
    most m new ones)."""
    have = {u.name for u in finished if u.parent.name == "seed0"}
    d = 0
    while f"fold{d}" in have:
        d += 1
    return d


def plan(cells, root: Path, *, data_root: str | None = None, extra: list[str] | None = None,
         unit_default: float | None = None, missing_cells: bool = True, stale_cells: bool = False) -> list[Job]:
    """The jobs of a budgeted reproduce, most valuable first: cells with no committed run before
    partial ones, cheaper before dearer. A cell whose command takes ``--seeds`` (unsupervised,
    transfer) is split into one job per seed it still lacks (``--first-seed S --seeds 1``), so
    each unit starts only when it can finish; other commands (semi folds, pre-training, the
    ablation) are one job of all the units they still lack. The committed units are restored
    into the sweep folders first (:func:`_restore_all`: a stale cell's, :func:`todo`, only those
    that name their commit; those of a done cell sharing the command, all)."""
    root = Path(root)
    reruns = _reruns(cells, root, stale_cells)
    groups: dict[str, list[Cell]] = {}
    for c in todo(cells, root, missing_cells=missing_cells, stale_cells=stale_cells):
        groups.setdefault(c.command, []).append(c)
    jobs = []
    for command, group in groups.items():
        argv = _argv(command, data_root, list(extra or []), resume=True)
        if "--resume" not in argv:
            argv.append("--resume")
        dev = _device(argv)
        first = group[0]
        _restore_all(group, cells, root, reruns)
        est = unit_seconds(first, root, dev)
        seconds, source = (est if est else (unit_default, "--unit-seconds") if unit_default else (None, "no estimate"))
        name = " / ".join((first.protocol,) + tuple(first.label))
        if len(group) == 1 and first.protocol in ("unsupervised", "transfer") and "--seeds" in argv:
            have = {_seed(u) for u in finished_units(root / first.out)}
            for s in range(first.seeds):
                if s not in have:
                    jobs.append(Job(group, _with(argv, first_seed=s, seeds=1), 1, seconds, source, f"{name} seed {s}"))
            continue
        want = max(c.seeds or 1 for c in group)
        finished = finished_units(root / first.out)
        left = max(want - len(finished), 1)
        total = None if seconds is None else seconds * left
        folds = len(group) == 1 and argv[0] == "semi" and "--fold-limit" not in argv  # cut by --fold-limit
        prefix = _fold_prefix(finished) if folds else 0
        jobs.append(Job(group, argv, left, total, source, f"{name} ({left} units)",
                        per_unit=seconds if folds else None, done=prefix))
    rank = {id(c): (0 if c.status(root) == "missing" else 1) for c in cells}
    return sorted(jobs, key=lambda j: (rank.get(id(j.cells[0]), 1), float("inf") if j.seconds is None else j.seconds))


def _spawn(argv: list[str], root: Path, log: Path) -> subprocess.Popen:
    """``python -m autogcl ARGV`` in ``root`` as a child process writing to ``log``."""
    env = {**os.environ, "PYTHONPATH": child_pythonpath(Path(__file__).resolve().parents[2])}  # autogcl's folder
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w", encoding="utf-8") as f:
        return subprocess.Popen([sys.executable, "-m", "autogcl", *argv], cwd=root, env=env, stdout=f,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


def _summarise(cell: Cell, root: Path, data_root, extra, spawn, echo, rerun: bool = False) -> bool:
    """After a budgeted window, for a cell split by seeds: the summary of its seeds 0..k-1 when
    they have all finished and k is more than the committed summary the tables read counts, in
    whichever of the cell's folders it lies (as many, for a ``rerun`` of a stale cell) (``--seeds k
    --resume``: no unit trains again). True when it wrote one (the one-seed commands' own
    summaries are never published)."""
    have = {_seed(u) for u in finished_units(Path(root) / cell.out)}
    k = 0
    while k in have and k < cell.seeds:
        k += 1
    hit = cell.found(root)
    # never shadow a committed summary of as many seeds or more, in any of the cell's folders (the
    # size study's 3 CPU seeds of a transfer cell): its finished units are published all the same
    if k == 0 or (hit and (cell.count(hit[1]) > k or (cell.count(hit[1]) == k and not rerun))):
        return False
    argv = _with(_argv(cell.command, data_root, list(extra or []), resume=True), seeds=k)
    if "--resume" not in argv:
        argv.append("--resume")
    proc = spawn(argv, Path(root), Path(root) / "runs" / "reproduce" / "logs" / f"summary-{abs(hash(cell.out))}.log")
    rc = proc.wait()
    echo(f"reproduce: {' / '.join(cell.label)}: summary of seeds 0-{k - 1} " + ("written" if rc == 0 else
                                                                                f"failed (exit code {rc})"))
    return rc == 0


def run_budget(cells, root: Path, budget: float, *, data_root: str | None = None, extra: list[str] | None = None,
               jobs: int = 1, unit_default: float | None = None, grace: float = 60.0, margin: float = MARGIN,
               dry_run: bool = False, spawn=_spawn, echo=print, clock=time.monotonic, missing_cells: bool = True,
               stale_cells: bool = False) -> dict:
    """Run the :func:`plan` of ``cells`` within ``budget`` seconds, ``jobs`` processes at a
    time: a job starts only when its estimate times ``margin`` fits the time left (a job without an
    estimate never does; a semi job of several folds may start with the next folds that fit,
    :meth:`Job.shortened`, and its rest is queued again when it ends), and one job at a time per
    sweep folder (the protocols lock it), so the jobs packed
    together are different cells; at the budget every running job gets SIGTERM (the protocols
    checkpoint and exit 143)
    and ``grace`` seconds to exit. Then every finished unit and summary is published
    (:func:`publish`), so the same call later resumes from them. Returns counts: ``finished``,
    ``stopped``, ``failed``, ``not_started`` jobs and the cells ``published``. ``missing_cells``,
    ``stale_cells``: which cells (:func:`todo`)."""
    root = Path(root).resolve()
    start = clock()
    reruns = _reruns(cells, root, stale_cells)
    jobs_ = plan(cells, root, data_root=data_root, extra=extra, unit_default=unit_default,
                 missing_cells=missing_cells, stale_cells=stale_cells)
    for j in jobs_:
        est = "no estimate" if j.seconds is None else f"~{j.seconds:.0f} s ({j.source})"
        echo(f"reproduce: plan: {j.label}: {est}")
    if dry_run or not jobs_:
        if not jobs_:
            echo("reproduce: every listed cell is done" + (" and names its code commit" if stale_cells else ""))
        return {"finished": 0, "stopped": 0, "failed": 0, "not_started": len(jobs_), "published": []}
    deadline = start + budget
    # SIGTERM or SIGINT (preempt.handling, the command line's) is noted, not raised: no job starts
    # after it, the running ones get SIGTERM as at the budget, what finished is published, and
    # then it is raised (the command line says how to resume)
    with preempt.deferring():
        result = _run_jobs(jobs_, root, deadline, budget, jobs, grace, margin, data_root, extra, spawn, echo, clock,
                           reruns)
    return result


def _run_jobs(todo, root: Path, deadline: float, budget: float, jobs: int, grace: float, margin: float,
              data_root, extra, spawn, echo, clock, reruns=frozenset()) -> dict:
    """:func:`run_budget`'s loop: start what fits, stop the rest at the deadline or at a noted
    signal, publish."""
    running: dict = {}
    counts = {"finished": 0, "stopped": 0, "failed": 0, "not_started": 0}
    logs = root / "runs" / "reproduce" / "logs"
    queue = list(todo)
    n = 0
    try:
        while queue or running:
            now = clock()
            if now >= deadline or preempt.requested():
                break
            for j in list(queue):
                if len(running) >= jobs:
                    break
                run = j.fitting(deadline - now, margin)
                if run is None:
                    continue
                if any(c.out == r.cells[0].out for r in running.values() for c in j.cells):
                    continue  # one process per sweep folder (its lock): the next seed waits for this one
                queue.remove(j)
                n += 1
                running[spawn(run.argv, root, logs / f"{n:03d}.log")] = run
                echo(f"reproduce: start {run.label}: autogcl {' '.join(run.argv)}")
            if not running and not any(j.fitting(deadline - now, margin) for j in queue):
                break  # nothing running and nothing left that fits
            for proc, j in list(running.items()):
                rc = proc.poll()
                if rc is None:
                    continue
                del running[proc]
                counts["finished" if rc == 0 else "failed"] += 1
                echo(f"reproduce: {'done' if rc == 0 else f'failed (exit code {rc})'}: {j.label}")
                if rc == 0 and j.rest is not None:  # a shortened job ended early: its next folds may fit
                    queue.append(j.rest)
            time.sleep(0.2)
    except BaseException:  # an error of this loop (or a second signal): the jobs do not outlive it
        _signal_jobs(running, signal.SIGTERM)
        raise
    why = "stopped by a signal" if preempt.requested() else "stopped at the budget"
    _signal_jobs(running, signal.SIGTERM)  # checkpoint and stop
    end = clock() + grace
    for proc, j in running.items():
        try:
            rc = proc.wait(timeout=max(end - clock(), 0.1))
        except subprocess.TimeoutExpired:
            _signal_jobs({proc: j}, signal.SIGKILL)
            rc = proc.wait()
        counts["finished" if rc == 0 else "stopped"] += 1
        echo(f"reproduce: {'done' if rc == 0 else why} (exit code {rc}): {j.label}"
             + ("" if rc == 0 else "; its checkpoint stays for the next call"))
    counts["not_started"] = len(queue)
    for j in queue:
        one = j.per_unit if j.per_unit is not None else j.seconds
        why_not = ("no estimate (give --unit-seconds)" if j.seconds is None else
                   f"~{one:.0f} s (x {margin:g}) does not fit the budget" if one * margin > budget else
                   "stopped by a signal first" if preempt.requested() else
                   f"~{j.seconds:.0f} s no longer fitted when a slot was free")
        echo(f"reproduce: not started: {j.label}: {why_not}")
    published = []
    seen = set()
    for j in todo:
        for c in j.cells:
            if id(c) in seen:
                continue
            seen.add(id(c))
            if "--first-seed" in j.argv:  # split by seeds: only a summary of seeds 0..k-1 is published
                dst = (publish(c, root) if _summarise(c, root, data_root, extra, spawn, echo, id(c) in reruns)
                       else None)
                if dst is None:
                    publish_units(c, root)
            else:
                dst = publish(c, root)
            if dst is not None:
                published.append(c)
                echo(f"reproduce: {' / '.join(c.label)} -> {dst.relative_to(root)}")
    echo(f"reproduce: {counts['finished']} finished, {counts['stopped']} stopped, {counts['failed']} "
         f"failed, {counts['not_started']} not started; {len(published)} summaries published")
    return {**counts, "published": published}


def _signal_jobs(running: dict, signum: int) -> None:
    """``signum`` to every running job's process group (each job is a session of its own)."""
    for proc in running:
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass


def reproduce(cells, root: Path, *, data_root: str | None = None, extra: list[str] | None = None,
              resume: bool = False, dry_run: bool = False, run=None, echo=print, missing_cells: bool = True,
              stale_cells: bool = False) -> list[Cell]:
    """Run the command of every cell of ``cells`` that is not done (once per distinct command),
    from ``root``, then :func:`publish` each cell it fills. ``run(argv) -> int`` runs one
    ``autogcl`` command (default: ``python -m autogcl`` in a child process; the command line passes
    :func:`autogcl.cli.main`, so the runner and the executor switch are those of every protocol).
    Cells already done are skipped, and with ``resume`` each command continues its interrupted
    units, so an interrupted reproduce continues where it stopped. Returns the cells published.
    :func:`run_budget` is the same within a time budget. ``missing_cells``, ``stale_cells``: which
    cells (:func:`todo`; a stale cell's committed units that name no commit are not restored, so
    they run again)."""
    root = Path(root).resolve()
    reruns = _reruns(cells, root, stale_cells)
    cells_ = todo(cells, root, missing_cells=missing_cells, stale_cells=stale_cells)
    if not cells_:
        echo("reproduce: every listed cell is done" + (" and names its code commit" if stale_cells else ""))
        return []
    by_command: dict[str, list[Cell]] = {}
    for c in cells_:
        by_command.setdefault(c.command, []).append(c)
    if run is None:  # the command line in a child process (the caller may pass autogcl.cli.main)
        def run(argv):
            return subprocess.run([sys.executable, "-m", "autogcl", *argv], stdin=subprocess.DEVNULL).returncode
    done = []
    for command, group in by_command.items():
        argv = _argv(command, data_root, list(extra or []), resume)
        labels = ", ".join(" / ".join(c.label) for c in group)
        echo(f"reproduce: {labels}: autogcl {' '.join(argv)}")
        if dry_run:
            continue
        if resume:
            _restore_all(group, cells, root, reruns)
        here = os.getcwd()
        os.chdir(root)
        try:
            rc = run(argv)
        finally:
            os.chdir(here)
        if rc:
            raise DataError(f"autogcl {' '.join(argv)} failed (exit code {rc}); rerun reproduce with --resume "
                            "to continue")
        for c in group:
            dst = publish(c, root)
            if dst is None:
                echo(f"reproduce: {' / '.join(c.label)}: no {c.file} in {c.out} after the command")
            else:
                echo(f"reproduce: {' / '.join(c.label)} -> {dst.relative_to(root)}")
                done.append(c)
    if done:
        echo("reproduce: run python scripts/docs/docs.py to regenerate the tables")
    return done
