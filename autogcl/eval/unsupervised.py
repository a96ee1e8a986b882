"""The unsupervised protocol (SPEC 3.1): contrastive pre-training on the whole dataset,
then an RBF-SVM on the frozen embeddings at a few epochs, over seeds.

Composes: a dataset (``data``), view generators (``augment``), the GIN encoder
(``models``), a strategy (``train``) and the SVM evaluator (``eval.svm``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
from torch_geometric.loader import DataLoader
from tqdm.auto import tqdm

from .. import runs
from ..augment import RandomAugmentor, ViewGenerator
from ..errors import ConfigError
from ..models import ContrastModel, GINEncoder
from ..train import GraphCLStrategy, NaiveStrategy
from .svm import svm_evaluate

log = logging.getLogger(__name__)

METHODS = ("autogcl", "graphcl")
SELECTIONS = ("val", "test_max")


@dataclass
class UnsupervisedConfig:
    """Everything that defines a result (runtime options such as ``n_jobs`` are not here)."""

    dataset: str = "MUTAG"
    method: str = "autogcl"
    feat: str = "deg+odeg100"
    epochs: int = 30
    batch_size: int = 128
    lr: float = 0.001
    eval_epochs: list = field(default_factory=lambda: [10, 20, 30])
    hidden: int = 128
    layers: int = 5
    tau: float | None = None  # None: 0.5 for autogcl, 0.2 for graphcl (released)
    cl_variant: str = "simclr"
    # autogcl
    add_mask: bool = False
    dropped: str = "isolate"
    mask_token: str = "scalar"
    sim_loss: str = "none"  # none (published) | cosine | mse (released adds 1 - MSE)
    view_sampling: str = "replacement"
    gen_hidden: int = 128
    gen_layers: int = 2
    # graphcl
    aug: str = "random4"
    aug_ratio: float = 0.2
    graphcl_views: str = "aug-aug"
    # evaluation
    svm_folds: int = 10
    svm_inner_folds: int = 5
    select: str = "val"

    def __post_init__(self):
        if self.method not in METHODS:
            raise ConfigError(f"unknown method {self.method!r}; choose from {', '.join(METHODS)}")
        if self.select not in SELECTIONS:
            raise ConfigError(f"unknown selection {self.select!r}; choose from {', '.join(SELECTIONS)}")
        self.eval_epochs = sorted({int(e) for e in self.eval_epochs})
        bad = [e for e in self.eval_epochs if not 1 <= e <= self.epochs]
        if bad or not self.eval_epochs:
            raise ConfigError(f"evaluation epochs {bad or self.eval_epochs} must lie in 1..{self.epochs}")
        if self.method == "graphcl" and self.aug not in RandomAugmentor.names:
            raise ConfigError(f"unknown augmentation {self.aug!r}; choose from {', '.join(RandomAugmentor.names)}")
        if self.sim_loss not in ("none", "cosine", "mse"):
            raise ConfigError(f"unknown similarity loss {self.sim_loss!r}; choose none, cosine or mse")

    @property
    def temperature(self) -> float:
        return self.tau if self.tau is not None else (0.5 if self.method == "autogcl" else 0.2)

    @property
    def tag(self) -> str:
        return f"{self.dataset}-{self.method}" + (f"-{self.aug}" if self.method == "graphcl" else "")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["tau"] = self.temperature
        return d

    @classmethod
    def from_dict(cls, d: dict) -> UnsupervisedConfig:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def build_strategy(cfg: UnsupervisedConfig, num_features: int):
    """Models, optimizer and training strategy of one run."""
    encoder = GINEncoder(num_features, cfg.hidden, cfg.layers)
    model = ContrastModel(encoder)
    if cfg.method == "autogcl":
        gens = [ViewGenerator(num_features, cfg.gen_hidden, cfg.gen_layers, cfg.add_mask, cfg.dropped,
                              cfg.mask_token) for _ in range(2)]
        params = list(model.parameters()) + list(gens[0].parameters()) + list(gens[1].parameters())
        opt = torch.optim.Adam(params, lr=cfg.lr)
        return NaiveStrategy(
            model, gens[0], gens[1], opt, tau=cfg.temperature, cl_variant=cfg.cl_variant,
            sim_kind="cosine" if cfg.sim_loss == "none" else cfg.sim_loss,
            sim_weight=0.0 if cfg.sim_loss == "none" else 1.0, view_sampling=cfg.view_sampling,
        )
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    augs = RandomAugmentor(cfg.aug, cfg.aug_ratio), RandomAugmentor(cfg.aug, cfg.aug_ratio)
    return GraphCLStrategy(model, *augs, opt, tau=cfg.temperature, cl_variant=cfg.cl_variant,
                           views=cfg.graphcl_views)


def select(evals: dict) -> dict:
    """Both selections over the evaluated epochs (``evals``: epoch -> SVM result)."""
    epochs = sorted(evals, key=int)
    e_val = max(epochs, key=lambda e: evals[e]["val_acc"])  # first best on ties
    e_max = max(epochs, key=lambda e: evals[e]["test_acc"])
    return {
        "val": {"epoch": int(e_val), "acc": evals[e_val]["test_acc"], "criterion": "inner-CV accuracy of the SVM"},
        "test_max": {"epoch": int(e_max), "acc": evals[e_max]["test_acc"], "criterion": "best outer test accuracy"},
    }


def run_unit(unit: runs.Unit, dataset, n_jobs: int = 1, save_embeddings: bool = False,
             ckpt_every: int = 10, show_progress: bool | None = None) -> dict:
    """Train and evaluate one seed; resumes from ``unit.partial`` when a checkpoint is there."""
    cfg = UnsupervisedConfig.from_dict(unit.config)
    seed = unit.seed
    work = runs.start_work(unit)
    loader_gen = runs.seed_everything(seed)
    strategy = build_strategy(cfg, dataset.num_features)
    train_loader = DataLoader(dataset, batch_size=cfg.batch_size, shuffle=True, generator=loader_gen)
    eval_loader = DataLoader(dataset, batch_size=512, shuffle=False)

    ckpt = work / "checkpoint.pt"
    state = runs.load_checkpoint(ckpt, strategy.modules(), strategy.opt, loader_gen)
    rows, evals, start = ([], {}, 1) if state is None else (state["rows"], state["evals"], state["epoch"] + 1)
    if state is not None:
        log.info("%s seed %d: resuming at epoch %d", cfg.tag, seed, start)

    bar = tqdm(range(start, cfg.epochs + 1), desc=f"{cfg.tag} seed {seed}", unit="epoch",
               leave=False, disable=None if show_progress is None else not show_progress)
    for epoch in bar:
        row = {"epoch": epoch, **strategy.train_epoch(train_loader, epoch)}
        if epoch in cfg.eval_epochs:
            t0 = time.perf_counter()
            emb, y = strategy.model.encoder.embed(eval_loader)
            if save_embeddings:
                np.savez_compressed(work / f"embeddings_epoch{epoch}.npz", emb=emb, y=y)
            res = svm_evaluate(emb, y, cfg.svm_folds, cfg.svm_inner_folds, seed=seed, n_jobs=n_jobs)
            evals[epoch] = res
            row.update(svm_val_acc=res["val_acc"], svm_test_acc=res["test_acc"],
                       svm_test_std=res["test_std"], eval_time_s=time.perf_counter() - t0)
        rows.append(row)
        bar.set_postfix(loss=f"{row['loss']:.3f}")
        if epoch % ckpt_every == 0 or epoch in cfg.eval_epochs:
            runs.save_checkpoint(ckpt, strategy.modules(), strategy.opt, loader_gen, rows=rows, evals=evals,
                                 epoch=epoch)
    bar.close()

    sel = select(evals)
    result = {
        "protocol": "unsupervised", "dataset": cfg.dataset, "method": cfg.method, "tag": cfg.tag,
        "seed": seed, "selection": cfg.select, "acc": sel[cfg.select]["acc"], "selections": sel,
        "evaluations": {str(k): v for k, v in evals.items()},
        "train_time_s": float(sum(r["time_s"] for r in rows)),
        "eval_time_s": float(sum(r.get("eval_time_s", 0.0) for r in rows)),
        "num_graphs": len(dataset), "num_features": dataset.num_features,
    }
    runs.atomic_save({k: m.state_dict() for k, m in strategy.modules().items()}, work / "model.pt")
    return runs.publish(unit, rows, result)


def summarize(results: list[dict]) -> dict:
    """Mean and std (over seeds, population std) of each selection."""
    out = {"n_seeds": len(results), "seeds": [r["seed"] for r in results]}
    for s in SELECTIONS:
        accs = np.array([r["selections"][s]["acc"] for r in results]) * 100
        out[s] = {"mean": float(accs.mean()), "std": float(accs.std()), "values": accs.tolist()}
    out["train_time_s"] = float(np.mean([r["train_time_s"] for r in results]))
    out["eval_time_s"] = float(np.mean([r["eval_time_s"] for r in results]))
    return out


def make_units(cfg: UnsupervisedConfig, seeds: list[int], out: Path) -> list[runs.Unit]:
    return [runs.Unit(dir=Path(out) / cfg.tag / f"seed{s}", config=cfg.to_dict(), seed=s,
                      label=f"{cfg.tag} seed {s}") for s in seeds]


def run_sweep(cfg: UnsupervisedConfig, dataset, seeds: list[int], out: Path, resume: bool = False,
              n_jobs: int = 1, save_embeddings: bool = False, show_progress: bool | None = None) -> dict:
    """Run every seed (skipping finished ones with ``resume``) and write ``summary.json``."""
    units = make_units(cfg, seeds, out)

    def fn(u):
        r = run_unit(u, dataset, n_jobs=n_jobs, save_embeddings=save_embeddings, show_progress=show_progress)
        log.info("%s: val %.2f, test_max %.2f", u.label, 100 * r["selections"]["val"]["acc"],
                 100 * r["selections"]["test_max"]["acc"])
        return r

    results = runs.run_units(units, fn, resume, f"{cfg.tag} seeds", show_progress=show_progress)
    summary = {"protocol": "unsupervised", "tag": cfg.tag, "dataset": cfg.dataset, "method": cfg.method,
               "selection": cfg.select, "config": cfg.to_dict(), **summarize(results)}
    runs.atomic_write_json(Path(out) / cfg.tag / "summary.json", summary)
    return summary
