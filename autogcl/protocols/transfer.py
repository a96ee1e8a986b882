"""Transfer fine-tuning (AutoGCL paper, Table 4; Hu et al. 2020; docs/method.md): the molecule
GIN, from a pre-trained encoder or from scratch ("No pretrain"), fine-tuned on a labeled
molecule dataset with a scaffold split.

Masked BCE over the labeled tasks; ROC-AUC averaged over the tasks that have both classes
in the evaluated split. Every epoch is scored on the validation and test parts; the
``val`` selection (default) reports the test ROC-AUC of the epoch with the best
validation ROC-AUC, ``test_max`` the best test ROC-AUC (the published protocol). One unit
per (dataset, seed); the split is saved with the run.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from pathlib import Path

import numpy as np
import torch

from .. import atomic, paths, seeding, units
from .spread import spread
from ..data.batching import GraphLoader, GraphStore
from ..data.moleculenet import load_molecule_csv, load_moleculenet
from ..data.molecules import VOCAB
from ..data.splits import scaffold_split
from ..devices import engine_of, resolve_device, runtime_info
from ..errors import ConfigError, DataError
from ..eval.metrics import roc_auc
from ..models.embed import embed
from ..models.mol_gin import MolPredictor, load_encoder
from ..train import FinetuneStrategy, Trainer
from ..train.optim import adam
from .base import Protocol
from .configs import SELECTIONS, FinetuneConfig

log = logging.getLogger(__name__)


def load_dataset(cfg: FinetuneConfig, data_root=None, workers: int | None = None, download: bool | None = None):
    if cfg.csv:
        return load_molecule_csv(cfg.csv, cfg.smiles_col, cfg.label_cols, workers=workers)
    return load_moleculenet(cfg.dataset, data_root, download=download, workers=workers)


def predict(model, loader) -> tuple[np.ndarray, np.ndarray]:
    """Labels (``graphs x tasks``, NaN = missing) and the model's logits, in eval mode."""
    scores, y = embed(model, loader)
    return y.reshape(scores.shape).numpy(), scores.numpy()


def build_model(cfg: FinetuneConfig, num_tasks: int) -> tuple[MolPredictor, dict]:
    """The predictor, with the pre-trained encoder loaded when ``cfg.checkpoint`` is set."""
    dim, layers, vocab, meta = cfg.dim, cfg.num_layers, VOCAB, {}
    state = None
    if cfg.checkpoint:
        state, arch, meta = load_encoder(cfg.checkpoint)
        dim, layers, vocab = arch["dim"], arch["num_layers"], arch.get("vocab", VOCAB)
    model = MolPredictor(num_tasks, vocab, dim, layers, cfg.dropout)
    if state is not None:
        missing, unexpected = model.encoder.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise ConfigError(f"{cfg.checkpoint} does not fit the molecule GIN "
                              f"(missing {missing[:3]}, unexpected {unexpected[:3]})")
    return model, meta


def select(rows: list[dict]) -> dict:
    """The reported epoch under each selection (first best; NaN scores never win)."""
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


def unscored_tasks(dataset, split: dict) -> dict:
    """Per split part, the tasks that ROC-AUC cannot score there (no label at all, or one
    class only), each logged once: the part's score averages the other tasks."""
    y = dataset._data.y.view(len(dataset), -1).numpy()
    tasks = list(dataset.meta.get("tasks") or range(y.shape[1]))
    out = {}
    for part in ("train", "valid", "test"):
        sub = y[np.asarray(split[part], dtype=int)]
        bad = []
        for t, name in enumerate(tasks):
            lab = sub[:, t][~np.isnan(sub[:, t])]
            if lab.size == 0 or lab.min() == lab.max():
                bad.append(str(name))
        if bad:
            scored = len(tasks) - len(bad)
            log.warning("%s: %d task(s) have no labels or one class in the %s part (%s); its ROC-AUC averages "
                        "the other %d", dataset.name, len(bad), part, ", ".join(bad[:5]) + (" ..." if len(bad) > 5
                                                                                         else ""), scored)
            if scored == 0 and part != "train":
                log.warning("%s: no task can be scored in the %s part: its ROC-AUC is NaN", dataset.name, part)
        out[part] = bad
    return out


def prepare_split(dataset, out_dir: Path, frac) -> dict:
    """The scaffold split of the dataset, computed once and saved in ``out_dir/split.json``
    (a saved split is reused after checking it belongs to the same molecules)."""
    path = Path(out_dir) / "split.json"
    n = len(dataset)
    digest = hashlib.sha256("\n".join(dataset.meta["smiles"]).encode()).hexdigest()
    if path.is_file():
        split = atomic.read_json(path)
        if split.get("smiles_sha256") == digest and split.get("frac") == list(frac):
            return split
        log.warning("%s was made for other molecules or fractions; computing the split again", path)
    split = scaffold_split(dataset.meta["smiles"], frac)
    sizes = {k: len(split[k]) for k in ("train", "valid", "test")}
    if min(sizes.values()) == 0:
        raise DataError(f"{dataset.name}: the scaffold split {sizes} leaves a part empty ({n} molecules, "
                        f"{split['num_scaffolds']} scaffolds); use more molecules or other fractions")
    split.update(num_graphs=n, frac=list(frac), kind="scaffold", sizes=sizes, smiles_sha256=digest)
    split["unscored_tasks"] = unscored_tasks(dataset, split)
    atomic.atomic_write_json(path, split)
    atomic.atomic_write_json(Path(out_dir) / "dataset.json",
                           {k: v for k, v in dataset.meta.items() if k not in ("smiles", "rows")})
    return split


def run_unit(unit: units.Unit, dataset, split: dict, show_progress: bool | None = None,
             ckpt_every: int = 10, device="cpu") -> dict:
    """Fine-tune one seed; resumes from ``unit.partial`` when a checkpoint is there."""
    cfg = FinetuneConfig.from_dict(unit.config)
    engine = engine_of(device)  # the device, and how training computes on it
    device = resolve_device(engine)
    work = units.start_work(unit, runtime_info(engine))
    loader_gen = seeding.seed_everything(unit.seed)
    num_tasks = int(dataset._data.y.shape[1])
    model, enc_meta = build_model(cfg, num_tasks)
    opt = adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    store = GraphStore.from_dataset(dataset).to(device)  # every part is batched from the one store

    def part(name):
        return torch.as_tensor(split[name], dtype=torch.long)

    train = part("train")
    # a last batch of one single-atom molecule would break BatchNorm: drop such a remainder
    train_loader = GraphLoader(store, batch_size=cfg.batch_size, shuffle=True, generator=loader_gen,
                               drop_last=len(train) % cfg.batch_size == 1, indices=train)
    val_loader = GraphLoader(store, batch_size=256, indices=part("valid"))
    test_loader = GraphLoader(store, batch_size=256, indices=part("test"))

    # the weights of the epoch the val selection reports (first best validation ROC-AUC), kept
    # with the checkpoint so that a resumed unit saves the same model
    # (a resumed fit replaces extra["best"] by the checkpoint's)
    extra = {"best": {"epoch": None, "val_auc": -math.inf, "state": None}}

    def evaluate(epoch):
        t0 = time.perf_counter()
        val_auc, n_val = roc_auc(*predict(model, val_loader))
        test_auc, n_test = roc_auc(*predict(model, test_loader))
        best = extra["best"]
        if val_auc > best["val_auc"]:  # NaN never wins
            best.update(epoch=epoch, val_auc=val_auc,
                        state={k: v.detach().cpu().clone() for k, v in model.state_dict().items()})
        return {"val_auc": val_auc, "test_auc": test_auc, "val_tasks": n_val, "test_tasks": n_test,
                "eval_time_s": time.perf_counter() - t0}

    trainer = Trainer(FinetuneStrategy(model, opt), device=engine, checkpoint=work / "checkpoint.pt",
                      loader_gen=loader_gen, ckpt_every=ckpt_every, ckpt_on_report=False, desc=unit.label,
                      show_progress=show_progress)
    rows = trainer.fit(train_loader, cfg.epochs, evaluate=evaluate, extra=extra)
    sel, best = select(rows), extra["best"]
    if best["state"] is not None:  # the model the val selection reports, else the last epoch's
        model.load_state_dict(best["state"])
    model_epoch = best["epoch"] if best["state"] is not None else rows[-1]["epoch"]
    write_outputs(work, model, dataset, split, test_loader, cfg, enc_meta)
    result = {
        "protocol": "transfer", "dataset": cfg.dataset, "seed": unit.seed,
        "pretrained": cfg.checkpoint is not None, "checkpoint": cfg.checkpoint,
        "encoder_meta": {k: v for k, v in enc_meta.items() if k != "pretrain_config"},
        "selection": cfg.select, "auc": sel[cfg.select]["auc"], "selections": sel,
        "num_tasks": num_tasks, "tasks_scored": {"val": rows[-1]["val_tasks"], "test": rows[-1]["test_tasks"]},
        "split_sizes": {k: len(split[k]) for k in ("train", "valid", "test")},
        "train_time_s": float(sum(r["time_s"] for r in rows)), "runtime": runtime_info(engine),
        "model_epoch": model_epoch,
        "outputs": {"model.pt": f"the predictor of epoch {model_epoch} (best validation ROC-AUC, the val selection's; "
                                "the last epoch when no epoch has one): autogcl.MoleculePredictor.load",
                    "predictions.csv": "that model's probability per task for every test molecule, and its labels"},
    }
    return units.publish(unit, rows, result)


def write_outputs(work: Path, model: MolPredictor, dataset, split: dict, test_loader, cfg: FinetuneConfig,
                  enc_meta: dict) -> None:
    """``model.pt`` (``model``, the fine-tuned predictor, as :class:`autogcl.MoleculePredictor`) and
    ``predictions.csv`` (per test molecule: dataset index, file row, SMILES, each task's
    probability and label, empty where missing), both written atomically."""
    from ..molecules import MoleculePredictor

    tasks = [str(t) for t in (dataset.meta.get("tasks") or range(model.head.out_features))]
    meta = {"encoder": enc_meta, "encoder_source": cfg.checkpoint, "dataset": cfg.dataset}
    MoleculePredictor.wrap(model, tasks, meta, cfg.dropout).save(work / "model.pt")
    y, logits = predict(model, test_loader)
    probs = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
    index = [int(i) for i in split["test"]]
    smiles, lines = dataset.meta.get("smiles"), dataset.meta.get("rows")
    out = []
    for k, i in enumerate(index):
        row = {"index": i, "row": lines[i] if lines else "", "smiles": smiles[i] if smiles else ""}
        for t, name in enumerate(tasks):
            row[f"prob_{name}"] = f"{probs[k, t]:.6g}"
            row[f"label_{name}"] = "" if np.isnan(y[k, t]) else int(y[k, t])
        out.append(row)
    atomic.atomic_write_csv(work / "predictions.csv", out)


def summarize(results: list[dict]) -> dict:
    out = {"n_seeds": len(results), "seeds": [r["seed"] for r in results]}
    for s in SELECTIONS:
        v = np.array([r["selections"][s]["auc"] for r in results], dtype=float) * 100
        out[s] = {"mean": float(np.mean(v)), "std": spread(v, "transfer"), "values": v.tolist()}
    out["train_time_s"] = float(np.mean([r["train_time_s"] for r in results]))
    return out


def plan(cfg: FinetuneConfig, seeds: list[int], out: Path, tag: str, data_root=None,
         show_progress: bool | None = None, workers: int | None = None, device="cpu",
         download: bool | None = None) -> units.Sweep:
    """The seeds of one dataset as a :class:`autogcl.units.Sweep` into ``out/tag/dataset/seedN``
    (``finish`` writes ``summary.json`` there)."""
    if not tag or tag in (".", "..") or "/" in tag or "\\" in tag:
        raise ConfigError(f"--tag {tag!r} must be a plain folder name (results go to OUT/TAG/DATASET): no '/', "
                          "not '.' or '..'")
    arch = {}
    if cfg.checkpoint:  # the encoder's architecture is the checkpoint's: record it (a bad file fails first)
        arch = dict(load_encoder(cfg.checkpoint)[1])
    dataset = load_dataset(cfg, data_root, workers, download)
    name = dataset.name if cfg.csv else cfg.dataset.lower()
    cfg = FinetuneConfig.from_dict({**cfg.to_dict(), "dataset": name, **arch})
    ddir = Path(out) / tag / name
    todo = [units.Unit(dir=ddir / f"seed{s}", config=cfg.to_dict(), seed=s, label=f"{tag} {name} seed {s}")
            for s in seeds]
    paths.check_writable(ddir)
    split = prepare_split(dataset, ddir, cfg.frac)

    def fn(u):
        r = run_unit(u, dataset, split, show_progress=show_progress, device=device)
        log.info("%s: val %.2f, test_max %.2f", u.label, 100 * r["selections"]["val"]["auc"],
                 100 * r["selections"]["test_max"]["auc"])
        return r

    def finish(results):
        summary = make_summary(cfg, results, ddir)
        atomic.atomic_write_json(ddir / "summary.json", summary)
        return summary

    return units.Sweep(todo, fn, finish)


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
        return [plan(cfg, run.seed_list, out, cfg.results_tag(run.tag), run.data_root, run.progress, run.workers,
                     run.engine, run.fetch)]

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
