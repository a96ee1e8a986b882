"""Publishing a finished sweep into its committed folders (:func:`publish`, :func:`publish_units`),
each with a ``provenance.json`` naming the code commit (:func:`code_commit`) and the devices it ran
on, and restoring the committed units into a sweep folder (:func:`restore`). No torch."""

from __future__ import annotations

import filecmp
import hashlib
import json
import shutil
import time
from pathlib import Path

from ..atomic import atomic_copy, atomic_write_text, recover_dir, replace_dir
from ..errors import StorageError
from ..provenance import code_commit, unit_commit

from .manifest import Cell, finished_units, recorded, unit_result, units_folder


def publish_units(cell: Cell, root: Path) -> list[Path]:
    """Copy the finished units of ``cell.out`` (``config.json``, ``metrics.csv``, ``result.json``:
    no checkpoints) into the committed units folder of ``cell.runs[0]``; the units copied. A
    unit new to that folder gets a ``provenance.json`` naming the code commit that ran it
    (:func:`_record`) and its device, so that a later summary over units of several windows names
    every commit; units already committed keep theirs (or none, if they predate it), and a unit
    run again with another result loses the record of the old one. Each unit is written whole
    (staged beside it, then :func:`autogcl.atomic.replace_dir`): a kill or a full disk leaves
    the committed unit as it was or as it is meant to be, never a new file beside an old one."""
    src = Path(root) / cell.out
    units = Path(root) / units_folder(cell.runs[0])
    copied = []
    here = code_commit()
    for unit in finished_units(src):
        target = units / unit.relative_to(src)
        recover_dir(target)  # a publish killed between its renames: the old unit back first
        new = _is_new(unit, target)
        if not new and all(_same(unit / n, target / n) for n in UNIT_FILES):
            copied.append(target)  # published already, file for file: nothing to write
            continue
        stage = target.with_name(f".{target.name}.publishing")  # beside it; dot folders are no units
        try:
            _stage(unit, target, stage, _record(unit, here) if new else None, keep_record=not new)
        except StorageError as exc:  # named by the committed file it was meant for
            shutil.rmtree(stage, ignore_errors=True)
            raise StorageError(f"cannot write {target / Path(exc.filename or '').name} ({exc.strerror}); the "
                               f"previous file is kept as it was (a unit is published whole or not at all)",
                               exc.errno, target, exc.strerror) from exc
        replace_dir(stage, target)  # all of the unit's files at once: never a new config beside an old result
        copied.append(target)
    return copied


def _stage(unit: Path, target: Path, stage: Path, record: dict | None, keep_record: bool) -> None:
    """Into ``stage``: what the committed unit ``target`` holds (its ``provenance.json`` only when
    ``keep_record``: an old record goes with its old result), then the sweep unit's files and
    ``record``."""
    shutil.rmtree(stage, ignore_errors=True)
    try:
        if target.is_dir():
            shutil.copytree(target, stage, ignore=None if keep_record else shutil.ignore_patterns("provenance.json"))
        stage.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(str(exc), exc.errno, stage / "", exc.strerror) from exc
    for name in UNIT_FILES:
        if (unit / name).is_file():
            atomic_copy(unit / name, stage / name)
    if record is not None:
        atomic_write_text(stage / "provenance.json", json.dumps(record, indent=1) + "\n")


def _record(unit: Path, here: tuple[str | None, bool]) -> dict | None:
    """The provenance of a sweep unit new to its committed folder: the record it carries from the
    committed folder it was restored from (:func:`restore`), else the commit its ``result.json``
    names, else ``here`` (the checkout's); None when none is known."""
    carried = _carried(unit)
    if carried is not None:  # restored from another committed folder: its record, not HEAD's
        return carried if carried.get("commit") else None
    result = unit_result(unit)
    commit, dirty = unit_commit(result) or here  # the commit the unit ran at, where it says
    if not commit:
        return None
    return {"commit": commit, "dirty": dirty, "device": (result.get("runtime") or {}).get("device"),
            "published": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


#: the files of a unit that are published (its checkpoints are not)
UNIT_FILES = ("config.json", "metrics.csv", "result.json")


def _same(a: Path, b: Path) -> bool:
    """Both missing, or both there with the same bytes."""
    return a.is_file() == b.is_file() and (not a.is_file() or filecmp.cmp(a, b, shallow=False))


def _is_new(unit: Path, target: Path) -> bool:
    """Whether sweep unit ``unit`` is new to its committed folder ``target``, or another run of
    that unit (a local rerun, another result): then its provenance is written."""
    return not (target / "result.json").is_file() or not filecmp.cmp(unit / "result.json", target / "result.json",
                                                                      shallow=False)


#: the record :func:`restore` leaves in a sweep unit: the committed unit's provenance, tied to
#: its result by digest (a unit run again over it has another result, and is not that record's)
CARRIED = "restored.json"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _carried(unit: Path) -> dict | None:
    """The committed record a restored sweep unit carries ({"commit": None} where its committed
    folder named none), or None when it carries none or its result is not the one restored."""
    try:
        record = json.loads((unit / CARRIED).read_text(encoding="utf-8"))
        if record.pop("result_sha256") != _digest(unit / "result.json"):
            return None
        return record.get("provenance") or {"commit": None}
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return None


#: the key of ``unit_commits`` (:func:`publish`) for units whose provenance names no commit
UNRECORDED = "not recorded"


def _unit_commit(unit: Path) -> str | None:
    """The commit a committed unit's ``provenance.json`` names (None where it has none)."""
    try:
        return json.loads((unit / "provenance.json").read_text(encoding="utf-8")).get("commit")
    except (OSError, json.JSONDecodeError, AttributeError):
        return None


def publish(cell: Cell, root: Path) -> Path | None:
    """Copy a finished sweep's ``summary.json`` (and its finished units: :func:`publish_units`)
    from ``cell.out`` into the committed folder ``cell.runs[0]``, with a ``provenance.json``
    naming the code commit (:func:`code_commit`) and the devices its units ran on; where the
    units' own provenance names other commits (units of earlier windows), ``unit_commits``
    counts the units of each commit; a cell of one file with no units (a pre-training's
    ``result.json``) names the commit that file records it ran at. Publishing again what is
    committed already (the same summary, no new unit) keeps its ``provenance.json``: the summary
    was made at the commit it names, not at this checkout's. The folder written, or None when the sweep has no summary
    yet (its finished units are copied anyway)."""
    src = Path(root) / cell.out
    dst = Path(root) / cell.runs[0]
    committed = Path(root) / units_folder(cell.runs[0])
    any_new = any(_is_new(unit, committed / unit.relative_to(src)) for unit in finished_units(src))
    units = publish_units(cell, root)
    if not (src / cell.file).is_file():
        return None
    if (not any_new and (dst / "provenance.json").is_file() and (dst / cell.file).is_file()
            and filecmp.cmp(src / cell.file, dst / cell.file, shallow=False)):
        return dst  # published already: its record stays
    if cell.file == "summary.json" and (dst / cell.file).is_file():
        # never replace a committed summary by one of fewer seeds or folds (a sweep folder that
        # kept the summary of an earlier, shorter run)
        try:
            old = json.loads((dst / cell.file).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = {}  # an unreadable committed summary is replaced
        if cell.count(json.loads((src / cell.file).read_text(encoding="utf-8"))) < cell.count(old):
            return None
    dst.mkdir(parents=True, exist_ok=True)
    atomic_copy(src / cell.file, dst / cell.file)
    devices = set()
    for unit in units or [src]:
        device = (unit_result(unit).get("runtime") or {}).get("device")
        if device:
            devices.add(str(device))
    # a run of one file (a pre-training's result.json) is its own unit: the commit it ran at,
    # where it says, not the checkout's that publishes it
    own = None if units else unit_commit(json.loads((src / cell.file).read_text(encoding="utf-8")))
    commit, dirty = own or code_commit()
    record = {"commit": commit, "dirty": dirty, "devices": sorted(devices),
              "published": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    per_unit: dict[str, int] = {}
    for unit in units:
        c = _unit_commit(unit) or UNRECORDED
        per_unit[c] = per_unit.get(c, 0) + 1
    named = set(per_unit) - {UNRECORDED}
    if units and ((commit and set(per_unit) != {commit}) or (not commit and named)):
        record["unit_commits"] = dict(sorted(per_unit.items()))
    atomic_write_text(dst / "provenance.json", json.dumps(record, indent=1) + "\n")
    return dst


def publish_sweeps(out: Path, summaries: Path, root: Path) -> list[Path]:
    """Publish every sweep of a tables run folder (``out/<protocol>/<tag>``, protocol
    ``unsupervised`` or ``semi``: what ``scripts/docs/tables.sh`` runs) into
    ``summaries/<protocol>/<tag>`` and its units folder, as :func:`publish` does for a manifest
    cell: units and summary with their ``provenance.json``, a committed summary never replaced
    by one of fewer seeds or folds. ``out`` and ``summaries`` are relative to ``root`` (or
    absolute). The summary folders written."""
    root = Path(root)
    written = []
    for kind in ("unsupervised", "semi"):
        sweeps = root / out / kind
        if not sweeps.is_dir():
            continue
        for sweep in sorted(p for p in sweeps.iterdir() if p.is_dir() and not p.name.startswith(".")):
            folder = str(Path(summaries) / kind / sweep.name)
            cell = Cell(kind, (sweep.name,), (folder,), str(Path(out) / kind / sweep.name), "")
            dst = publish(cell, root)
            if dst is not None:
                written.append(dst)
    return written


def restore(cell: Cell, root: Path, recorded_only: bool = False, seeds: int | None = None) -> int:
    """Copy the committed finished units of ``cell`` that its sweep folder lacks into it (a fresh
    clone, a bare GPU machine), so that ``--resume`` skips them; how many were copied.
    ``recorded_only``: only units whose ``provenance.json`` names a commit (a rerun of a stale
    cell runs the others again). ``seeds``: only the units of seeds ``0 .. seeds-1`` (the folders
    ``seed0/``...; a sweep of fewer seeds than the committed cell). Each copied unit carries its committed ``provenance.json``
    (:data:`CARRIED`), so that publishing it into another cell's folder names the commit that ran
    it, not the checkout's."""
    units = Path(root) / units_folder(cell.runs[0])
    out = Path(root) / cell.out
    n = 0
    for unit in finished_units(units):
        target = out / unit.relative_to(units)
        if seeds is not None and unit.relative_to(units).parts[0] not in {f"seed{k}" for k in range(seeds)}:
            continue
        if (target / "result.json").is_file() or (recorded_only and not recorded(unit)):
            continue
        try:
            provenance = json.loads((unit / "provenance.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            provenance = None
        # the record first and result.json last: a kill on the way leaves an unfinished unit (run
        # again), never a finished one without its record (then published with the checkout's commit)
        atomic_write_text(target / CARRIED, json.dumps({"result_sha256": _digest(unit / "result.json"),
                                                        "provenance": provenance}, indent=1) + "\n")
        for name in UNIT_FILES:
            if (unit / name).is_file():
                atomic_copy(unit / name, target / name)
        n += 1
    return n
