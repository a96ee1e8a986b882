"""Two configurations of the same sweeps, seed by seed: which one wins, under each selection.

Given two run folders (e.g. the default loss form and the released one, each run over the same
seeds), this pairs their sweeps that share a tag (unsupervised: ``DATASET-METHOD``; semi:
``DATASET-ROW``) and, for the ``val`` and ``test_max`` selections, prints each side's mean ± std,
the paired difference B - A (mean ± sample std over the paired values: seeds, or seeds x
folds), how often B is ahead, and a two-sided paired t-test's p-value; with two sweeps or
more, a last row pools every paired value of every sweep, and two checks follow the table that a
few large differences cannot carry on their own: the pooled median with a Wilcoxon signed-rank
test, and a sign test over the sweeps (how many sweeps' median difference favours B). The ``val``
selection decides; the ``test_max`` columns are there to compare with published figures, never
to choose.

    python scripts/studies/compare_runs.py runs/tables/unsupervised runs/lossforms/unsupervised \\
        --labels paper,released --plot docs/results/loss_forms.png

``--plot FILE`` also draws the paired differences of the ``val`` selection: one row per sweep,
each seed (or seed x fold) a dot, the mean with a bar of ± one sample std, and the pooled
values last (.png and .svg).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

SELECTIONS = ("val", "test_max")


def sweeps(folder: Path) -> dict:
    """The summaries below ``folder``, by (protocol, tag); a semi summary's tag is its folder."""
    from autogcl.protocols.report import collect

    out = {}
    for s in collect([folder]):
        tag = s.get("tag") or f"{s['dataset']}-{s['row']}"
        out[(s["protocol"], tag)] = s
    return out


def paired(a: dict, b: dict, selection: str) -> dict | None:
    """Both sides' values of one selection, paired; None when they cannot be (another seed set,
    or a selection that is undefined on one side)."""
    from scipy.stats import ttest_rel

    if a.get("seeds") != b.get("seeds"):
        return None
    va, vb = (np.asarray(s[selection].get("values", []), dtype=float) for s in (a, b))
    if len(va) != len(vb) or len(va) == 0 or np.isnan(va).any() or np.isnan(vb).any():
        return None
    d = np.round(vb - va, 9)  # 70.85 - 70.00 and 70.00 - 70.85 are exact opposites, ties exact ties
    p = float(ttest_rel(vb, va).pvalue) if len(d) > 1 and d.std() > 0 else float("nan")
    return {"a": va, "b": vb, "d": d, "wins": int((d > 0).sum()), "ties": int((d == 0).sum()), "p": p}


def fmt_p(p: float) -> str:
    """A p-value, or "-" where the test is undefined (one pair, or no spread)."""
    return "-" if np.isnan(p) else f"{p:.3f}"


def ms(d: dict) -> str:
    """A side's figure as its summary states it (and ``autogcl report`` prints it)."""
    return f"{d['mean']:.2f} ± {d['std']:.2f}"


def table(a_runs: dict, b_runs: dict, labels: tuple[str, str]) -> str:
    la, lb = labels
    head = ["sweep", "n"]
    for sel in SELECTIONS:
        head += [f"{sel} {la}", f"{sel} {lb}", f"{sel} {lb} - {la}", f"{lb} ahead", "p"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    pooled: dict = {sel: [] for sel in SELECTIONS}
    for key in sorted(set(a_runs) & set(b_runs)):
        cells = [key[1]]
        rows = [paired(a_runs[key], b_runs[key], sel) for sel in SELECTIONS]
        for sel, r in zip(SELECTIONS, rows):
            if r is not None:
                pooled[sel].append(r)
        n = next((len(r["d"]) for r in rows if r), 0)
        cells.append(str(n) if n else "unpaired")
        for sel, r in zip(SELECTIONS, rows):
            if r is None:
                cells += ["-"] * 5
                continue
            ahead = f"{r['wins']}/{len(r['d'])}" + (f" ({r['ties']} tied)" if r["ties"] else "")
            d = r["d"]
            cells += [ms(a_runs[key][sel]), ms(b_runs[key][sel]),
                      f"{d.mean():+.2f} ± {d.std(ddof=1) if len(d) > 1 else 0:.2f}", ahead, fmt_p(r["p"])]
        lines.append("| " + " | ".join(cells) + " |")
    if len(lines) == 2:
        raise SystemExit("compare_runs.py: no sweep tag is in both folders")
    if any(len(v) > 1 for v in pooled.values()):  # every paired value of every sweep, pooled
        from scipy.stats import ttest_1samp

        cells = ["all sweeps, pooled", str(sum(len(r["d"]) for r in pooled[SELECTIONS[0]]))]
        for sel in SELECTIONS:
            rs = pooled[sel]
            if len(rs) < 2:
                cells += ["-"] * 5
                continue
            d = np.concatenate([r["d"] for r in rs])
            p = float(ttest_1samp(d, 0.0).pvalue) if d.std() > 0 else float("nan")
            cells += ["", "", f"{d.mean():+.2f} ± {d.std(ddof=1):.2f}",
                      f"{int((d > 0).sum())}/{len(d)}", fmt_p(p)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def robust(a_runs: dict, b_runs: dict, labels: tuple[str, str]) -> list[str]:
    """Checks of the pooled differences that do not rest on their mean: per selection, the median
    and a two-sided Wilcoxon signed-rank p (zero differences dropped), and the sweeps whose median
    difference favours B against those favouring A with an exact two-sided sign test. Empty with
    fewer than two paired sweeps."""
    from scipy.stats import binomtest, wilcoxon

    la, lb = labels
    lines = []
    for sel in SELECTIONS:
        ds = [d for _, d in differences(a_runs, b_runs, sel)]
        if len(ds) < 2:
            continue
        d = np.concatenate(ds)
        p_w = float(wilcoxon(d).pvalue) if (d != 0).any() else float("nan")
        up, down = sum(np.median(x) > 0 for x in ds), sum(np.median(x) < 0 for x in ds)
        p_s = float(binomtest(up, up + down).pvalue) if up + down else float("nan")
        lines.append(f"{sel}: pooled median {lb} - {la} {np.median(d):+.2f} over {len(d)} pairs, "
                     f"Wilcoxon signed-rank p {fmt_p(p_w)}; sweeps whose median favours {lb} {up}/{len(ds)}"
                     f" ({la} {down}), sign test p {fmt_p(p_s)}")
    return lines


def differences(a_runs: dict, b_runs: dict, selection: str = "val") -> list[tuple[str, np.ndarray]]:
    """The paired differences B - A of each sweep both folders hold, by tag, for the figure."""
    rows = [(key[1], paired(a_runs[key], b_runs[key], selection)) for key in sorted(set(a_runs) & set(b_runs))]
    return [(tag, r["d"]) for tag, r in rows if r is not None]


def plot(a_runs: dict, b_runs: dict, labels: tuple[str, str], out: Path, selection: str = "val") -> list[Path]:
    """Draw :func:`differences` (with a pooled row when there are two sweeps or more) to ``out``."""
    import matplotlib.pyplot as plt

    from autogcl.viz import save_figure  # selects the Agg backend

    rows = differences(a_runs, b_runs, selection)
    if not rows:
        raise SystemExit("compare_runs.py: no sweep can be paired for the figure")
    if len(rows) > 1:
        rows.append(("pooled", np.concatenate([d for _, d in rows])))
    la, lb = labels
    fig, ax = plt.subplots(figsize=(6.4, 0.55 * len(rows) + 1.3))
    for y, (tag, d) in enumerate(reversed(rows)):
        colour = "C3" if tag == "pooled" else "C0"
        ax.scatter(d, np.full(len(d), y), s=14, alpha=0.55, color=colour, zorder=2)
        sd = d.std(ddof=1) if len(d) > 1 else 0.0
        ax.errorbar(d.mean(), y + 0.25, xerr=sd, fmt="D", ms=5, color=colour, capsize=3, zorder=3)
    ax.axvline(0, color="0.4", lw=1, zorder=1)
    ax.set_yticks(range(len(rows)), [f"{tag} (n={len(d)})" for tag, d in reversed(rows)])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel(f"accuracy {lb} - {la} (points, {selection} selection)")
    ax.set_title(f"{lb} vs {la}: paired differences (dots), mean ± sample std (diamonds)", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return save_figure(fig, out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path, help="the first configuration's run folder")
    ap.add_argument("b", type=Path, help="the second configuration's run folder")
    ap.add_argument("--labels", default="A,B", help="names of the two sides, comma-separated (default A,B)")
    ap.add_argument("--plot", type=Path, metavar="FILE", help="also draw the val selection's paired differences "
                    "(FILE.png and FILE.svg)")
    args = ap.parse_args(argv)
    labels = tuple(args.labels.split(","))
    if len(labels) != 2:
        ap.error("--labels takes two names, comma-separated")
    from autogcl.errors import AutoGCLError

    try:
        a_runs, b_runs = sweeps(args.a), sweeps(args.b)
        print(table(a_runs, b_runs, labels))
        checks = robust(a_runs, b_runs, labels)
        if checks:
            print("\n" + "\n".join(checks))
        if args.plot:
            for path in plot(a_runs, b_runs, labels, args.plot):
                print(f"wrote {path}")
    except AutoGCLError as exc:
        print(f"compare_runs.py: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
