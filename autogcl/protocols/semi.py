"""The semi-supervised protocol (AutoGCL paper, Section 4 and Table 3; docs/method.md):
10-fold CV, 10% labels, ResGCN classifier.

A unit is one (dataset, row, seed, fold). Rows (experiments) compose a ResGCN classifier,
view generators or random augmentors and a strategy from :mod:`autogcl.train`; each fold
records per-epoch losses and labeled/val/test accuracy, and both selections: ``val`` (the
epoch with the best accuracy on the validation fold) and ``test_max`` (the best test
accuracy over epochs, the published protocol; the only one under ``split="released"``, the
released code's split, which has no validation fold). Every unit runs through
:func:`autogcl.units.run_units`, and its training phases through the shared
:class:`autogcl.train.Trainer`, which checkpoints every epoch: an interrupted fold continues
where it stopped.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from .. import atomic, paths, seeding, units
from ..augment import RandomAugmentor, ViewGenerator
from ..data.batching import GraphLoader, GraphStore
from ..data.splits import SemiSplit, semi_splits
from ..devices import engine_of, resolve_device, runtime_info
from ..errors import ConfigError, DataError
from ..eval.metrics import accuracy
from ..models.resgcn import ResGCN
from ..train import (
    GraphCLStrategy,
    JointReleasedStrategy,
    JointStrategy,
    LearnableAugStrategy,
    NaiveStrategy,
    SupervisedStrategy,
    Trainer,
)
from ..train.optim import adam
from .spread import spread
from .base import Protocol
from .configs import ROW_OPTIONS, ROW_SPECIFIC, ROWS, SMALL_BATCH, SemiConfig  # noqa: F401 (re-exported)

log = logging.getLogger(__name__)


def build(cfg: SemiConfig, num_features: int, num_classes: int):
    """(pre-training strategy or None, training strategy, which data each one trains on)."""
    model = ResGCN(num_features, num_classes, cfg.hidden)
    opt = adam(model.parameters(), lr=cfg.lr)
    row = cfg.row

    def generators():
        return [ViewGenerator(num_features, 128, 2, cfg.add_mask, cfg.dropped, cfg.mask_token) for _ in range(2)]

    if row in ("full", "labeled"):
        return None, SupervisedStrategy(model, opt), ("train" if row == "full" else "labeled")
    if row == "graphcl_aug":
        return None, SupervisedStrategy(model, opt, RandomAugmentor(cfg.aug, cfg.aug_ratio)), "labeled"
    if row == "graphcl_cl":
        augs = RandomAugmentor(cfg.aug, cfg.aug_ratio), RandomAugmentor(cfg.aug, cfg.aug_ratio)
        pre = GraphCLStrategy(model, *augs, opt, tau=cfg.tau, cl_variant=cfg.cl_variant, encode=model.represent)
        return pre, SupervisedStrategy(model, opt), "labeled"
    g1, g2 = generators()
    opt_gen = adam([*g1.parameters(), *g2.parameters()], lr=cfg.lr)
    if row == "aug":
        return None, LearnableAugStrategy(model, g1, g2, opt, opt_gen, cfg.lam, cfg.sim_loss), "labeled"
    if row == "joint_released":
        return None, JointReleasedStrategy(model, g1, g2, opt, opt_gen, tau=cfg.tau), "joint"
    if row == "naive":
        pre_opt = adam([*model.parameters(), *g1.parameters(), *g2.parameters()], lr=cfg.lr)
        pre = NaiveStrategy(model, g1, g2, pre_opt, tau=cfg.tau, cl_variant=cfg.cl_variant,
                            sim_kind=cfg.sim_loss, encode=model.represent)
        fine = JointStrategy(model, g1, g2, opt, opt_gen, use_cl=False, use_sim=False)
        return pre, fine, "joint"
    use_cl = row in ("joint", "joint_cl_cls")
    use_sim = row in ("joint", "joint_cls_sim")
    strat = JointStrategy(model, g1, g2, opt, opt_gen, use_cl=use_cl, use_sim=use_sim, lam=cfg.lam,
                          tau=cfg.tau, cl_variant=cfg.cl_variant, sim_kind=cfg.sim_loss)
    return None, strat, "joint"


def select(rows: list[dict]) -> dict:
    """Both selections over a fold's epochs; ``val`` only where there is a validation fold
    (rows with ``val_acc``)."""
    best_test = max(rows, key=lambda r: r["test_acc"])  # first best on ties
    out = {"test_max": {"epoch": best_test["epoch"], "acc": best_test["test_acc"], "criterion": "best test accuracy"}}
    if "val_acc" in rows[0]:
        best_val = max(rows, key=lambda r: r["val_acc"])
        out = {"val": {"epoch": best_val["epoch"], "acc": best_val["test_acc"],
                       "criterion": "validation-fold accuracy", "score": best_val["val_acc"]}, **out}
    return out


def run_fold(unit: units.Unit, dataset, split: SemiSplit, show_progress: bool | None = None,
             save_embeddings: list[int] | None = None, device="cpu") -> dict:
    """Train and evaluate one fold (pre-training first for the rows that have it); resumes
    from the fold's checkpoints; published atomically into ``unit.dir``.

    ``save_embeddings``: epochs after which the classifier's representation of every graph of
    the dataset is saved (``embeddings_epoch{E}.npz``; epoch 0 = before training)."""
    cfg = SemiConfig.from_dict(unit.config)
    engine = engine_of(device)  # the device, and how training computes on it
    device = resolve_device(engine)
    work = units.start_work(unit, runtime_info(engine))
    gen = seeding.seed_everything(unit.seed * 1000 + split.fold)
    pre, strat, data_kind = build(cfg, dataset.num_features, dataset.num_classes)
    bs = cfg.batch_size

    store = GraphStore.from_dataset(dataset).to(device)  # every part is batched from the one store

    def loader(idx, shuffle):  # a copy: under Ray the split's arrays arrive read-only
        return GraphLoader(store, batch_size=bs, shuffle=shuffle, generator=gen if shuffle else None,
                           drop_last=shuffle and len(idx) % bs == 1,  # BatchNorm cannot train on one graph
                           indices=torch.tensor(idx, dtype=torch.long))

    train_l, labeled_l = loader(split.train, True), loader(split.labeled, True)
    eval_l = {k: loader(getattr(split, k), False) for k in ("labeled", "val", "test") if len(getattr(split, k))}
    train_data = {"train": train_l, "labeled": labeled_l, "joint": (train_l, labeled_l)}[data_kind]

    save_at = set(save_embeddings or [])
    all_l = GraphLoader(store, batch_size=512, shuffle=False)

    def save_emb(epoch):  # also on a resumed fold: the pass draws a loader seed from the global RNG
        if epoch in save_at:
            emb, y = strat.model.embed(all_l)
            np.savez_compressed(work / f"embeddings_epoch{epoch}.npz", emb=emb.numpy(), y=y.numpy())

    strat.to(device)
    save_emb(0)
    desc = f"{cfg.tag} seed {unit.seed} fold {split.fold}"
    rows: list[dict] = []
    if pre is not None:
        pre_trainer = Trainer(pre, device=engine, checkpoint=work / "checkpoint-pretrain.pt", loader_gen=gen,
                              desc=desc + " pre-train", show_progress=show_progress)
        rows += pre_trainer.fit(train_l, cfg.pretrain_epochs, row_fields={"phase": "pretrain"})

    def evaluate(epoch):
        accs = {f"{k}_acc": accuracy(strat.model, ld, device) for k, ld in eval_l.items()}
        save_emb(epoch)
        return accs

    trainer = Trainer(strat, device=engine, checkpoint=work / "checkpoint.pt", loader_gen=gen, desc=desc,
                      show_progress=show_progress)
    rows += trainer.fit(train_data, cfg.epochs, evaluate=evaluate, row_fields={"phase": "train"})

    write_outputs(work, strat, cfg, dataset, split, eval_l["test"])
    train_rows = [r for r in rows if r["phase"] == "train"]
    sel = select(train_rows)
    result = {
        "protocol": "semi", "dataset": cfg.dataset, "row": cfg.row, "tag": cfg.tag, "seed": unit.seed,
        "fold": split.fold, "selection": cfg.select, "acc": sel[cfg.select]["acc"], "selections": sel,
        "time_s": float(sum(r["time_s"] for r in rows)),
        "sizes": {k: len(getattr(split, k)) for k in ("labeled", "unlabeled", "val", "test")},
        "runtime": runtime_info(engine),
        "outputs": {"model.pt": f"the classifier after the last epoch ({cfg.epochs}): protocols.semi.load_model",
                    "predictions.csv": "that model's class probabilities for every test graph, and its label"},
    }
    (work / "checkpoint-pretrain.pt").unlink(missing_ok=True)
    return units.publish(unit, rows, result)


MODEL_FORMAT = "autogcl-semi-classifier-1"


def write_outputs(work: Path, strat, cfg: SemiConfig, dataset, split: SemiSplit, test_loader) -> None:
    """``model.pt`` (the ResGCN classifier, and the view generators of the rows that have them;
    :func:`load_model`) and ``predictions.csv`` (per test graph: dataset index, label, predicted
    class, each class's probability), both written atomically."""
    from ..models.embed import embed

    modules = strat.modules()
    model = modules["model"]
    state = {name: {k: v.detach().cpu() for k, v in m.state_dict().items()} for name, m in modules.items()}
    atomic.atomic_save({"format": MODEL_FORMAT, "class": "ResGCN", "config": cfg.to_dict(),
                      "hparams": {"in_dim": dataset.num_features, "num_classes": dataset.num_classes,
                                  "hidden": cfg.hidden},
                      "state_dict": state.pop("model"), "generators": state, "fold": split.fold}, work / "model.pt")
    logp, y = embed(model, test_loader)
    probs = logp.double().exp().numpy()
    rows = []
    for k, i in enumerate(split.test):
        row = {"index": int(i), "label": int(y[k]), "pred": int(probs[k].argmax())}
        row.update({f"prob_{c}": f"{probs[k, c]:.6g}" for c in range(probs.shape[1])})
        rows.append(row)
    atomic.atomic_write_csv(work / "predictions.csv", rows)


def load_model(path) -> ResGCN:
    """The classifier of a semi-supervised unit's ``model.pt`` (read with ``weights_only=True``),
    in eval mode: ``model(batch)`` gives log-probabilities."""
    path = Path(path)
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a missing, damaged or unsafe file
        raise DataError(f"{path}: not a readable model file ({type(exc).__name__})") from exc
    if not isinstance(blob, dict) or blob.get("format") != MODEL_FORMAT:
        raise DataError(f"{path}: not a semi-supervised classifier (expected format {MODEL_FORMAT})")
    hp = blob["hparams"]
    model = ResGCN(int(hp["in_dim"]), int(hp["num_classes"]), int(hp["hidden"]))
    model.load_state_dict(blob["state_dict"])
    return model.eval()


def summarize(results: list[dict]) -> dict:
    """Mean ± std (:func:`autogcl.protocols.spread.spread`) over every (seed, fold) result."""
    out = {"n_seeds": len({r["seed"] for r in results}), "n_folds": len(results)}
    for s in ("val", "test_max"):
        if any(s not in r["selections"] for r in results):  # the released split has no validation fold
            out[s] = {"mean": math.nan, "std": math.nan, "values": [], "undefined": "no validation fold"}
            continue
        accs = np.array([r["selections"][s]["acc"] for r in results]) * 100
        out[s] = {"mean": float(accs.mean()), "std": spread(accs, "semi"),
                  "values": accs.tolist()}
    out["time_per_fold_s"] = float(np.mean([r["time_s"] for r in results]))
    return out


def make_summary(cfg: SemiConfig, results: list[dict], tag_dir: Path | None = None) -> dict:
    """``summary.json`` of one row from its folds' results (also how ``report`` rebuilds a
    damaged one)."""
    return {"protocol": "semi", "tag": cfg.tag, "dataset": cfg.dataset, "row": cfg.row,
            "selection": cfg.select, "config": cfg.to_dict(), **summarize(results)}


def plan(cfg: SemiConfig, dataset, seeds: list[int], out: Path, resume: bool = False,
         fold_limit: int | None = None, show_progress: bool | None = None,
         save_embeddings: list[int] | None = None, device="cpu") -> units.Sweep:
    """Every (seed, fold) unit of one row as a :class:`autogcl.units.Sweep` (``finish`` writes
    ``OUT/TAG/summary.json``); the splits are saved beside the folds (``seedN/splits.json``)."""
    root = Path(out) / cfg.tag
    if dataset.num_classes < 2:
        raise DataError(f"{cfg.dataset} has {dataset.num_classes} class: classification needs at least two")
    if len(dataset) < cfg.folds:
        raise DataError(f"{cfg.dataset} has {len(dataset)} graphs: {cfg.folds}-fold CV needs at least {cfg.folds}")
    never = sorted(int(e) for e in save_embeddings or () if not 0 <= int(e) <= cfg.epochs)
    if never:
        raise ConfigError(f"--save-embeddings {','.join(map(str, never))}: not an epoch of this run (0 = before "
                          f"training .. --epochs {cfg.epochs})")
    y = dataset._data.y.numpy() if hasattr(dataset, "_data") else np.array([int(d.y) for d in dataset])
    all_splits = {seed: semi_splits(y, cfg.folds, cfg.label_rate, cfg.fold_seed, label_seed=seed, split=cfg.split)
                  for seed in seeds}  # a label rate that cannot work fails before any folder is made
    paths.check_writable(root)
    plan = {}
    for seed in seeds:
        splits = all_splits[seed]
        if fold_limit:
            splits = splits[:fold_limit]
        split_file = root / f"seed{seed}" / "splits.json"
        if split_file.is_file() and resume:
            stored = atomic.read_json(split_file)
            try:
                saved = [SemiSplit.from_dict(d) for d in stored["folds"]]
            except (KeyError, TypeError, ValueError) as exc:  # valid JSON, but not the splits it should hold
                raise DataError(f"{split_file}: damaged splits ({type(exc).__name__}: {exc}); delete it to make "
                                "them again") from exc
            if [s.to_dict() for s in saved] != [s.to_dict() for s in splits[:len(saved)]]:
                raise ConfigError(f"{split_file} differs from the splits this configuration makes")
        atomic.atomic_write_json(split_file, {"dataset": cfg.dataset, "split": cfg.split, "fold_seed": cfg.fold_seed,
                                            "label_seed": seed, "label_rate": cfg.label_rate,
                                            "folds": [s.to_dict() for s in splits]})
        for s in splits:
            unit = units.Unit(dir=root / f"seed{seed}" / f"fold{s.fold}", config=cfg.to_dict(), seed=seed,
                             label=f"{cfg.tag} seed {seed} fold {s.fold}")
            plan[unit.label] = (unit, s)

    def fn(unit):
        r = run_fold(unit, dataset, plan[unit.label][1], show_progress, save_embeddings, device=device)
        log.info("%s: %s", unit.label, ", ".join(f"{k} {100 * v['acc']:.2f}" for k, v in r["selections"].items()))
        return r

    def finish(results):
        summary = make_summary(cfg, results)
        atomic.atomic_write_json(root / "summary.json", summary)
        return summary

    return units.Sweep([u for u, _ in plan.values()], fn, finish)


def run_sweep(cfg: SemiConfig, dataset, seeds: list[int], out: Path, resume: bool = False,
              fold_limit: int | None = None, show_progress: bool | None = None,
              save_embeddings: list[int] | None = None, device="cpu", restart_damaged: bool = False,
              executor=None) -> dict:
    """Every (seed, fold) unit of one row on ``executor`` (default: one after the other here);
    the row's summary."""
    sweep = plan(cfg, dataset, seeds, out, resume, fold_limit, show_progress, save_embeddings, device)
    return units.run_sweeps([sweep], resume, f"{cfg.tag} folds", "fold", show_progress, restart_damaged, executor)[0]


class Semi(Protocol):
    """The semi-supervised protocol as a :class:`autogcl.protocols.base.Protocol`: one sweep of
    (seed, fold) units per row, the rows on one TU dataset."""

    name, config, unit = "semi", SemiConfig, "fold"

    def load(self, configs, run):
        from ..data import load_tu

        dataset = load_tu(configs[0].dataset, run.data_root, configs[0].feat, download=run.fetch)
        return dataset, [replace(c, dataset=dataset.name) for c in configs]  # its warnings were said once

    def plan(self, cfg, data, out, run):
        return [plan(cfg, data, run.seed_list, out, run.resume, run.fold_limit, run.progress, run.save_embeddings,
                     run.engine)]

    def desc(self, configs, data, run):
        return f"{data.name} folds"

    run_unit = staticmethod(run_fold)
    select = staticmethod(select)
    summarize = staticmethod(summarize)


PROTOCOL = Semi()
