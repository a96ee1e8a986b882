"""Hyper-parameter grids: the cross product of option values as configurations, and the
table that picks one of them by validation score only.

``--grid lam=0.5,1 tau=0.2,0.5`` on a protocol gives four configurations; each runs every
seed (or fold) as units of one pool (:func:`autogcl.units.run_sweeps`), into
``OUT/grid/<point>/...``. The chosen configuration is the one with the best mean
*validation* score of the ``val`` selection (the SVM's inner-CV accuracy, the validation
fold's accuracy, the validation ROC-AUC): the test figures of both selections are shown beside
it and never decide.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import fields, replace
from pathlib import Path

import numpy as np

from ..config import _default
from ..errors import ConfigError

__all__ = ["FIXED", "GridPoint", "expand", "grid_report", "parse_grid", "validation_score"]

#: options a grid may not vary: what the data is, which row, which figure is reported
FIXED = ("dataset", "feat", "row", "select", "csv", "checkpoint")

#: a grid point: (folder name, option name -> value)
GridPoint = tuple


def _parse_value(f, text: str):
    default = _default(f)
    kind = f.metadata.get("type")
    if isinstance(default, bool) or kind is bool:
        low = text.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(text)
    if kind is None:
        kind = type(default) if default is not None else str
    if text.strip().lower() == "none" and default is None:
        return None
    return kind(text.strip())


def parse_grid(cls, specs: list[str] | None) -> list[dict]:
    """The points of ``KEY=V1,V2`` specs over the options of config class ``cls`` (cross
    product, in the order given); ``[{}]`` when there is no grid."""
    if not specs:
        return [{}]
    by_name = {}
    for f in fields(cls):
        by_name[f.name] = f
        by_name[f.name.replace("_", "-")] = f
        if f.metadata.get("flag"):
            by_name[f.metadata["flag"].lstrip("-")] = f
    axes, seen = [], set()
    for spec in specs:
        key, sep, values = spec.partition("=")
        key = key.strip().lstrip("-")
        if not sep or not key or not values.strip():
            raise ConfigError(f"--grid {spec!r}: expected KEY=V1,V2,... (e.g. --grid lr=0.001,0.01)")
        f = by_name.get(key)
        if f is None:
            names = sorted(g.name for g in fields(cls) if g.name not in FIXED)
            raise ConfigError(f"--grid {spec!r}: {key!r} is not an option here; choose from {', '.join(names)}")
        if f.name in FIXED:
            raise ConfigError(f"--grid {spec!r}: {f.name} cannot vary within a grid (run one command per value)")
        if f.name in seen:
            raise ConfigError(f"--grid names {f.name} twice")
        if str(f.type).startswith(("list", "tuple")):
            raise ConfigError(f"--grid {spec!r}: list options cannot vary within a grid")
        seen.add(f.name)
        try:
            vals = [_parse_value(f, v) for v in values.split(",") if v.strip()]
        except ValueError:
            raise ConfigError(f"--grid {spec!r}: a value of {f.name} cannot be read") from None
        if len(set(map(repr, vals))) != len(vals):
            raise ConfigError(f"--grid {spec!r}: a value is given twice")
        axes.append([(f.name, v) for v in vals])
    return [dict(p) for p in itertools.product(*axes)]


def point_name(point: dict) -> str:
    """The folder name of a grid point (``lam=0.5,tau=0.2``)."""
    return ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in point.items()) or "base"


def expand(cfg, specs: list[str] | None) -> list[GridPoint]:
    """``[(name, config)]``: ``cfg`` at each grid point (each validated like a config given
    on the command line); ``[("", cfg)]`` without a grid."""
    points = parse_grid(type(cfg), specs)
    if points == [{}]:
        return [("", cfg)]
    return [(point_name(p), replace(cfg, **p)) for p in points]


def grid_out(out: Path, name: str) -> Path:
    """Where a grid point's runs go (``OUT`` itself without a grid)."""
    return Path(out) / "grid" / name if name else Path(out)


def validation_score(result: dict) -> float:
    """The criterion the ``val`` selection maximised, at the epoch it chose (NaN where there is
    none, e.g. under the released split, which has no validation fold)."""
    return float(result["selections"].get("val", {}).get("score", math.nan))


def grid_report(title: str, entries: list[tuple[str, dict, list[dict]]]) -> tuple[str, dict]:
    """Markdown table and record of one grid: ``entries`` are ``(point name, summary,
    unit results)``. The configuration with the best mean validation score is chosen; its
    ``val`` and ``test_max`` test figures are reported beside the others'."""
    rows = []
    for name, summary, results in entries:
        scores = np.array([validation_score(r) for r in results], dtype=float)
        scores = scores[~np.isnan(scores)]
        rows.append({"point": name, "validation_score": float(scores.mean()) * 100 if scores.size else math.nan,
                     "val": summary["val"], "test_max": summary["test_max"], "units": len(results)})
    valid = [r for r in rows if not math.isnan(r["validation_score"])]
    if not valid:
        raise ConfigError(f"{title}: no unit recorded a validation score, so no configuration can be chosen")
    chosen = max(valid, key=lambda r: r["validation_score"])  # first best on ties
    lines = [f"### {title}", "",
             "Chosen by the mean validation score of the `val` selection only; `test_max` is shown, never used.", "",
             "| configuration | validation score | test (val selection) | test_max | units | |",
             "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        mark = "**chosen**" if r is chosen else ""
        lines.append(f"| {r['point']} | {r['validation_score']:.2f} | {r['val']['mean']:.2f} ± {r['val']['std']:.2f} | "
                     f"{r['test_max']['mean']:.2f} ± {r['test_max']['std']:.2f} | {r['units']} | {mark} |")
    record = {"title": title, "criterion": "mean validation score of the val selection", "chosen": chosen["point"],
              "rows": rows}
    return "\n".join(lines), record


def write_reports(out: Path, entries) -> str:
    """``entries``: ``(title, point name, sweep, summary)``, one per grid point of each table
    (a dataset, or a dataset and row). Writes ``OUT/grid/<title>.md`` and ``.json`` for each
    table and returns the tables."""
    from ..atomic import atomic_write_json, atomic_write_text

    groups: dict = {}
    for title, name, sweep, summary in entries:
        groups.setdefault(title, []).append((name, summary, [u.result() for u in sweep.units]))
    texts = []
    for title, rows in groups.items():
        text, record = grid_report(title, rows)
        atomic_write_text(Path(out) / "grid" / f"{title}.md", text + "\n")
        atomic_write_json(Path(out) / "grid" / f"{title}.json", record)
        texts.append(text)
    return "\n\n".join(texts)
