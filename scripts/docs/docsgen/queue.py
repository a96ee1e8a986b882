"""The queue page (``docs/results/gpu_queue.md``): every cell of the manifest that is not done,
the GPU's first, with the estimated time of one of its units on a GPU (what a budgeted
``autogcl reproduce --budget`` window reads) and on the 2-core CPU machine (why a cell is
queued for a GPU); the cells and other committed run folders that name no code commit."""

from __future__ import annotations

import json
from pathlib import Path

from autogcl.protocols.estimates import GPU_WINDOW_S, unit_seconds
from autogcl.protocols.manifest import CELLS, RESULTS, finished_units, recorded, stale, units_folder


def queue_block(root: Path) -> str:
    """Every cell that is not done: the GPU queue first, then what fits the CPU machine."""
    lines = ["| where | protocol | cell | state | committed run folder | one unit on a GPU (estimate) "
             "| one unit on the 2-core CPU (estimate) | command |",
             "|---|---|---|---|---|---|---|---|"]
    seen = set()
    for compute in ("gpu", "cpu"):
        for c in CELLS:
            st = c.status(root)
            if c.compute != compute or st == "done":
                continue
            hit = c.found(root)
            state = _unrun(c, root) if hit is None else f"partial: {c.count(hit[1])} of {c.seeds} (`{hit[0]}`)"
            on_gpu = unit_seconds(c, root, "cuda")
            if on_gpu is not None and on_gpu[0] > GPU_WINDOW_S:
                state += f"; one unit is longer than a GPU window ({GPU_WINDOW_S} s), so `gpu_window.sh` never starts it"
            guess, cpu = _estimate(on_gpu), _estimate(unit_seconds(c, root, "cpu"))
            cmd = "same command as above" if c.command in seen else f"`{c.command}`"
            seen.add(c.command)
            lines.append(f"| {compute} | {c.protocol} | {' / '.join(c.label)} | {state} | `{c.runs[0]}` | {guess} | {cpu} "
                         f"| {cmd} |")
    return "\n".join(lines)


def stale_block(root: Path) -> str:
    """The cells run by code that no file names (they predate ``provenance.json``): the rerun
    queue of ``autogcl reproduce --stale``, with the estimated time of one unit on each device."""
    cells = stale(CELLS, root)
    if not cells:
        return "Every cell that has run names the code commit that made it."
    lines = ["| where | protocol | cell | committed run folder | units | one unit on a GPU (estimate) "
             "| one unit on the 2-core CPU (estimate) |", "|---|---|---|---|---|---|---|"]
    for compute in ("cpu", "gpu"):
        for c in cells:
            if c.compute != compute:
                continue
            folder, summary = c.found(root)
            lines.append(f"| {compute} | {c.protocol} | {' / '.join(c.label)} | `{folder}` | {c.count(summary)} "
                         f"| {_estimate(unit_seconds(c, root, 'cuda'))} | {_estimate(unit_seconds(c, root, 'cpu'))} |")
    n = {k: sum(c.compute == k for c in cells) for k in ("cpu", "gpu")}
    cells_ = f"{len(cells)} cell{'s' if len(cells) != 1 else ''}"
    return "\n".join(lines) + (f"\n\n{cells_} ({n['cpu']} that fit the CPU machine, {n['gpu']} queued for "
                               "a GPU); each keeps its figure, and its table says \"commit not recorded\", until "
                               "it is rerun.")


def unrecorded_block(root: Path, tables) -> str:
    """Every other committed summary folder that names no code commit (beside the stale cells of
    :func:`stale_block`): partial cells of the manifest (``--missing`` adds their missing units
    and keeps these), a cell's other folders (another device's run) and the sweeps of extra rows
    and studies; with the pages whose tables (``tables``: the docs generator's) read it and the
    training time of one unit as its summary recorded it."""
    root = Path(root)
    found = {id(c): c.found(root) for c in CELLS}  # each cell's summary read once
    listed = {found[id(c)][0].as_posix() for c in stale(CELLS, root)}
    filling = {found[id(c)][0].as_posix(): c for c in CELLS if found[id(c)] is not None}
    of_cell = {r: c for c in CELLS for r in c.runs}
    rows = []
    for summary in sorted((root / RESULTS / "summaries").rglob("summary.json")):
        rel = summary.parent.relative_to(root).as_posix()
        if rel in listed or recorded(summary.parent):
            continue
        data = json.loads(summary.read_text(encoding="utf-8"))
        pages = sorted({t.doc for t in tables if not t.name.startswith("queue")
                        and any(rel == r or rel.startswith(r.rstrip("/") + "/") for r in t.runs)})
        if rel in filling:
            what = f"partial cell {' / '.join(filling[rel].label)} ({filling[rel].protocol})"
        elif rel in of_cell:
            what = f"another run of cell {' / '.join(of_cell[rel].label)} ({of_cell[rel].protocol})"
        else:
            what = "extra row or study"
        unit = data.get("time_per_fold_s", data.get("train_time_s"))
        rows.append(f"| `{rel}` | {what} | {data.get('n_folds', data.get('n_seeds', '?'))} "
                    f"| {'-' if unit is None else f'{unit:,.0f} s'} | {', '.join(pages) or '-'} |")
    if not rows:
        return "Every other committed run folder names the code commit that made it."
    return "\n".join(["| committed run folder | what | units | training time of one unit (as recorded) "
                      "| tables of `scripts/docs/docs.py` reading it |", "|---|---|---|---|---|", *rows]) + (
        f"\n\n{len(rows)} folders; a table reading one says \"commit not recorded\" beside its figures until its "
        "command runs again at the code of a commit.")


def _unrun(cell, root: Path) -> str:
    """The state of a cell without a summary: "not run", with the number of its finished units
    already committed (a cell run in the background over several sessions)."""
    n = len(finished_units(Path(root) / units_folder(cell.runs[0])))
    unit = "folds" if cell.protocol == "semi" else "seeds"
    return f"not run ({n} of {cell.seeds} {unit} committed as units, no summary yet)" if n else "not run"


def _estimate(est: tuple[float, str] | None) -> str:
    """A cell of the estimate columns: seconds (hours from 2 h on) and the file they come from."""
    if est is None:
        return "no committed estimate"
    t = f"{est[0]:,.0f} s" if est[0] < 7200 else f"{est[0] / 3600:,.1f} h"
    return f"{t} (`{est[1]}`)"
