"""The unsupervised protocol (AutoGCL paper, Section 4.1 and Table 2; docs/method.md):
contrastive pre-training on the whole dataset, then an RBF-SVM on the frozen embeddings at
a few epochs, over seeds.

Composes: a dataset (``data``), an :class:`autogcl.AutoGCL` or :class:`autogcl.GraphCL`
model (``api``: view generators or augmentors, encoder, strategy), the shared
:class:`autogcl.train.Trainer` and the SVM evaluator (``eval.svm``); units run through
:func:`autogcl.units.run_units`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from .. import atomic, seeding, units
from ..api import AutoGCL, GraphCL
from ..data.batching import GraphLoader, GraphStore
from ..devices import engine_of, resolve_device, runtime_info
from ..errors import ConfigError, DataError
from ..eval.svm import SELECTIONS, select_epoch, svm_evaluate
from ..train import Trainer
from .base import Protocol
from .spread import spread
from .configs import AUTOGCL_ONLY, GRAPHCL_ONLY, METHODS, UnsupervisedConfig  # noqa: F401 (re-exported)

log = logging.getLogger(__name__)


def build_model(cfg: UnsupervisedConfig, num_features: int) -> AutoGCL | GraphCL:
    """The model of one run (its features are prepared by the dataset's recipe already)."""
    # features=None: the dataset's x is used as it is; recipe: what built it (saved with the model, so
    # that it applies to raw graphs such as PyG's own TUDataset when the model is loaded)
    common = {"features": None, "recipe": cfg.feat, "lr": cfg.lr, "tau": cfg.temperature, "cl_variant": cfg.cl_variant}
    if cfg.method == "autogcl":
        return AutoGCL(num_features, cfg.hidden, cfg.layers, add_mask=cfg.add_mask, dropped=cfg.dropped,
                       mask_token=cfg.mask_token, sim_loss=cfg.sim_loss, view_sampling=cfg.view_sampling,
                       gen_hidden=cfg.gen_hidden, gen_layers=cfg.gen_layers, **common)
    return GraphCL(num_features, cfg.hidden, cfg.layers, aug=cfg.aug, aug_ratio=cfg.aug_ratio,
                   views=cfg.graphcl_views, **common)


def build_strategy(cfg: UnsupervisedConfig, num_features: int):
    """Models, optimizer and training strategy of one run (``strategy.model`` is the contrast
    model, ``strategy.model.encoder`` the encoder)."""
    return build_model(cfg, num_features).make_strategy()


def run_unit(unit: units.Unit, dataset, n_jobs: int | None = 1, save_embeddings: bool | list[int] = False,
             ckpt_every: int = 10, show_progress: bool | None = None, device="cpu") -> dict:
    """Train and evaluate one seed; resumes from ``unit.partial`` when a checkpoint is there.
    ``save_embeddings``: ``True`` (every evaluation epoch) or the evaluation epochs whose
    embeddings are saved (``embeddings_epochE.npz``)."""
    cfg = UnsupervisedConfig.from_dict(unit.config)
    seed, engine = unit.seed, engine_of(device)  # the device, and how training computes on it
    device = resolve_device(engine)
    work = units.start_work(unit, runtime_info(engine))
    loader_gen = seeding.seed_everything(seed)
    model = build_model(cfg, dataset.num_features)
    strategy = model.make_strategy()
    store = GraphStore.from_dataset(dataset).to(device)  # the whole dataset on the device, batched there
    train_loader = GraphLoader(store, batch_size=cfg.batch_size, shuffle=True, generator=loader_gen)
    eval_loader = GraphLoader(store, batch_size=512, shuffle=False)
    trainer = Trainer(strategy, device=engine, checkpoint=work / "checkpoint.pt", loader_gen=loader_gen,
                      ckpt_every=ckpt_every, desc=f"{cfg.tag} seed {seed}", show_progress=show_progress)
    state = {"evals": {}}

    def evaluate(epoch: int) -> dict | None:
        if epoch not in cfg.eval_epochs:
            return None
        t0 = time.perf_counter()
        emb, y = model.encoder.embed(eval_loader)
        if save_embeddings is True or epoch in (save_embeddings or ()):
            np.savez_compressed(work / f"embeddings_epoch{epoch}.npz", emb=emb.numpy(), y=y.numpy())
        res = svm_evaluate(emb, y, cfg.svm_folds, cfg.svm_inner_folds, seed=seed, n_jobs=n_jobs)
        state["evals"][epoch] = res
        return {"svm_val_acc": res["val_acc"], "svm_test_acc": res["test_acc"], "svm_test_std": res["test_std"],
                "eval_time_s": time.perf_counter() - t0}

    rows = trainer.fit(train_loader, cfg.epochs, evaluate=evaluate, extra=state)
    evals = {int(k): v for k, v in state["evals"].items()}
    sel = select_epoch(evals)
    result = {
        "protocol": "unsupervised", "dataset": cfg.dataset, "method": cfg.method, "tag": cfg.tag,
        "seed": seed, "selection": cfg.select, "acc": sel[cfg.select]["acc"], "selections": sel,
        "evaluations": {str(k): v for k, v in evals.items()},
        "train_time_s": float(sum(r["time_s"] for r in rows)),
        "eval_time_s": float(sum(r.get("eval_time_s", 0.0) for r in rows)),
        "num_graphs": len(dataset), "num_features": dataset.num_features, "runtime": runtime_info(engine),
    }
    model.history = rows
    model.save(work / "model.pt")
    return units.publish(unit, rows, result)


def summarize(results: list[dict]) -> dict:
    """Mean and std (:func:`autogcl.protocols.spread.spread`) of each selection over the seeds."""
    out = {"n_seeds": len(results), "seeds": [r["seed"] for r in results]}
    for s in SELECTIONS:
        accs = np.array([r["selections"][s]["acc"] for r in results]) * 100
        out[s] = {"mean": float(accs.mean()), "std": spread(accs, "unsupervised"), "values": accs.tolist()}
    out["train_time_s"] = float(np.mean([r["train_time_s"] for r in results]))
    out["eval_time_s"] = float(np.mean([r["eval_time_s"] for r in results]))
    return out


def make_summary(cfg: UnsupervisedConfig, results: list[dict], tag_dir: Path | None = None) -> dict:
    """``summary.json`` of a sweep from its units' results (also how ``report`` rebuilds a
    damaged one)."""
    return {"protocol": "unsupervised", "tag": cfg.tag, "dataset": cfg.dataset, "method": cfg.method,
            "selection": cfg.select, "config": cfg.to_dict(), **summarize(results)}


def make_units(cfg: UnsupervisedConfig, seeds: list[int], out: Path) -> list[units.Unit]:
    return [units.Unit(dir=Path(out) / cfg.tag / f"seed{s}", config=cfg.to_dict(), seed=s,
                      label=f"{cfg.tag} seed {s}") for s in seeds]


def plan(cfg: UnsupervisedConfig, dataset, seeds: list[int], out: Path, n_jobs: int | None = 1,
         save_embeddings: bool | list[int] = False, show_progress: bool | None = None, device="cpu") -> units.Sweep:
    """The seeds of one configuration as a :class:`autogcl.units.Sweep` whose ``finish`` writes
    ``OUT/TAG/summary.json``."""
    if dataset.num_classes < 2:
        raise DataError(f"{cfg.dataset} has {dataset.num_classes} class: the SVM protocol needs at least two")
    if len(dataset) < cfg.svm_folds:
        raise DataError(f"{cfg.dataset} has {len(dataset)} graphs: the SVM's {cfg.svm_folds}-fold CV needs at least "
                        f"{cfg.svm_folds}")
    if save_embeddings not in (True, False, None):
        never = sorted({int(e) for e in save_embeddings} - set(cfg.eval_epochs))
        if never:
            raise ConfigError(f"--save-embeddings {','.join(map(str, never))}: embeddings are saved at evaluation "
                              f"epochs only (--eval-epochs {','.join(map(str, cfg.eval_epochs))})")

    def fn(u):
        r = run_unit(u, dataset, n_jobs=n_jobs, save_embeddings=save_embeddings, show_progress=show_progress,
                     device=device)
        log.info("%s: val %.2f, test_max %.2f", u.label, 100 * r["selections"]["val"]["acc"],
                 100 * r["selections"]["test_max"]["acc"])
        return r

    def finish(results):
        summary = make_summary(cfg, results)
        atomic.atomic_write_json(Path(out) / cfg.tag / "summary.json", summary)
        return summary

    return units.Sweep(make_units(cfg, seeds, out), fn, finish)


def run_sweep(cfg: UnsupervisedConfig, dataset, seeds: list[int], out: Path, resume: bool = False,
              n_jobs: int | None = 1, save_embeddings: bool | list[int] = False, show_progress: bool | None = None,
              device="cpu", restart_damaged: bool = False, executor=None) -> dict:
    """Run every seed (skipping finished ones with ``resume``) on ``executor`` (default: one
    after the other here) and write ``summary.json``."""
    sweep = plan(cfg, dataset, seeds, out, n_jobs, save_embeddings, show_progress, device)
    return units.run_sweeps([sweep], resume, f"{cfg.tag} seeds", "seed", show_progress, restart_damaged, executor)[0]


class Unsupervised(Protocol):
    """The unsupervised protocol as a :class:`autogcl.protocols.base.Protocol`: one sweep of
    seeds per config, on one TU dataset."""

    name, config, unit = "unsupervised", UnsupervisedConfig, "seed"

    def load(self, configs, run):
        from ..data import load_tu

        cfg = configs[0]
        dataset = load_tu(cfg.dataset, run.data_root, cfg.feat, download=run.fetch)
        log.info("%s: %d graphs, %d features, %d classes; writing to %s", dataset.name, len(dataset),
                 dataset.num_features, dataset.num_classes, Path(run.out))
        # not from args again: its warnings were said once
        return dataset, [replace(c, dataset=dataset.name) for c in configs]

    def plan(self, cfg, data, out, run):
        return [plan(cfg, data, run.seed_list, out, run.unit_jobs, run.save_embeddings or False, run.progress,
                     run.engine)]

    run_unit = staticmethod(run_unit)
    select = staticmethod(select_epoch)
    summarize = staticmethod(summarize)


PROTOCOL = Unsupervised()
