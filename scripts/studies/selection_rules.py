"""Other ways to pick the reported epoch from the validation curve, on finished runs.

The protocols report the test score at the epoch of best validation score (``val``, first best
on ties) and, for the published protocol, the best test score (``test_max``). A validation
part is small (a semi-supervised fold of PROTEINS: 111 graphs; ClinTox's scaffold part: 148
molecules), so its curve is noisy and its argmax partly luck. This recomputes, from each
unit's ``metrics.csv``, the test score under rules that read the validation curve only:

* ``val``: the protocols' own rule (their ``select``; the column reproduces their tables);
* ``val_late``: the same argmax, but the last best epoch on ties;
* ``val_smooth3`` / ``val_smooth5``: argmax of the validation curve's centred moving average
  over 3 / 5 epochs (shorter at both ends), first best;
* ``last``: the last epoch (no selection);
* ``test_max``: the best test score (for comparison with published figures only).

The rules were fixed before any was measured; none is tuned on test scores. Semi-supervised
folds (``val_acc``) and fine-tuning seeds (``val_auc``) are read; a sweep is the folder of a
row (``TAG/seedS/foldF``) or of a dataset (``TAG/DATASET/seedS``). Figures are percent, mean ±
std as the protocol reports them (semi: sample std over seeds x folds; transfer: population
std over seeds).

    python scripts/studies/selection_rules.py runs/tables/semi runs/gpu/transfer
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

RULES = ("val", "val_late", "val_smooth3", "val_smooth5", "last", "test_max")


def curves(metrics: Path) -> tuple[str, np.ndarray, np.ndarray] | None:
    """(kind, validation curve, test curve) of a unit's training epochs; None when it has no
    validation score (e.g. the released split) or no epoch."""
    from autogcl.errors import DataError

    with open(metrics, newline="") as f:
        reader = csv.DictReader(f)
        rows = [(reader.line_num, r) for r in reader if r.get("phase", "train") == "train"]

    def number(line, r, k):
        try:
            return float(r[k])
        except (TypeError, ValueError):
            raise DataError(f"{metrics}:{line}: {k} {r[k]!r} is not a number") from None

    for kind, v, t in (("semi", "val_acc", "test_acc"), ("transfer", "val_auc", "test_auc")):
        if rows and v in rows[0][1] and all(r.get(v) not in (None, "") for _, r in rows):
            return kind, *(np.array([number(line, r, k) for line, r in rows]) for k in (v, t))
    return None


def smooth(v: np.ndarray, k: int) -> np.ndarray:
    """Centred moving average over ``k`` epochs, averaging what exists at both ends; NaN
    epochs (no scorable task) are left out of each window, and stay NaN when all are."""
    ok = ~np.isnan(v)
    w, start = np.ones(k), (k - 1) // 2  # "full" then centred: also for curves shorter than k

    def window_sum(x):
        return np.convolve(x, w, mode="full")[start:start + len(v)]

    num, den = window_sum(np.where(ok, v, 0.0)), window_sum(ok.astype(float))
    return np.where(den > 0, num / np.maximum(den, 1), np.nan)


def pick(v: np.ndarray, t: np.ndarray, kind: str = "transfer") -> dict:
    """The test score under each rule (NaN validation scores never win); ``val`` and
    ``test_max`` are the protocol's own :func:`select` of ``kind`` (semi or transfer)."""
    from autogcl.protocols import semi, transfer

    select, (vk, tk), key = ((semi.select, ("val_acc", "test_acc"), "acc") if kind == "semi"
                             else (transfer.select, ("val_auc", "test_auc"), "auc"))
    chosen = select([{"epoch": e, vk: a, tk: b} for e, (a, b) in enumerate(zip(v.tolist(), t.tolist()), 1)])

    def first_best(curve):
        return int(np.nanargmax(curve))

    late = len(v) - 1 - first_best(v[::-1])
    return {"val": chosen["val"][key], "val_late": t[late], "val_smooth3": t[first_best(smooth(v, 3))],
            "val_smooth5": t[first_best(smooth(v, 5))], "last": t[-1], "test_max": chosen["test_max"][key]}


def sweeps(folders: list[Path]) -> dict:
    """{(kind, sweep folder): [each unit's pick()]} for every finished unit below the folders."""
    out: dict = {}
    for folder in folders:
        for m in sorted(folder.rglob("metrics.csv")):
            if not (m.parent / "result.json").is_file():
                continue  # unfinished
            c = curves(m)
            if c is None or np.isnan(c[1]).all():
                continue
            kind, v, t = c
            sweep = m.parent.parent.parent if kind == "semi" else m.parent.parent
            out.setdefault((kind, sweep), []).append(pick(v, t, kind))
    return out


def table(found: dict, root: Path | None = None) -> str:
    head = "| sweep | units | " + " | ".join(RULES) + " |"
    lines = [head, "|---|---|" + "---|" * len(RULES)]
    gains = {r: [] for r in RULES}
    for (kind, sweep), units in sorted(found.items(), key=lambda kv: str(kv[0][1])):
        ddof = 1 if kind == "semi" else 0
        cells = []
        for r in RULES:
            x = 100 * np.array([u[r] for u in units])
            cells.append(f"{x.mean():.2f} ± {x.std(ddof=ddof) if len(x) > ddof else 0:.2f}")
            gains[r].append(x.mean() - 100 * np.mean([u["val"] for u in units]))
        name = sweep.relative_to(root) if root and sweep.is_relative_to(root) else sweep
        lines.append(f"| {name} | {len(units)} | " + " | ".join(cells) + " |")
    lines.append("| mean change from val, over the sweeps | | " +
                 " | ".join(f"{np.mean(gains[r]):+.2f}" for r in RULES) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", type=Path, nargs="+", help="run folders (semi-supervised rows, fine-tuning sweeps)")
    args = ap.parse_args(argv)
    missing = [str(f) for f in args.folders if not f.is_dir()]
    if missing:
        print(f"selection_rules.py: error: no such run folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    from autogcl.errors import AutoGCLError

    try:
        found = sweeps(args.folders)
    except AutoGCLError as exc:
        print(f"selection_rules.py: error: {exc}", file=sys.stderr)
        return 2
    if not found:
        print("selection_rules.py: error: no finished unit with a validation curve below "
              f"{', '.join(map(str, args.folders))}", file=sys.stderr)
        return 2
    print(table(found, Path.cwd()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
