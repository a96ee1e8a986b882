"""The semi-supervised protocol (AutoGCL paper, Section 4 and Table 3; docs/method.md):
10-fold CV, 10% labels, ResGCN classifier.

A unit is one (dataset, row, seed, fold): :class:`autogcl.SemiSupervised` in the paper's
configuration (:meth:`autogcl.SemiSupervised.paper`, with the row's strategy and the config's
settings; :func:`estimator`) fitted on the fold's training graphs, its labeled share labeled,
with an ``evaluate`` callback that records labeled/val/test accuracy every epoch. Each fold
records both selections: ``val`` (the epoch with the best accuracy on the validation fold)
and ``test_max`` (the best test accuracy over epochs, the published protocol; the only one
under ``split="released"``, the released code's split, which has no validation fold). This
module keeps what belongs to the protocol: splits, folds, seeds, selection and summaries.
Every unit runs through :func:`autogcl.units.run_units`; the estimator checkpoints every epoch
into the unit's folder, so an interrupted fold continues where it stopped.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from .. import atomic, paths, seeding, units
from ..api.semi import SemiSupervised
from ..data.splits import SemiSplit, semi_splits
from ..devices import engine_of, runtime_info
from ..errors import ConfigError, DataError
from .base import Protocol
from .spread import spread
from .configs import ROW_OPTIONS, ROW_SPECIFIC, ROWS, SMALL_BATCH, SemiConfig  # noqa: F401 (re-exported)

log = logging.getLogger(__name__)

#: the estimator strategy of every row ("full" and "labeled" differ in which graphs are labeled)
ROW_STRATEGY = {"full": "supervised", "labeled": "supervised", "graphcl_cl": "graphcl",
                **{r: r for r in ROWS if r not in ("full", "labeled", "graphcl_cl")}}


def estimator(cfg: SemiConfig, in_channels: int | None = None, num_classes: int | None = None) -> SemiSupervised:
    """The row's :class:`autogcl.SemiSupervised`: the paper's configuration with the config's
    settings (built at once when ``in_channels`` and ``num_classes`` are given)."""
    from ..data.datasets import known_name

    dataset = cfg.dataset if known_name(cfg.dataset) else None  # another TU dataset (downloaded): no preset batch
    return SemiSupervised.paper(ROW_STRATEGY[cfg.row], dataset, in_channels=in_channels, num_classes=num_classes,
                                hidden=cfg.hidden, lr=cfg.lr, batch_size=cfg.batch_size, lam=cfg.lam, tau=cfg.tau,
                                cl_variant=cfg.cl_variant, sim_loss=cfg.sim_loss, add_mask=cfg.add_mask,
                                dropped=cfg.dropped, mask_token=cfg.mask_token, aug=cfg.aug, aug_ratio=cfg.aug_ratio,
                                recipe=cfg.feat, bn_stats=cfg.bn_stats)


def fold_labels(cfg: SemiConfig, y, split: SemiSplit) -> torch.Tensor:
    """The labels the estimator is given for the fold's training graphs (``split.train``, in
    order): their class for the labeled share (all of them for the ``full`` row), -1 for the others."""
    y = torch.as_tensor(np.asarray(y)).view(-1).long()
    train = torch.tensor(split.train, dtype=torch.long)
    labels = y[train].clone()
    if cfg.row != "full":
        known = torch.zeros(len(train), dtype=torch.bool)
        known[torch.as_tensor(np.searchsorted(split.train, split.labeled), dtype=torch.long)] = True
        labels[~known] = -1
    return labels


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
    """Fit the row's estimator on one fold (pre-training first for the rows that have it)
    and evaluate it every epoch; resumes from the fold's checkpoints; published atomically
    into ``unit.dir``.

    ``save_embeddings``: epochs after which the classifier's representation of every graph of
    the dataset is saved (``embeddings_epoch{E}.npz``; epoch 0 = before training)."""
    cfg = SemiConfig.from_dict(unit.config)
    engine = engine_of(device)  # the device, and how training computes on it
    work = units.start_work(unit, runtime_info(engine))
    gen = seeding.seed_everything(unit.seed * 1000 + split.fold)
    model = estimator(cfg, dataset.num_features, dataset.num_classes).to(engine.check())
    bs = cfg.batch_size
    # the fold's parts as datasets (copies of the indices: under Ray the split's arrays arrive read-only)
    parts = {k: dataset[torch.tensor(getattr(split, k), dtype=torch.long)]
             for k in ("train", "labeled", "val", "test") if len(getattr(split, k))}
    y_all = dataset._data.y if hasattr(dataset, "_data") else torch.tensor([int(d.y) for d in dataset])
    save_at = set(save_embeddings or [])

    def save_emb(epoch):  # also on a resumed fold: the pass draws a loader seed from the global RNG
        if epoch in save_at:
            emb = model.embed(dataset, batch_size=512)
            np.savez_compressed(work / f"embeddings_epoch{epoch}.npz", emb=emb.numpy(), y=y_all.view(-1).numpy())

    def evaluate(epoch):
        accs = {f"{k}_acc": model.score(parts[k], batch_size=bs) for k in ("labeled", "val", "test") if k in parts}
        save_emb(epoch)
        return accs

    save_emb(0)
    rows = model.fit(parts["train"], labels=fold_labels(cfg, y_all, split), epochs=cfg.epochs,
                     pretrain_epochs=cfg.pretrain_epochs, device=engine, seed=gen, progress=show_progress,
                     evaluate=evaluate, checkpoint=work / "checkpoint.pt",
                     desc=f"{cfg.tag} seed {unit.seed} fold {split.fold}")

    write_outputs(work, model, split, parts["test"], bs)
    train_rows = [r for r in rows if r["phase"] == "train"]
    sel = select(train_rows)
    result = {
        "protocol": "semi", "dataset": cfg.dataset, "row": cfg.row, "tag": cfg.tag, "seed": unit.seed,
        "fold": split.fold, "selection": cfg.select, "acc": sel[cfg.select]["acc"], "selections": sel,
        "time_s": float(sum(r["time_s"] for r in rows)),
        "sizes": {k: len(getattr(split, k)) for k in ("labeled", "unlabeled", "val", "test")},
        "runtime": runtime_info(engine),
        "outputs": {"model.pt": f"the classifier after the last epoch ({cfg.epochs}), a SemiSupervised: autogcl.load",
                    "predictions.csv": "that model's class probabilities for every test graph, and its label"},
    }
    (work / "checkpoint-pretrain.pt").unlink(missing_ok=True)
    return units.publish(unit, rows, result)


def write_outputs(work: Path, model: SemiSupervised, split: SemiSplit, test, batch_size: int) -> None:
    """``model.pt`` (the estimator's own file: :func:`autogcl.load` reads it) and
    ``predictions.csv`` (per test graph: dataset index, label, predicted class, each class's
    probability), both written atomically."""
    model.save(work / "model.pt")
    probs = model.predict_log_proba(test, batch_size=batch_size).double().exp().numpy()
    y = model.prepare(test).labels
    rows = []
    for k, i in enumerate(split.test):
        row = {"index": int(i), "label": int(y[k]), "pred": int(probs[k].argmax())}
        row.update({f"prob_{c}": f"{probs[k, c]:.6g}" for c in range(probs.shape[1])})
        rows.append(row)
    atomic.atomic_write_csv(work / "predictions.csv", rows)


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
        kept = splits  # the folds the file keeps: never fewer than an earlier run saved
        if split_file.is_file() and resume:
            stored = atomic.read_json(split_file)
            try:
                saved = [SemiSplit.from_dict(d) for d in stored["folds"]]
            except (KeyError, TypeError, ValueError) as exc:  # valid JSON, but not the splits it should hold
                raise DataError(f"{split_file}: damaged splits ({type(exc).__name__}: {exc}); delete it to make "
                                "them again") from exc
            # against every fold of this configuration, so that a smaller --fold-limit than the
            # saved run's resumes too
            if [s.to_dict() for s in saved] != [s.to_dict() for s in all_splits[seed][:len(saved)]]:
                raise ConfigError(f"{split_file} differs from the splits this configuration makes")
            kept = all_splits[seed][:max(len(saved), len(splits))]
        atomic.atomic_write_json(split_file, {"dataset": cfg.dataset, "split": cfg.split, "fold_seed": cfg.fold_seed,
                                            "label_seed": seed, "label_rate": cfg.label_rate,
                                            "folds": [s.to_dict() for s in kept]})
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
