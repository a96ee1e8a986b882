"""GraphCL augmentation ablations (the AutoGCL paper's appendix tables): a semi-supervised GraphCL row run with each
augmentation alone, and with one augmentation at several ratios; tables in the shape of
the paper's appendix tables (both selections)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .. import runs
from ..augment import RandomAugmentor
from ..config import Config, option
from ..errors import ConfigError
from . import published
from .semi import SemiConfig
from .semi import plan as semi_plan

SINGLE_AUGS = ("node_drop", "subgraph", "edge_pert", "attr_mask")


@dataclass
class AblationConfig(Config):
    """The GraphCL augmentation ablation: which row, augmentations and ratios, on which datasets."""

    dataset: list = option(None, "one or more comma-separated TU datasets", factory=lambda: ["NCI1"], type=str)
    row: str = option("graphcl_cl", "the semi-supervised GraphCL row", choices=("graphcl_cl", "graphcl_aug"))
    augs: list = option(None, "augmentations run alone at ratio 0.2", factory=lambda: list(SINGLE_AUGS), type=str)
    ratios: list = option(None, "ratios of the ratio sweep", factory=lambda: list(published.ABLATION_RATIOS),
                          type=float)
    ratio_aug: str = option("node_drop", "augmentation of the ratio sweep", choices=RandomAugmentor.names,
                            what="augmentation")
    epochs: int = option(30, "training epochs")
    pretrain_epochs: int = option(30, "pre-training epochs (graphcl_cl)")

    def __post_init__(self):
        self.check_choices()
        if isinstance(self.dataset, str):
            self.dataset = [d.strip() for d in self.dataset.split(",") if d.strip()]
        for a in self.augs:
            if a not in RandomAugmentor.names:
                raise ConfigError(f"unknown augmentation {a!r} in --augs; choose from "
                                  f"{', '.join(RandomAugmentor.names)}")
        bad = [r for r in self.ratios if not 0.0 <= r < 1.0]
        if bad:
            raise ConfigError(f"--ratios {bad} must lie in [0, 1)")
        if not self.dataset:
            raise ConfigError("--dataset names no dataset")
        if not self.augs and not self.ratios:
            raise ConfigError("--augs and --ratios are both empty: nothing to run")

    def base(self, dataset: str) -> SemiConfig:
        return SemiConfig(dataset=dataset, row=self.row, epochs=self.epochs, pretrain_epochs=self.pretrain_epochs,
                          aug=self.ratio_aug)


def _cell(s: dict) -> str:
    n = f" ({s['n_folds']} folds)" if s["n_folds"] != 10 * s["n_seeds"] else ""
    return f"{s['val']['mean']:.2f} / {s['test_max']['mean']:.2f}{n}"


def run_ablation(base: SemiConfig, datasets: dict, seeds: list[int], out: Path, augs=SINGLE_AUGS,
                 ratios=published.ABLATION_RATIOS, ratio_aug: str = "node_drop", resume: bool = False,
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
    summaries = dict(zip(sweeps, runs.run_sweeps(list(sweeps.values()), resume, "ablation folds", "fold",
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
