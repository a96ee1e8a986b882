"""The semi-supervised protocol (SPEC 3.2): 10-fold CV, 10% labels, ResGCN classifier.

A unit is one (dataset, row, seed, fold). Rows (experiments) compose a ResGCN classifier,
view generators or random augmentors and a strategy from :mod:`autogcl.train`; each fold
records per-epoch losses and labeled/val/test accuracy, and both selections: ``val`` (the
epoch with the best accuracy on the validation fold) and ``test_max`` (the best test
accuracy over epochs, the published protocol).
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
from torch_geometric.loader import DataLoader
from tqdm.auto import tqdm

from .. import runs
from ..augment import RandomAugmentor, ViewGenerator
from ..data.splits import FOLD_SEED, SemiSplit, semi_splits
from ..errors import ConfigError
from ..models.resgcn import ResGCN
from ..train import (
    GraphCLStrategy,
    JointReleasedStrategy,
    JointStrategy,
    LearnableAugStrategy,
    NaiveStrategy,
    SupervisedStrategy,
)

log = logging.getLogger(__name__)

ROWS = {
    "full": "supervised on all training data (labels of the whole training part)",
    "labeled": "supervised on the labeled 10% only",
    "graphcl_aug": "supervised on GraphCL random augmentations of the labeled data",
    "graphcl_cl": "GraphCL contrastive pre-training on the training part, then fine-tuning",
    "aug": "supervised on the two learnable views (CE(x1) + CE(x2) + lambda L_sim)",
    "naive": "AutoGCL naive strategy pre-training, then fine-tuning with L_cls(x, x1, x2)",
    "joint": "AutoGCL joint strategy: L_cl pass + L_cls + lambda L_sim pass",
    "joint_cls": "joint strategy ablation: L_cls only",
    "joint_cls_sim": "joint strategy ablation: L_cls + lambda L_sim",
    "joint_cl_cls": "joint strategy ablation: L_cl pass + L_cls",
    "joint_released": "the released code's joint variant (labeled batches only, L_sim + L_cls + L_cl)",
}
SMALL_BATCH = {"DD", "COLLAB", "REDDIT-BINARY", "REDDIT-MULTI-5K", "github_stargazers"}


@dataclass
class SemiConfig:
    dataset: str = "PROTEINS"
    row: str = "joint"
    feat: str = "deg+odeg100"
    epochs: int = 30
    pretrain_epochs: int = 30  # graphcl_cl and naive
    batch_size: int | None = None  # None: 128, or 64 for DD, COLLAB, REDDIT-*, GITHUB
    lr: float = 0.01
    label_rate: float = 0.1
    folds: int = 10
    fold_seed: int = FOLD_SEED
    hidden: int = 128
    lam: float = 1.0
    tau: float = 0.5
    cl_variant: str = "simclr"
    sim_loss: str = "cosine"
    add_mask: bool = False
    dropped: str = "isolate"
    mask_token: str = "scalar"
    aug: str = "random4"
    aug_ratio: float = 0.2
    select: str = "val"

    def __post_init__(self):
        if self.row not in ROWS:
            raise ConfigError(f"unknown row {self.row!r}; choose from {', '.join(ROWS)} (or all)")
        if self.select not in ("val", "test_max"):
            raise ConfigError(f"unknown selection {self.select!r}; choose val or test_max")
        if self.aug not in RandomAugmentor.names:
            raise ConfigError(f"unknown augmentation {self.aug!r}; choose from {', '.join(RandomAugmentor.names)}")
        if self.batch_size is None:
            self.batch_size = 64 if self.dataset in SMALL_BATCH else 128
        if self.epochs < 1 or self.pretrain_epochs < 0:
            raise ConfigError("--epochs must be at least 1")

    @property
    def tag(self) -> str:
        return f"{self.dataset}-{self.row}"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> SemiConfig:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def build(cfg: SemiConfig, num_features: int, num_classes: int):
    """(pre-training strategy or None, training strategy, which data each one trains on)."""
    model = ResGCN(num_features, num_classes, cfg.hidden)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
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
    opt_gen = torch.optim.Adam([*g1.parameters(), *g2.parameters()], lr=cfg.lr)
    if row == "aug":
        return None, LearnableAugStrategy(model, g1, g2, opt, opt_gen, cfg.lam, cfg.sim_loss), "labeled"
    if row == "joint_released":
        return None, JointReleasedStrategy(model, g1, g2, opt, opt_gen, tau=cfg.tau), "joint"
    if row == "naive":
        pre_opt = torch.optim.Adam([*model.parameters(), *g1.parameters(), *g2.parameters()], lr=cfg.lr)
        pre = NaiveStrategy(model, g1, g2, pre_opt, tau=cfg.tau, cl_variant=cfg.cl_variant,
                            sim_kind=cfg.sim_loss, encode=model.represent)
        fine = JointStrategy(model, g1, g2, opt, opt_gen, use_cl=False, use_sim=False)
        return pre, fine, "joint"
    use_cl = row in ("joint", "joint_cl_cls")
    use_sim = row in ("joint", "joint_cls_sim")
    strat = JointStrategy(model, g1, g2, opt, opt_gen, use_cl=use_cl, use_sim=use_sim, lam=cfg.lam,
                          tau=cfg.tau, cl_variant=cfg.cl_variant, sim_kind=cfg.sim_loss)
    return None, strat, "joint"


@torch.no_grad()
def accuracy(model, loader) -> float:
    model.eval()
    correct = total = 0
    for batch in loader:
        correct += int((model(batch).argmax(1) == batch.y.view(-1)).sum())
        total += int(batch.num_graphs)
    return correct / max(total, 1)


def select(rows: list[dict]) -> dict:
    best_val = max(rows, key=lambda r: r["val_acc"])  # first best on ties
    best_test = max(rows, key=lambda r: r["test_acc"])
    return {
        "val": {"epoch": best_val["epoch"], "acc": best_val["test_acc"], "criterion": "validation-fold accuracy"},
        "test_max": {"epoch": best_test["epoch"], "acc": best_test["test_acc"], "criterion": "best test accuracy"},
    }


def run_fold(unit: runs.Unit, dataset, split: SemiSplit, show_progress: bool | None = None,
             save_embeddings: list[int] | None = None) -> dict:
    """Train and evaluate one fold; written atomically into ``unit.dir``.

    ``save_embeddings``: epochs after which the classifier's representation of every graph of
    the dataset is saved (``embeddings_epoch{E}.npz``; epoch 0 = before training)."""
    cfg = SemiConfig.from_dict(unit.config)
    work = unit.partial
    if work.exists():
        shutil.rmtree(work)  # folds are short: an interrupted fold starts again
    work.mkdir(parents=True)
    gen = runs.seed_everything(unit.seed * 1000 + split.fold)
    pre, strat, data_kind = build(cfg, dataset.num_features, dataset.num_classes)
    bs = cfg.batch_size

    def loader(idx, shuffle):
        return DataLoader(dataset[torch.as_tensor(idx)], batch_size=bs, shuffle=shuffle,
                          generator=gen if shuffle else None)

    train_l, labeled_l = loader(split.train, True), loader(split.labeled, True)
    eval_l = {k: loader(getattr(split, k), False) for k in ("labeled", "val", "test")}
    train_data = {"train": train_l, "labeled": labeled_l, "joint": (train_l, labeled_l)}[data_kind]

    save_at = set(save_embeddings or [])
    all_l = DataLoader(dataset, batch_size=512, shuffle=False)

    def save_emb(epoch):
        if epoch in save_at:
            emb, y = strat.model.embed(all_l)
            np.savez_compressed(work / f"embeddings_epoch{epoch}.npz", emb=emb, y=y)

    save_emb(0)
    rows: list[dict] = []
    desc = f"{cfg.tag} seed {unit.seed} fold {split.fold}"
    if pre is not None:
        for epoch in tqdm(range(1, cfg.pretrain_epochs + 1), desc=desc + " pre-train", leave=False,
                          disable=None if show_progress is None else not show_progress):
            rows.append({"phase": "pretrain", "epoch": epoch, **pre.train_epoch(train_l, epoch)})
    bar = tqdm(range(1, cfg.epochs + 1), desc=desc, leave=False, unit="epoch",
               disable=None if show_progress is None else not show_progress)
    for epoch in bar:
        row = {"phase": "train", "epoch": epoch, **strat.train_epoch(train_data, epoch)}
        model = strat.model
        row.update({f"{k}_acc": accuracy(model, l) for k, l in eval_l.items()})
        rows.append(row)
        save_emb(epoch)
        bar.set_postfix(loss=f"{row['loss']:.3f}", val=f"{row['val_acc']:.3f}")
    bar.close()

    train_rows = [r for r in rows if r["phase"] == "train"]
    sel = select(train_rows)
    result = {
        "protocol": "semi", "dataset": cfg.dataset, "row": cfg.row, "tag": cfg.tag, "seed": unit.seed,
        "fold": split.fold, "selection": cfg.select, "acc": sel[cfg.select]["acc"], "selections": sel,
        "time_s": float(sum(r["time_s"] for r in rows)),
        "sizes": {k: len(getattr(split, k)) for k in ("labeled", "unlabeled", "val", "test")},
    }
    runs.atomic_write_csv(work / "metrics.csv", rows)
    runs.atomic_write_json(work / "config.json", unit.config)
    runs.atomic_write_json(work / "result.json", result)
    unit.finish()
    return result


def summarize(results: list[dict]) -> dict:
    """Mean ± std over every (seed, fold) result (std with ddof=1, as the released code)."""
    out = {"n_seeds": len({r["seed"] for r in results}), "n_folds": len(results)}
    for s in ("val", "test_max"):
        accs = np.array([r["selections"][s]["acc"] for r in results]) * 100
        out[s] = {"mean": float(accs.mean()), "std": float(accs.std(ddof=1)) if len(accs) > 1 else 0.0,
                  "values": accs.tolist()}
    out["time_per_fold_s"] = float(np.mean([r["time_s"] for r in results]))
    return out


def run_sweep(cfg: SemiConfig, dataset, seeds: list[int], out: Path, resume: bool = False,
              fold_limit: int | None = None, show_progress: bool | None = None,
              save_embeddings: list[int] | None = None) -> dict:
    """Every (seed, fold) unit of one row; splits are saved beside the folds."""
    root = Path(out) / cfg.tag
    y = dataset._data.y.numpy() if hasattr(dataset, "_data") else np.array([int(d.y) for d in dataset])
    plan = []
    for seed in seeds:
        splits = semi_splits(y, cfg.folds, cfg.label_rate, cfg.fold_seed, label_seed=seed)
        if fold_limit:
            splits = splits[:fold_limit]
        split_file = root / f"seed{seed}" / "splits.json"
        if split_file.is_file() and resume:
            saved = [SemiSplit.from_dict(d) for d in runs.read_json(split_file)["folds"]]
            if [s.to_dict() for s in saved] != [s.to_dict() for s in splits[:len(saved)]]:
                raise ConfigError(f"{split_file} differs from the splits this configuration makes")
        runs.atomic_write_json(split_file, {"dataset": cfg.dataset, "fold_seed": cfg.fold_seed,
                                            "label_seed": seed, "label_rate": cfg.label_rate,
                                            "folds": [s.to_dict() for s in splits]})
        for s in splits:
            plan.append((runs.Unit(dir=root / f"seed{seed}" / f"fold{s.fold}", config=cfg.to_dict(), seed=seed,
                                   label=f"{cfg.tag} seed {seed} fold {s.fold}"), s))
    units = [u for u, _ in plan]
    runs.check_resumable(units, resume)
    bar = tqdm(total=len(units), desc=f"{cfg.tag} folds", unit="fold",
               disable=None if show_progress is None else not show_progress)
    for unit, split in plan:
        if not unit.finished:
            r = run_fold(unit, dataset, split, show_progress, save_embeddings)
            log.info("%s: val %.2f, test_max %.2f", unit.label, 100 * r["selections"]["val"]["acc"],
                     100 * r["selections"]["test_max"]["acc"])
        bar.update(1)
    bar.close()
    results = [u.result() for u in units]
    summary = {"protocol": "semi", "tag": cfg.tag, "dataset": cfg.dataset, "row": cfg.row,
               "selection": cfg.select, "config": cfg.to_dict(), **summarize(results)}
    runs.atomic_write_json(root / "summary.json", summary)
    return summary
