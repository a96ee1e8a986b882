"""Both selections of finished semi-supervised folds, over their first K epochs.

A fold trained for 100 epochs holds, in its first 30, a 30-epoch run of the same
configuration (no learning-rate schedule; the same seed and thread count), so one long run
answers "what would 30 epochs have given" too. For each run folder (a row's ``OUT/TAG``) and
each K, this prints the ``val`` and ``test_max`` selections (mean ± std over folds, as
``autogcl report``), ``test_max`` taken at the one epoch whose mean test accuracy over the
folds is best (Chen et al.'s form, the same epoch for every fold), the mean test accuracy over
the window's epochs, the last epoch's test accuracy, and the labeled class counts of the
folds' splits.

    python scripts/studies/semi_windows.py runs/nci1gap/e100_lr0.01/NCI1-labeled ... --epochs 30,100
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np


def fold_rows(fold: Path) -> list[dict]:
    """The training epochs of a fold's ``metrics.csv``: epoch and accuracies as numbers."""
    with open(fold / "metrics.csv", newline="") as f:
        return [{"epoch": int(r["epoch"]), **{k: float(v) for k, v in r.items() if k.endswith("_acc") and v}}
                for r in csv.DictReader(f) if r.get("phase", "train") == "train"]


def window(rows: list[dict], k: int) -> dict | None:
    """Both selections (the protocol's own :func:`autogcl.protocols.semi.select`) and the test
    curve over the first ``k`` epochs, in percent; None when the fold ran fewer."""
    from autogcl.protocols.semi import select

    rows = [r for r in rows if r["epoch"] <= k]
    if len(rows) < k:
        return None
    test = np.array([r["test_acc"] for r in rows]) * 100
    sel = {name: 100 * s["acc"] for name, s in select(rows).items()}
    return {**sel, "mean_over_epochs": test.mean(), "last": test[-1], "curve": test}


def ms(values) -> str:
    v = np.asarray(values, dtype=float)
    if not v.size:
        return "-"
    return f"{v.mean():.2f} ± {v.std(ddof=1) if v.size > 1 else 0.0:.2f}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path, help="row folders (OUT/TAG) of finished folds")
    p.add_argument("--epochs", default="30", help="comma-separated window lengths K")
    p.add_argument("--labels", help="comma-separated names of the runs (default: their paths)")
    args = p.parse_args(argv)
    ks = [int(k) for k in args.epochs.split(",")]
    labels = args.labels.split(",") if args.labels else [str(r) for r in args.runs]
    if len(labels) != len(args.runs):
        p.error("--labels needs one name per run folder")
    print("| run | epochs | folds | val | test_max (per fold) | test_max (one epoch for all folds) | "
          "mean test over epochs | last epoch | labeled per class (min-max over folds) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, run in zip(labels, args.runs):
        folds = sorted(run.glob("seed*/fold*/metrics.csv"))
        if not folds:
            print(f"{run}: no finished fold (seed*/fold*/metrics.csv)", file=sys.stderr)
            return 2
        y = None
        counts = []
        for split_file in sorted(run.glob("seed*/splits.json")):
            splits = json.loads(split_file.read_text())["folds"]
            if y is None:
                y = labels_of(run)
            counts += [np.bincount(y[np.asarray(s["labeled"])]).tolist() for s in splits]
        classes = "-" if not counts else " / ".join(
            f"{min(c[i] for c in counts)}-{max(c[i] for c in counts)}" for i in range(len(counts[0])))
        per_fold = [fold_rows(f.parent) for f in folds]  # each metrics.csv read once
        for k in ks:
            ws = [w for w in (window(rows, k) for rows in per_fold) if w is not None]
            if not ws:
                continue
            cell = {key: ms([w[key] for w in ws if key in w]) for key in ("val", "test_max", "mean_over_epochs", "last")}
            curves = np.stack([w["curve"] for w in ws])  # folds x epochs
            common = ms(curves[:, int(np.argmax(curves.mean(0)))])
            print(f"| {label} | {k} | {len(ws)} | {cell['val']} | {cell['test_max']} | {common} | "
                  f"{cell['mean_over_epochs']} | {cell['last']} | {classes} |")
    return 0


def labels_of(run: Path):
    """The dataset's labels (the run's ``config.json`` names it; data root: $AUTOGCL_DATA, else
    the project cache)."""
    from autogcl.data import load_tu

    cfg = json.loads(next(run.glob("seed*/fold*/config.json")).read_text())
    return load_tu(cfg["dataset"], feat=cfg["feat"])._data.y.numpy()


if __name__ == "__main__":
    sys.exit(main())
