"""Transfer fine-tuning (AutoGCL paper, Table 4; Hu et al. 2020; docs/method.md): the molecule
GIN, from a pre-trained encoder or from scratch ("No pretrain"), fine-tuned on a labeled
molecule dataset with a scaffold split.

Each (dataset, seed) unit is one call of :meth:`autogcl.MoleculeEncoder.finetune` (the
library's fine-tuning recipe: masked BCE, or masked MSE on standardised targets for numeric
labels) on the dataset's saved scaffold split, scoring the validation and test parts every
epoch. This module keeps what belongs to the protocol: the split, the seeds, the selections
and the summaries. Classification: ROC-AUC averaged over the tasks that have both classes in
the evaluated part; ``val`` (default) reports the test ROC-AUC of the epoch with the best
validation ROC-AUC, ``test_max`` the best test ROC-AUC (the published protocol). Regression:
RMSE (with MAE and R²) averaged over the tasks; ``val`` reports the test RMSE of the epoch
with the lowest validation RMSE, ``test_min`` the lowest test RMSE (test_max's analogue).
"""

from __future__ import annotations

import hashlib
import logging
import math
from pathlib import Path

import numpy as np
import torch

from .. import atomic, paths, units
from ..choices import REGRESSION_SELECTIONS
from ..data.moleculenet import load_molecule_csv, load_moleculenet
from ..data.molecules import label_task
from ..data.splits import scaffold_split
from ..devices import engine_of, runtime_info
from ..errors import ConfigError, DataError
from ..eval.metrics import roc_auc  # noqa: F401 (the protocol's score, named here)
from ..models.mol_gin import load_encoder
from ..molecules import MoleculeEncoder, MoleculePredictor, check_split, encoder_ref, resolve_encoder
from .base import Protocol
from .spread import spread
from .configs import SELECTIONS, FinetuneConfig

log = logging.getLogger(__name__)


def load_dataset(cfg: FinetuneConfig, data_root=None, workers: int | None = None, download: bool | None = None):
    if cfg.csv:
        return load_molecule_csv(cfg.csv, cfg.smiles_col, cfg.label_cols, workers=workers, label_map=cfg.label_map)
    return load_moleculenet(cfg.dataset, data_root, download=download, workers=workers)


def dataset_task(cfg: FinetuneConfig, dataset) -> str:
    """The dataset's task (``cfg.task``, checked against the labels, or inferred from them:
    binary labels are classification, numbers regression), with the selection checked to be
    one of that task's (``test_max`` for classification, ``test_min`` for regression)."""
    y = dataset._data.y.view(len(dataset), -1).numpy()
    task = label_task(y, cfg.task, str(cfg.csv or dataset.name), dataset.meta.get("rows"), dataset.meta.get("tasks"))
    allowed = SELECTIONS if task == "classification" else REGRESSION_SELECTIONS
    if cfg.select not in allowed:
        raise ConfigError(f"--select {cfg.select} is not a selection of {task} ({dataset.name}'s labels are "
                          f"{'binary' if task == 'classification' else 'numbers'}); choose from {', '.join(allowed)}")
    if cfg.task is None:
        log.info("%s: %s labels: %s (RMSE, MAE, R²)" if task == "regression" else "%s: %s labels: %s (ROC-AUC)",
                 dataset.name, "numeric" if task == "regression" else "binary", task)
    return task


def encoder_of(cfg: FinetuneConfig) -> MoleculeEncoder:
    """The encoder a unit fine-tunes: the checkpoint's, or a fresh GIN of the configured size
    (the "No pretrain" row: its weights are drawn from the unit's seed by ``finetune``)."""
    if cfg.checkpoint:
        return MoleculeEncoder.load(cfg.checkpoint)
    return MoleculeEncoder(cfg.dim, cfg.num_layers)


#: the recipe's options a :class:`FinetuneConfig` leaves to the recipe when ``None``
RECIPE_KEYS = ("epochs", "batch_size", "lr", "weight_decay", "dropout")
#: the same, stored only when set (options added after runs of the paper's protocol were made)
RECIPE_KEYS_IMPLICIT = ("readout", "lr_schedule")


def resolve_recipe(cfg: FinetuneConfig, task: str) -> FinetuneConfig:
    """``cfg`` with every recipe option it leaves open (``None``) set to the recipe's value:
    the published protocol's (``MoleculeEncoder.finetune(preset="paper")``) for a MoleculeNet
    set, and :meth:`autogcl.MoleculeEncoder.finetune`'s own defaults for a ``--csv`` file, those
    of a regression for numbers, so that the command and Python fine-tune alike. The readout
    and schedule of a MoleculeNet set are left open (stored only when set, as before they were
    options); a ``--csv`` run records them."""
    from ..molecules import _recipe

    open_all = dict.fromkeys(("epochs", "batch_size", "lr", "weight_decay", "dropout", "readout", "split", "frac",
                              "selection", "lr_schedule", "bn_stats"))
    base = _recipe(None if cfg.csv else "paper", regression=task == "regression", **open_all)
    keys = RECIPE_KEYS + (RECIPE_KEYS_IMPLICIT if cfg.csv else ())
    fill = {k: base[k] for k in keys if getattr(cfg, k) is None}
    return FinetuneConfig.from_dict({**cfg.to_dict(), **fill}) if fill else cfg


def recipe(cfg: FinetuneConfig) -> dict:
    """The options of :meth:`autogcl.MoleculeEncoder.finetune` that a configuration sets
    (``None``: the recipe's default, see :func:`resolve_recipe`)."""
    out = {k: getattr(cfg, k) for k in RECIPE_KEYS + RECIPE_KEYS_IMPLICIT}
    return {**out, "frac": cfg.frac, "from_scratch": cfg.checkpoint is None}


def read_split_file(path, n: int) -> dict:
    """A split file's parts as index lists ``{"train", "valid", "test"}``: ``{"train",
    "valid", "test"}`` (``"val"`` is taken for ``"valid"``), or chemprop's ``--splits-file``
    form ``[{"train", "val", "test"}]`` (its first split). Every index must name one of the
    ``n`` molecules, and no molecule may be in two parts."""
    import json

    path = Path(path)
    try:
        obj = json.loads(path.read_text())
    except FileNotFoundError:
        raise DataError(f"{path}: no such split file") from None
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a JSON split file ({exc})") from None
    if isinstance(obj, list):
        if not obj or not isinstance(obj[0], dict):
            raise DataError(f"{path}: a list of splits must hold dicts of index lists (chemprop's --splits-file)")
        if len(obj) > 1:
            log.warning("%s holds %d splits; the first is used", path, len(obj))
        obj = obj[0]
    if not isinstance(obj, dict):
        raise DataError(f"{path}: expected {{'train': [...], 'valid': [...], 'test': [...]}}")
    parts = {}
    for key in ("train", "valid", "test"):
        value = obj.get(key, obj.get("val") if key == "valid" else None)
        if not isinstance(value, list) or not value:
            raise DataError(f"{path}: part {key!r} is missing or empty (keys: {sorted(obj)})")
        try:
            idx = [int(i) for i in value]
        except (TypeError, ValueError):
            raise DataError(f"{path}: part {key!r} holds something other than integer indices") from None
        bad = [i for i in idx if not 0 <= i < n]
        if bad:
            raise DataError(f"{path}: part {key!r} has index {bad[0]} outside 0..{n - 1} ({n} molecules parse)")
        parts[key] = sorted(set(idx))
    check_split(parts, str(path))
    return parts


METRIC = {"classification": "auc", "regression": "rmse"}


def select(rows: list[dict], task: str = "classification") -> dict:
    """The reported epoch under each selection (first best; NaN scores never win):
    classification by ROC-AUC (``val``, ``test_max``), regression by RMSE, lowest first
    (``val``, ``test_min``; each also gives that epoch's test MAE and R²)."""
    if task == "regression":
        return _select_regression(rows)

    def best(key):
        vals = [r[key] if r[key] == r[key] else -math.inf for r in rows]
        return None if max(vals) == -math.inf else int(np.argmax(vals))

    v, t = best("val_auc"), best("test_auc")
    if v is None:
        log.warning("no task has both classes in the validation part: no val selection (NaN)")
    nan = {"epoch": None, "auc": math.nan}
    val_rule, test_rule = {"criterion": "validation ROC-AUC"}, {"criterion": "best test ROC-AUC"}
    return {"val": val_rule | (nan | {"val_auc": math.nan, "score": math.nan} if v is None else
                               {"epoch": rows[v]["epoch"], "auc": rows[v]["test_auc"], "val_auc": rows[v]["val_auc"],
                                "score": rows[v]["val_auc"]}),
            "test_max": test_rule | (nan if t is None else {"epoch": rows[t]["epoch"], "auc": rows[t]["test_auc"]})}


def _select_regression(rows: list[dict]) -> dict:
    def best(key):
        vals = [r[key] if r[key] == r[key] else math.inf for r in rows]
        return None if min(vals) == math.inf else int(np.argmin(vals))

    def at(i, **more):
        if i is None:
            return {"epoch": None, "rmse": math.nan, "mae": math.nan, "r2": math.nan, **more}
        r = rows[i]
        return {"epoch": r["epoch"], "rmse": r["test_rmse"], "mae": r["test_mae"], "r2": r["test_r2"], **more}

    v, t = best("val_rmse"), best("test_rmse")
    if v is None:
        log.warning("no task has a label in the validation part: no val selection (NaN)")
    val_rmse = math.nan if v is None else rows[v]["val_rmse"]
    # score: higher is better in every protocol's record (here minus the validation RMSE)
    return {"val": {"criterion": "validation RMSE (lowest)", **at(v, val_rmse=val_rmse, score=-val_rmse)},
            "test_min": {"criterion": "lowest test RMSE", **at(t)}}


def unscored_tasks(dataset, split: dict, task: str = "classification") -> dict:
    """Per split part, the tasks that the part's score cannot use (no label at all, or one
    class only; for regression no label, :data:`autogcl.eval.metrics.REGRESSION_MIN_LABELS`),
    each logged once: the part's score averages the other tasks."""
    from ..eval.metrics import REGRESSION_MIN_LABELS

    y = dataset._data.y.view(len(dataset), -1).numpy()
    tasks = list(dataset.meta.get("tasks") or range(y.shape[1]))
    out = {}
    for part in ("train", "valid", "test"):
        sub = y[np.asarray(split[part], dtype=int)]
        bad = []
        for t, name in enumerate(tasks):
            lab = sub[:, t][~np.isnan(sub[:, t])]
            unscored = lab.size < REGRESSION_MIN_LABELS["rmse"] if task == "regression" else \
                (lab.size == 0 or lab.min() == lab.max())
            if unscored:
                bad.append(str(name))
        if bad:
            scored = len(tasks) - len(bad)
            what = "no labels" if task == "regression" else "no labels or one class"
            score = "RMSE" if task == "regression" else "ROC-AUC"
            log.warning("%s: %d task(s) have %s in the %s part (%s); its %s averages the other %d", dataset.name,
                        len(bad), what, part, ", ".join(bad[:5]) + (" ..." if len(bad) > 5 else ""), score, scored)
            if scored == 0 and part != "train":
                log.warning("%s: no task can be scored in the %s part: its %s is NaN", dataset.name, part, score)
        out[part] = bad
    return out


def prepare_split(dataset, out_dir: Path, frac, task: str = "classification", split_file=None) -> dict:
    """The scaffold split of the dataset (or the parts of ``split_file``,
    :func:`read_split_file`), computed once and saved in ``out_dir/split.json`` (a saved split
    is reused after checking it belongs to the same molecules and the same file)."""
    path = Path(out_dir) / "split.json"
    n = len(dataset)
    digest = hashlib.sha256("\n".join(dataset.meta["smiles"]).encode()).hexdigest()
    if path.is_file():
        split = atomic.read_json(path)
        same_file = split.get("file") == (str(Path(split_file).resolve()) if split_file else None)
        if split.get("smiles_sha256") == digest and split.get("frac") == list(frac) and same_file:
            return split
        log.warning("%s was made for other molecules or fractions; computing the split again", path)
    if split_file:
        split = {**read_split_file(split_file, n), "kind": "file", "file": str(Path(split_file).resolve())}
    else:
        split = {**scaffold_split(dataset.meta["smiles"], frac), "kind": "scaffold"}
    sizes = {k: len(split[k]) for k in ("train", "valid", "test")}
    if min(sizes.values()) == 0:
        raise DataError(f"{dataset.name}: the scaffold split {sizes} leaves a part empty ({n} molecules, "
                        f"{split['num_scaffolds']} scaffolds); use more molecules or other fractions")
    split.update(num_graphs=n, frac=list(frac), sizes=sizes, smiles_sha256=digest)
    split["unscored_tasks"] = unscored_tasks(dataset, split, task)
    atomic.atomic_write_json(path, split)
    atomic.atomic_write_json(Path(out_dir) / "dataset.json",
                           {k: v for k, v in dataset.meta.items() if k not in ("smiles", "rows")})
    return split


def run_unit(unit: units.Unit, dataset, split: dict, show_progress: bool | None = None, device="cpu",
             task: str | None = None) -> dict:
    """Fine-tune one seed with :meth:`autogcl.MoleculeEncoder.finetune` on the saved split
    (validation weights kept, every epoch scored on valid and test); resumes from
    ``unit.partial`` when a checkpoint is there."""
    cfg = FinetuneConfig.from_dict(unit.config)
    engine = engine_of(device)  # the device, and how training computes on it
    work = units.start_work(unit, runtime_info(engine))
    task = task or dataset_task(cfg, dataset)
    encoder = encoder_of(cfg)
    pred = encoder.finetune(dataset, task=task, **recipe(cfg), split={k: split[k] for k in ("train", "valid", "test")},
                            selection="val", seed=unit.seed, device=engine, checkpoint=work / "checkpoint.pt",
                            progress=show_progress, desc=unit.label)
    rows = pred.history
    metric = METRIC[task]
    sel = select(rows, task)
    pred.meta["dataset"] = cfg.dataset
    write_outputs(work, pred, dataset, split)
    what = ("best validation ROC-AUC, the val selection's; the last epoch when no epoch has one"
            if task == "classification" else "lowest validation RMSE, the val selection's; the last epoch when no "
            "epoch has one")
    enc_meta = encoder.meta
    result = {
        "protocol": "transfer", "dataset": cfg.dataset, "seed": unit.seed, "task": task,
        "pretrained": cfg.checkpoint is not None, "checkpoint": cfg.checkpoint,
        "encoder_meta": {k: v for k, v in enc_meta.items() if k != "pretrain_config"},
        "selection": cfg.select, metric: sel[cfg.select][metric], "selections": sel,
        "num_tasks": len(pred.tasks), "tasks_scored": {"val": rows[-1]["val_tasks"], "test": rows[-1]["test_tasks"]},
        "split_sizes": {k: len(split[k]) for k in ("train", "valid", "test")},
        "train_time_s": float(sum(r["time_s"] for r in rows)), "runtime": runtime_info(engine),
        "model_epoch": pred.selected_epoch,
        "outputs": {"model.pt": f"the predictor of epoch {pred.selected_epoch} ({what}): autogcl.MoleculePredictor.load",
                    "predictions.csv": (f"that model's {'probability' if task == 'classification' else 'prediction'} "
                                        "per task for every test molecule, and its labels")},
    }
    return units.publish(unit, rows, result)


def write_outputs(work: Path, pred: MoleculePredictor, dataset, split: dict) -> None:
    """``model.pt`` (``pred``, the fine-tuned predictor, :meth:`autogcl.MoleculePredictor.load`
    reads it) and ``predictions.csv`` (per test molecule: dataset index, file row, SMILES, each
    task's probability (classification) or prediction (regression) and label, empty where
    missing), both written atomically."""
    pred.save(work / "model.pt")
    index = [int(i) for i in split["test"]]
    values, _ = pred._predicted(dataset[torch.as_tensor(index, dtype=torch.long)])
    y = dataset._data.y.view(len(dataset), -1)[index].numpy()
    smiles, lines = dataset.meta.get("smiles"), dataset.meta.get("rows")
    column = "prob" if pred.task == "classification" else "pred"
    out = []
    for k, i in enumerate(index):
        row = {"index": i, "row": lines[i] if lines else "", "smiles": smiles[i] if smiles else ""}
        for t, name in enumerate(pred.tasks):
            row[f"{column}_{name}"] = f"{values[k, t]:.6g}"
            label = "" if np.isnan(y[k, t]) else (int(y[k, t]) if pred.task == "classification" else f"{y[k, t]:.6g}")
            row[f"label_{name}"] = label
        out.append(row)
    atomic.atomic_write_csv(work / "predictions.csv", out)


def summarize(results: list[dict]) -> dict:
    """Mean ± std (ddof 0) over seeds under each selection: ROC-AUC in % (classification), or
    test RMSE in the targets' units with the MAE and R² of the same epochs (regression)."""
    out = {"n_seeds": len(results), "seeds": [r["seed"] for r in results]}
    task = results[0].get("task", "classification")
    if task == "regression":
        out["task"] = task
        for s in REGRESSION_SELECTIONS:
            out[s] = _spread([r["selections"][s]["rmse"] for r in results])
            out[s].update({m: _spread([r["selections"][s][m] for r in results]) for m in ("mae", "r2")})
    else:
        for s in SELECTIONS:
            out[s] = _spread(np.array([r["selections"][s]["auc"] for r in results], dtype=float) * 100)
    out["train_time_s"] = float(np.mean([r["train_time_s"] for r in results]))
    return out


def _spread(values) -> dict:
    v = np.asarray(values, dtype=float)
    return {"mean": float(np.mean(v)), "std": spread(v, "transfer"), "values": v.tolist()}


def plan(cfg: FinetuneConfig, seeds: list[int], out: Path, tag: str, data_root=None,
         show_progress: bool | None = None, workers: int | None = None, device="cpu",
         download: bool | None = None) -> units.Sweep:
    """The seeds of one dataset as a :class:`autogcl.units.Sweep` into ``out/tag/dataset/seedN``
    (``finish`` writes ``summary.json`` there)."""
    if not tag or tag in (".", "..") or "/" in tag or "\\" in tag:
        raise ConfigError(f"--tag {tag!r} must be a plain folder name (results go to OUT/TAG/DATASET): no '/', "
                          "not '.' or '..'")
    arch, weights = {}, {}
    if cfg.checkpoint:  # the encoder's architecture is the checkpoint's: record it (a bad file fails first)
        state, arch, _ = load_encoder(resolve_encoder(cfg.checkpoint))
        arch, weights = dict(arch), {ENCODER_KEY: atomic.weights_id(state)}
    dataset = load_dataset(cfg, data_root, workers, download)
    name = dataset.name if cfg.csv else cfg.dataset.lower()
    cfg = FinetuneConfig.from_dict({**cfg.to_dict(), "dataset": name, **arch})
    ddir = Path(out) / tag / name
    task = dataset_task(cfg, dataset)
    if task == "regression":  # recorded with the units (a classification keeps the config of the runs before it)
        cfg = FinetuneConfig.from_dict({**cfg.to_dict(), "task": task})
    cfg = resolve_recipe(cfg, task)  # the recipe's values, recorded in config.json
    todo = [units.Unit(dir=ddir / f"seed{s}", config={**cfg.to_dict(), **weights}, seed=s,
                       label=f"{tag} {name} seed {s}", upgrade=lambda c: stored_config(c, weights)) for s in seeds]
    paths.check_writable(ddir)
    split = prepare_split(dataset, ddir, cfg.frac, task, cfg.split_file)

    def fn(u):
        r = run_unit(u, dataset, split, show_progress=show_progress, device=device, task=task)
        if task == "regression":
            log.info("%s: val RMSE %.4g (R² %.3f), test_min RMSE %.4g", u.label, r["selections"]["val"]["rmse"],
                     r["selections"]["val"]["r2"], r["selections"]["test_min"]["rmse"])
        else:
            log.info("%s: val %.2f, test_max %.2f", u.label, 100 * r["selections"]["val"]["auc"],
                     100 * r["selections"]["test_max"]["auc"])
        return r

    def finish(results):
        summary = make_summary(cfg, results, ddir)
        atomic.atomic_write_json(ddir / "summary.json", summary)
        return summary

    return units.Sweep(todo, fn, finish)


#: the key of a fine-tuning unit's ``config.json`` that records the weights it fine-tuned
#: (:func:`autogcl.atomic.weights_id`): ``--checkpoint`` names a path, and another encoder saved at
#: that path later (a pre-training run again into the same folder) must not resume its units
ENCODER_KEY = "encoder_weights_sha256"


def stored_config(config: dict, weights: dict | None = None) -> dict:
    """A unit's stored ``config.json`` as this version records it: the encoder by
    :func:`autogcl.molecules.encoder_ref`, so that a unit run from one checkout (which recorded
    the shipped encoder by its absolute path there) resumes from any other. A unit recorded
    before its encoder's weights were (no :data:`ENCODER_KEY`) reads as of this run's ``weights``:
    it is known by its path alone, as it was when it ran."""
    if not config.get("checkpoint"):
        return config
    return {**(weights if ENCODER_KEY not in config else {}), **config, "checkpoint": encoder_ref(config["checkpoint"])}


def run_sweep(cfg: FinetuneConfig, seeds: list[int], out: Path, tag: str, data_root=None,
              resume: bool = False, show_progress: bool | None = None, workers: int | None = None,
              device="cpu", restart_damaged: bool = False, download: bool | None = None, executor=None) -> dict:
    """Fine-tune every seed on one dataset into ``out/tag/dataset/seedN`` on ``executor``
    (default: one after the other here); the dataset's summary."""
    sweep = plan(cfg, seeds, out, tag, data_root, show_progress, workers, device, download)
    return units.run_sweeps([sweep], resume, f"{tag} {sweep.units[0].config['dataset']} seeds", "seed",
                           show_progress, restart_damaged, executor)[0]


def make_summary(cfg: FinetuneConfig, results: list[dict], dataset_dir: Path) -> dict:
    """``summary.json`` of one dataset's seeds from their results and the split and dataset
    records beside them (also how ``report`` rebuilds a damaged one)."""
    dataset_dir = Path(dataset_dir)
    split = atomic.read_json(dataset_dir / "split.json")
    info = atomic.read_json(dataset_dir / "dataset.json") if (dataset_dir / "dataset.json").is_file() else {}
    return {"protocol": "transfer", "tag": dataset_dir.parent.name, "dataset": cfg.dataset, "selection": cfg.select,
            "pretrained": cfg.checkpoint is not None,
            "pretrain_method": results[0]["encoder_meta"].get("method") if cfg.checkpoint else None,
            "pretrain": _pretraining(results[0]["encoder_meta"]) if cfg.checkpoint else None,
            "config": cfg.to_dict(), "num_molecules": split["num_graphs"],
            "skipped_smiles": len(info.get("skipped", [])), "split_sizes": split["sizes"], **summarize(results)}


def _pretraining(meta: dict) -> dict:
    """How much pre-training the fine-tuned encoder had, from its checkpoint's record: epochs,
    molecules seen in all, and the corpus's molecules (for a study of pre-training size)."""
    return {"epochs": meta.get("epochs"), "molecules_seen": meta.get("molecules_seen"),
            "corpus_molecules": (meta.get("corpus") or {}).get("molecules")}


class Transfer(Protocol):
    """Fine-tuning on molecules as a :class:`autogcl.protocols.base.Protocol`: one sweep of
    seeds per dataset into ``OUT/TAG/DATASET``; each sweep loads its own dataset."""

    name, config, unit = "transfer", FinetuneConfig, "seed"

    def load(self, configs, run):
        return None, configs  # each sweep loads its dataset (plan)

    def plan(self, cfg, data, out, run):
        sweep = plan(cfg, run.seed_list, out, cfg.results_tag(run.tag), run.data_root, run.progress, run.workers,
                     run.engine, run.fetch)
        if run.grid and sweep.units[0].config.get("task") == "regression":
            raise ConfigError("--grid picks a configuration by the ROC-AUC of the val selection; it does not take "
                              "regression runs (numeric labels) yet: run each configuration with its own --out")
        return [sweep]

    def desc(self, configs, data, run):
        return f"{configs[0].results_tag(run.tag)} seeds"

    def title(self, cfg, summary):
        return f"{summary['tag']}-{summary['dataset']}"

    run_unit = staticmethod(run_unit)
    select = staticmethod(select)
    summarize = staticmethod(summarize)

    def report(self, configs, summaries, run):
        return ""


PROTOCOL = Transfer()
