"""How long one unit of a cell takes on a device (:func:`unit_seconds`), from the committed
summaries and units of the cell or of its proxies. No torch."""

from __future__ import annotations

import json
from pathlib import Path

from .manifest import Cell, finished_units, unit_result, units_folder

#: the seconds of a lent-GPU window (``scripts/gpu/gpu_window.sh``'s default ``BUDGET``): a unit
#: estimated longer never starts in one
GPU_WINDOW_S = 500


def _device_kind(device) -> str | None:
    """``cuda`` or ``cpu`` for a recorded device name, None when none is recorded."""
    return ("cuda" if str(device).startswith("cuda") else "cpu") if device else None



#: the device of a summary over units of both kinds: its mean time estimates neither
MIXED = "mixed"


def _provenance_device(folder: Path) -> str | None:
    """``cuda`` or ``cpu``: the kind of device a summary's units ran on (its ``provenance.json``);
    :data:`MIXED` when they ran on both; None when none is recorded."""
    try:
        devices = json.loads((folder / "provenance.json").read_text(encoding="utf-8")).get("devices") or []
    except (OSError, json.JSONDecodeError):
        return None
    kinds = {_device_kind(d) for d in devices}
    return MIXED if len(kinds) > 1 else (kinds.pop() if kinds else None)


def unit_seconds(cell: Cell, root: Path, device: str) -> tuple[float, str] | None:
    """(seconds, source): the time one unit of ``cell`` takes on ``device`` (``cpu`` or
    ``cuda``), from committed files: the mean per-unit ``train_time_s`` + ``eval_time_s`` of the
    cell's own summaries (semi: ``time_per_fold_s``), else the mean over the cell's committed
    finished units that ran on ``device`` (a cell whose first units finished before its summary
    exists: ``time_s``, or ``train_time_s`` + ``eval_time_s``), else of its :attr:`Cell.proxy`
    summaries times their factor. A summary's device is its ``provenance.json``'s, else ``cuda``
    for folders under ``summaries/gpu/``; a summary over units of both devices (a cell whose
    seeds ran on a GPU and on the CPU) estimates neither: its units do. None when no committed
    file estimates it."""
    kind = _device_kind(device)
    own = _summary_seconds([(r, 1.0) for r in cell.runs], root, kind) or _units_seconds(cell, root, kind)
    return own or _summary_seconds(list(cell.proxy), root, kind)


def _units_seconds(cell: Cell, root: Path, kind: str) -> tuple[float, str] | None:
    """The mean time of the committed finished units of ``cell`` that ran on ``kind``."""
    folder = units_folder(cell.runs[0])
    times = []
    for unit in finished_units(Path(root) / folder):
        r = unit_result(unit)
        if _device_kind((r.get("runtime") or {}).get("device")) != kind:
            continue
        t = r["time_s"] if "time_s" in r else r.get("train_time_s", 0.0) + r.get("eval_time_s", 0.0)
        if t:
            times.append(float(t))
    if not times:
        return None
    return sum(times) / len(times), f"{folder} (mean of {len(times)} finished unit{'s' * (len(times) > 1)})"


def _summary_seconds(folders, root: Path, kind: str) -> tuple[float, str] | None:
    """The per-unit time of the first summary among ``folders`` ((folder, factor) pairs, or
    (folder, factor, "train") for the training time alone) that ran on ``kind``, times its factor
    (a pair of folders: the ratio of their per-unit times on the CPU, the second one's training
    time alone with "train"; the entry is skipped when either is missing)."""
    for entry in folders:
        folder, factor = entry[:2]
        train = entry[2:] == ("train",)  # training time only (an unsupervised seed without its SVM)
        ratio = ""
        if isinstance(factor, tuple):
            a = _summary_seconds([(factor[0], 1.0)], root, "cpu")
            b = _summary_seconds([(factor[1], 1.0) + entry[2:]], root, "cpu")
            if not a or not b or not b[0]:
                continue
            factor, ratio = a[0] / b[0], f" ({Path(factor[0]).name} / {Path(factor[1]).name} on the CPU)"
        f = Path(root) / folder / "summary.json"
        if not f.is_file():
            continue
        try:
            s = json.loads(f.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            continue
        dev = _provenance_device(f.parent) or ("cuda" if "/summaries/gpu/" in f"/{folder}/" else "cpu")
        if dev != kind:
            continue
        if "time_per_fold_s" in s:  # semi: a unit is a fold
            per_unit = float(s["time_per_fold_s"])
        elif "train_time_s" in s:  # unsupervised, transfer: means over seeds
            per_unit = float(s["train_time_s"]) + (0.0 if train else float(s.get("eval_time_s", 0.0)))
        else:
            continue
        what = f"{folder}/summary.json" + (" (training time)" if train else "")
        return per_unit * factor, what + (f" x {factor:.2g}{ratio}" if factor != 1.0 else "")
    return None
