"""GraphCL augmentation ablations (the AutoGCL paper's appendix tables): a semi-supervised GraphCL row run with each
augmentation alone, and with one augmentation at several ratios; tables in the shape of
the paper's appendix tables (both selections)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..choices import AUG_NODE_DROP
from .. import units
from ..atomic import atomic_write_text
from . import published
from .base import Protocol
from .configs import SINGLE_AUGS, AblationConfig  # noqa: F401 (re-exported)
from .semi import SemiConfig, run_fold, select, summarize
from .semi import plan as semi_plan


def _cell(s: dict) -> str:
    n = f" ({s['n_folds']} folds)" if s["n_folds"] != 10 * s["n_seeds"] else ""
    return f"{s['val']['mean']:.2f} / {s['test_max']['mean']:.2f}{n}"


def variants(base: SemiConfig, names: list[str], augs=SINGLE_AUGS, ratios=published.ABLATION_RATIOS,
             ratio_aug: str = AUG_NODE_DROP) -> tuple[dict, dict, dict]:
    """Every variant of both tables on every dataset of ``names``: ``{(folder, dataset): config}``
    (a variant of both tables once, in a fixed order) and the (dataset, augmentation) and
    (dataset, ratio) cells' keys into it."""
    configs, by_aug, by_ratio = {}, {}, {}
    for name in names:
        rows = [("aug", aug, replace(base, dataset=name, aug=aug, aug_ratio=0.2), f"aug-{aug}-r0.2") for aug in augs]
        rows += [("ratio", r, replace(base, dataset=name, aug=ratio_aug, aug_ratio=float(r)),
                  f"aug-{ratio_aug}-r{float(r):g}") for r in ratios]
        for table, key, cfg, folder in rows:
            configs.setdefault((folder, name), cfg)
            (by_aug if table == "aug" else by_ratio)[(name, key)] = (folder, name)
    return configs, by_aug, by_ratio


def results(by_aug: dict, by_ratio: dict, summaries: dict, augs, ratios, ratio_aug: str, names, row: str) -> dict:
    """What :func:`tables` draws: each cell's summary (``summaries``: ``(folder, dataset)`` -> summary)."""
    return {"by_aug": {k: summaries[v] for k, v in by_aug.items()},
            "by_ratio": {k: summaries[v] for k, v in by_ratio.items()}, "augs": list(augs), "ratios": list(ratios),
            "ratio_aug": ratio_aug, "datasets": list(names), "row": row}


def run_ablation(base: SemiConfig, datasets: dict, seeds: list[int], out: Path, augs=SINGLE_AUGS,
                 ratios=published.ABLATION_RATIOS, ratio_aug: str = AUG_NODE_DROP, resume: bool = False,
                 fold_limit: int | None = None, show_progress=None, device="cpu",
                 restart_damaged: bool = False, executor=None) -> dict:
    """``datasets``: name -> loaded dataset. Every fold of every variant runs in one pool of
    units on ``executor``. Returns the summaries of both sweeps."""
    configs, by_aug, by_ratio = variants(base, list(datasets), augs, ratios, ratio_aug)
    sweeps = [semi_plan(cfg, datasets[name], seeds, Path(out) / folder, resume, fold_limit, show_progress,
                        device=device) for (folder, name), cfg in configs.items()]
    summaries = dict(zip(configs, units.run_sweeps(sweeps, resume, "ablation folds", "fold", show_progress,
                                                   restart_damaged, executor)))
    return results(by_aug, by_ratio, summaries, augs, ratios, ratio_aug, list(datasets), base.row)


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


class Ablation(Protocol):
    """The GraphCL augmentation ablation as a :class:`autogcl.protocols.base.Protocol`: one
    config names the datasets, augmentations and ratios; its sweeps are the semi-supervised
    protocol's (one per variant and dataset), its output the two appendix tables."""

    name, config, unit = "ablate", AblationConfig, "fold"

    def load(self, configs, run):
        from ..data import load_tu

        datasets = {}
        for name in configs[0].dataset:
            ds = load_tu(name, run.data_root, download=run.fetch)
            datasets[ds.name] = ds
        return datasets, [replace(configs[0], dataset=list(datasets))]

    def _variants(self, cfg):
        return variants(cfg.base(cfg.dataset[0]), cfg.dataset, cfg.augs, cfg.ratios, cfg.ratio_aug)

    def plan(self, cfg, data, out, run):
        return [semi_plan(c, data[name], run.seed_list, Path(out) / folder, run.resume, run.fold_limit, run.progress,
                          device=run.engine) for (folder, name), c in self._variants(cfg)[0].items()]

    def desc(self, configs, data, run):
        return "ablation folds"

    run_unit = staticmethod(run_fold)
    select = staticmethod(select)
    summarize = staticmethod(summarize)

    def table(self, summaries, configs=None):
        cfg = configs[0]
        keys, by_aug, by_ratio = self._variants(cfg)
        return tables(results(by_aug, by_ratio, dict(zip(keys, summaries)), cfg.augs, cfg.ratios, cfg.ratio_aug,
                              cfg.dataset, cfg.row))

    def report(self, configs, summaries, run):
        atomic_write_text(Path(run.out) / "ablation.md", self.table(summaries, configs) + "\n")
        return ""


PROTOCOL = Ablation()
