"""The engine's benchmark files (``docs/results/perf/*.json``, written by ``benchmarks/engine.py``)
as Markdown, and the engine's goals (:data:`GOALS`), "reached" or "missing" only from them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from autogcl.errors import DataError
from autogcl.protocols.manifest import DATA, RESULTS


PERF = f"{RESULTS}/perf"


def perf_files(root: Path) -> list[tuple[Path, dict]]:
    """Every benchmark file of ``docs/results/perf/``, checked for the fields the tables read."""
    out = []
    for f in sorted((Path(root) / PERF).glob("*.json")):
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DataError(f"{f}: not JSON ({exc})") from exc
        missing = [k for k in ("benchmark", "command", "machine", "device", "threads", "date", "rows") if k not in doc]
        if missing or not isinstance(doc.get("rows"), list):
            raise DataError(f"{f}: not a benchmark file of benchmarks/engine.py (missing: {', '.join(missing) or 'rows'})")
        out.append((f, doc))
    return out


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 100 else f"{v:,.0f}"
    return str(v)


def commit_of(doc: dict) -> str:
    """The code commit a benchmark file names (``commit``), or "commit not recorded"."""
    return f"code commit `{doc['commit']}`" if doc.get("commit") else "commit not recorded"


def perf_block(root: Path) -> str:
    """One section per benchmark file: its command, machine, device, threads, torch, date, then
    its rows (every field they have)."""
    files = perf_files(root)
    if not files:
        return f"not run: no benchmark file in `{PERF}/` (`python benchmarks/engine.py --data-root {DATA}`)"
    parts = []
    for f, doc in files:
        rel = f.relative_to(root).as_posix()
        head = [f"#### {doc['benchmark']} (`{rel}`)", "",
                f"`{doc['command']}`; machine: {doc['machine']}; device: {doc['device']}; threads: {doc['threads']}; "
                f"torch {doc.get('torch', '?')}; {doc['date']}; {commit_of(doc)}."
                + (f" {doc['note']}." if doc.get("note") else "")]
        keys = list(dict.fromkeys(k for r in doc["rows"] for k in r))
        rows = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        rows += ["| " + " | ".join(_fmt(r.get(k, "")) for k in keys) + " |" for r in doc["rows"]]
        parts.append("\n".join(head + [""] + rows))
    return "\n\n".join(parts)


@dataclass(frozen=True)
class Goal:
    """An engine goal (issue 34): the ``field`` of the rows of benchmark ``benchmark`` (on a
    device whose name starts with ``device``) that match ``where``, against ``threshold``
    (``direction`` ``<=`` or ``>=``). ``threshold`` is a number, or a row selector of the same
    file whose ``field`` is the threshold (e.g. the baseline's rows). ``agg``: ``all`` (every
    matching row must pass; the worst is shown) or ``best`` (the best row). Of several files
    that measure it, the newest (by its ``date``) decides: an older, better figure never stands
    in for a newer one."""

    name: str
    benchmark: str
    device: str
    where: dict
    field: str
    threshold: float | dict
    direction: str = "<="
    agg: str = "all"
    threads: int | None = None  # only files measured at this many torch threads

    def measure(self, root: Path) -> tuple[str, str, str]:
        """(value, threshold, status) with status ``reached``, ``missing`` or ``not measured``."""
        for f, doc in sorted(perf_files(root), key=lambda fd: str(fd[1]["date"]), reverse=True):
            if doc["benchmark"] != self.benchmark or not str(doc["device"]).startswith(self.device):
                continue
            if self.threads is not None and doc.get("threads") != self.threads:
                continue
            rows = [r for r in doc["rows"] if all(r.get(k) == v for k, v in self.where.items()) and self.field in r]
            if not rows:
                continue
            limit = self.threshold
            if isinstance(limit, dict):
                ref = [r[self.field] for r in doc["rows"] if all(r.get(k) == v for k, v in limit.items())
                       and self.field in r]
                if not ref:
                    continue
                limit = ref[0]
            values = [r[self.field] for r in rows]
            lower_better = self.direction == "<="
            pick = (max if lower_better else min) if self.agg == "all" else (min if lower_better else max)
            v = pick(values)
            ok = v <= limit if lower_better else v >= limit
            src = f.relative_to(root).as_posix()
            return f"{_fmt(float(v))} (`{src}`)", f"{self.direction} {_fmt(float(limit))}", "reached" if ok else "missing"
        limit = self.threshold
        if isinstance(limit, dict):
            limit = "the row " + ", ".join(f"{k}={v}" for k, v in limit.items())
        else:
            limit = _fmt(float(limit))
        return "-", f"{self.direction} {limit}", "not measured"


THIS = {"code": "this"}
GOALS = (
    Goal("pre-training throughput on an H100, median molecules/s over 200-step windows", "pretrain_throughput",
         "cuda", {**THIS, "width": 300, "steps_per_window": 200}, "molecules_per_s", 20000.0, ">=", agg="best"),
    Goal("host synchronizations of a pre-training step on a GPU with atoms removed in place (--static-views; "
         "CUDA's sync debug mode), per step",
         "pretrain_waits", "cuda", {**THIS, "width": 300, "static_views": True}, "cuda_syncs_per_step", 0.0),
    Goal("DD AutoGCL epoch on a GPU, s", "tu_epochs", "cuda", {**THIS, "dataset": "DD", "method": "autogcl"},
         "s_per_epoch", 0.2),
    Goal("whole unsupervised table on a GPU, s", "unsupervised_table", "cuda", {}, "wall_s", 1800.0),
    Goal("whole transfer table on a GPU, s", "transfer_table", "cuda", {}, "wall_s", 3600.0),
    Goal("CPU pre-training step at width 8 against b434260 (1 thread, process CPU time), median of the paired "
         "window ratios", "pretrain_throughput", "cpu", {**THIS, "width": 8, "precision": "fp32", "compile": False},
         "cpu_step_ms_vs_baseline", 0.6, threads=1),
    Goal("CPU full-size throughput against b434260 (2 threads), median molecules/s", "pretrain_throughput", "cpu",
         {**THIS, "width": 300, "precision": "fp32", "compile": False}, "molecules_per_s",
         {"code": "baseline", "width": 300}, ">=", threads=2),
)


def goals_block(root: Path) -> str:
    lines = ["| goal | measured | goal | status | reads |", "|---|---|---|---|---|"]
    for g in GOALS:
        value, limit, status = g.measure(root)
        where = ", ".join(f"{k}={v}" for k, v in g.where.items()) or "every row"
        reads = f"`{g.field}` of benchmark `{g.benchmark}` on {g.device}, rows {where}" + (
            " (the best)" if g.agg == "best" else " (the worst)")
        lines.append(f"| {g.name} | {value} | {limit} | {status} | {reads} |")
    commits = sorted({commit_of(doc) for _, doc in perf_files(root)})
    return "\n".join(lines) + ("\n\nThe benchmark files' code: " + "; ".join(commits) + "." if commits else "")


