"""GraphCL augmentation ablations (the AutoGCL paper's appendix tables): a semi-supervised GraphCL row run with each
augmentation alone, and with one augmentation at several ratios; tables in the shape of
the paper's appendix tables (both selections)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..choices import AUG_NODE_DROP
from .. import units
from . import published
from .configs import SINGLE_AUGS, AblationConfig  # noqa: F401 (re-exported)
from .semi import SemiConfig
from .semi import plan as semi_plan


def _cell(s: dict) -> str:
    n = f" ({s['n_folds']} folds)" if s["n_folds"] != 10 * s["n_seeds"] else ""
    return f"{s['val']['mean']:.2f} / {s['test_max']['mean']:.2f}{n}"


def run_ablation(base: SemiConfig, datasets: dict, seeds: list[int], out: Path, augs=SINGLE_AUGS,
                 ratios=published.ABLATION_RATIOS, ratio_aug: str = AUG_NODE_DROP, resume: bool = False,
                 fold_limit: int | None = None, show_progress=None, device="cpu",
                 restart_damaged: bool = False, executor=None) -> dict:
    """``datasets``: name -> loaded dataset. Every fold of every variant runs in one pool of
    units on ``executor``. Returns the summaries of both sweeps."""
    sweeps = {}  # (folder, dataset) -> Sweep; a variant of both tables runs once
    by_aug, by_ratio = {}, {}
    for name, ds in datasets.items():
        variants = [("aug", aug, replace(base, dataset=name, aug=aug, aug_ratio=0.2), f"aug-{aug}-r0.2")
                    for aug in augs]
        variants += [("ratio", r, replace(base, dataset=name, aug=ratio_aug, aug_ratio=float(r)),
                      f"aug-{ratio_aug}-r{float(r):g}") for r in ratios]
        for table, key, cfg, folder in variants:
            if (folder, name) not in sweeps:
                sweeps[(folder, name)] = semi_plan(cfg, ds, seeds, Path(out) / folder, resume, fold_limit,
                                                   show_progress, device=device)
            (by_aug if table == "aug" else by_ratio)[(name, key)] = (folder, name)
    summaries = dict(zip(sweeps, units.run_sweeps(list(sweeps.values()), resume, "ablation folds", "fold",
                                                 show_progress, restart_damaged, executor)))
    return {"by_aug": {k: summaries[v] for k, v in by_aug.items()},
            "by_ratio": {k: summaries[v] for k, v in by_ratio.items()}, "augs": list(augs), "ratios": list(ratios),
            "ratio_aug": ratio_aug, "datasets": list(datasets), "row": base.row}


def tables(res: dict) -> str:
    """Markdown: augmentation x dataset, and dataset x ratio (cells: val / test_max)."""
    ds = res["datasets"]
    lines = []
    if res["augs"]:
        lines = [f"### {res['row']} with one augmentation (ratio 0.2); accuracy %, val / test_max", "",
                 "| augmentation | " + " | ".join(ds) + " |", "|---|" + "---|" * len(ds)]
        for aug in res["augs"]:
            lines.append(f"| {aug} | " + " | ".join(_cell(res["by_aug"][(d, aug)]) for d in ds) + " |")
        lines.append("")
    ratios = res["ratios"]
    lines += [f"### {res['row']} with {res['ratio_aug']} at several ratios; accuracy %, val / test_max", "",
              "| dataset | " + " | ".join(f"{r:g}" for r in ratios) + " |", "|---|" + "---|" * len(ratios)]
    for d in ds:
        lines.append(f"| {d} | " + " | ".join(_cell(res["by_ratio"][(d, r)]) for r in ratios) + " |")
        pub = published.ABLATION_RATIO.get((d, res["ratio_aug"]))
        if pub and list(ratios) == list(published.ABLATION_RATIOS):
            lines.append(f"| {d} (paper, test_max) | " + " | ".join(f"{v:.2f}" for v in pub) + " |")
    return "\n".join(lines)
