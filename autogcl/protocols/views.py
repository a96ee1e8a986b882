"""View visualisation (the AutoGCL paper's view figure; docs/method.md): train two learnable
view generators jointly with a classifier until the classifier is accurate on the generated
views, then measure which nodes the views keep and draw them beside GraphCL's random node
dropping.

Training is the labeled pass of the joint strategy on every training graph:
L_cls(x, x1, x2) + lambda * L_sim, with the mask operation on by default. The classifier
is ResGCN for TU datasets and, on MNIST superpixels, :class:`autogcl.models.relpos.RelPosNet`, which looks at the
offsets between neighbouring superpixels (ResGCN's sum of GCN messages over absolute
positions learns slowly there). On superpixels the generators are
:class:`autogcl.augment.learnable.GeometryKeepingGenerator`: masking hides a node's intensity, not its position.

Measured on MNIST (``autogcl visualize views`` at the defaults, seeds 0-2: the table of the
tutorial, generated from ``docs/results/views_MNIST/``): the default target is 0.7, not the
paper's 0.9 (the tutorial says why).
At the target, in every seed one view keeps a larger share of stroke (high-intensity)
superpixels than of the rest; the other does too in one seed and keeps fewer strokes than
background in two. The classifier reads a digit from its
background nearly as well as from its strokes (``scripts/studies/mnist_background.py``), so the
classification loss gives the generators little reason to keep strokes.
"""

from __future__ import annotations

from ..choices import MASK_FEATURE
import logging
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from sklearn.model_selection import train_test_split
from torch_geometric.data import Batch

from .. import atomic, seeding, units
from ..augment import ViewGenerator
from ..augment.learnable import KEEP, MASK, GeometryKeepingGenerator
from ..augment.random import node_drop_mask
from ..data import load_tu
from ..data.batching import GraphLoader
from ..data.mnist import POS_COLS, load_mnist_superpixels, read_idx_images
from ..devices import engine_of, resolve_device, runtime_info
from ..errors import ConfigError
from ..eval.metrics import accuracy
from ..models.relpos import RelPosNet
from ..models.resgcn import ResGCN
from ..train import JointStrategy, SupervisedStrategy, Trainer, to_device
from ..train.optim import adam
from .configs import CLASSIFIER_DEFAULTS, ViewsConfig  # noqa: F401 (re-exported)

log = logging.getLogger(__name__)



def make_models(cfg: ViewsConfig, num_features: int, num_classes: int):
    """The classifier and the two generators (2-layer GIN scorers of width 128) of ``cfg``."""
    if cfg.classifier == "relpos":
        model = RelPosNet(num_features, num_classes, cfg.hidden, pos_cols=POS_COLS)
        gens = [GeometryKeepingGenerator(num_features, 128, 2, add_mask=cfg.add_mask, dropped=cfg.dropped,
                                         mask_token=MASK_FEATURE, geometry=POS_COLS) for _ in range(2)]
    else:
        model = ResGCN(num_features, num_classes, cfg.hidden)
        gens = [ViewGenerator(num_features, 128, 2, add_mask=cfg.add_mask, dropped=cfg.dropped)
                for _ in range(2)]
    return model, gens


def load_data(cfg: ViewsConfig, data_root=None, download: bool | None = None):
    """(train, test) datasets: MNIST superpixels, or a TU dataset split 80/20 (stratified)."""
    if cfg.dataset.upper() == "MNIST":
        tr = load_mnist_superpixels(data_root, "train", limit=cfg.limit, seed=cfg.seed)
        te = load_mnist_superpixels(data_root, "test", limit=cfg.limit, seed=cfg.seed)
        return tr, te
    ds = load_tu(cfg.dataset, data_root, download=download)
    y = ds._data.y.numpy()
    tr, te = train_test_split(np.arange(len(ds)), test_size=0.2, stratify=y, random_state=cfg.seed)
    if cfg.limit:
        tr, te = tr[: cfg.limit], te[: cfg.limit]
    return ds[torch.as_tensor(tr)], ds[torch.as_tensor(te)]


@torch.no_grad()
def view_accuracy(model, gens, loader, device=None) -> float:
    """Classifier accuracy on generated views (mean over the generators)."""
    model.eval()
    for g in gens:
        g.eval()
    correct = total = 0
    for batch in loader:
        batch = to_device(batch, device)
        for g in gens:
            view, _ = g(batch)
            correct += int((model(view).argmax(1) == batch.y.view(-1)).sum())
            total += int(batch.num_graphs)
    return correct / max(total, 1)


def split_validation(train_ds, seed: int, fraction: float = 0.1):
    """(fit, val): a stratified ``fraction`` of the training graphs held out to decide when
    to stop, so that the test graphs (measured and drawn) never choose the epoch."""
    y = train_ds._data.y[torch.as_tensor(list(train_ds.indices()))].view(-1).numpy()
    counts = np.unique(y, return_counts=True)[1]
    stratify = y if counts.min() >= 2 and round(fraction * len(y)) >= len(counts) else None  # tiny runs
    fit, val = train_test_split(np.arange(len(train_ds)), test_size=fraction, stratify=stratify,
                                random_state=seed)
    return train_ds[torch.as_tensor(fit)], train_ds[torch.as_tensor(val)]


def check_size(cfg: ViewsConfig, train_ds) -> None:
    if len(train_ds) < 20:
        raise ConfigError(f"{cfg.dataset}: {len(train_ds)} training graphs are too few to train on and hold out "
                          "validation graphs from (at least 20; raise --limit)")


def train_generators(cfg: ViewsConfig, train_ds, test_ds, show_progress=None, device="cpu",
                     checkpoint_dir: Path | None = None):
    """Train until the view accuracy on a validation part of the training graphs reaches the
    target (or max epochs); the test accuracies are recorded beside it. With
    ``checkpoint_dir``, each phase checkpoints there after every epoch and continues from its
    checkpoint (``warmup.pt``, ``checkpoint.pt``) when one is there. ``device``: a device option
    or an :class:`~autogcl.devices.Engine` (``--deterministic``: both phases train under PyTorch's
    deterministic kernels)."""
    engine = engine_of(device)
    device = resolve_device(engine)
    check_size(cfg, train_ds)
    train_ds, val_ds = split_validation(train_ds, cfg.seed)
    loader_gen = seeding.seed_everything(cfg.seed)
    nf = train_ds.num_features
    nc = int(max(int(train_ds._data.y.max()), int(test_ds._data.y.max())) + 1)
    model, gens = make_models(cfg, nf, nc)
    opt = adam(model.parameters(), lr=cfg.lr)
    opt_gen = adam([*gens[0].parameters(), *gens[1].parameters()], lr=cfg.gen_lr)
    strat = JointStrategy(model, *gens, opt, opt_gen, use_cl=False, use_sim=True, lam=cfg.lam).to(device)
    train_l = GraphLoader(train_ds, batch_size=cfg.batch_size, shuffle=True, generator=loader_gen,
                          drop_last=len(train_ds) % cfg.batch_size == 1, device=device)  # BatchNorm needs 2 graphs
    test_l = GraphLoader(test_ds, batch_size=512, device=device)
    val_l = GraphLoader(val_ds, batch_size=512, device=device)
    # wall seconds of training over every (re)start: carried in the checkpoints (Trainer's extra)
    clock, tick = {"wall_s": 0.0}, time.perf_counter()

    def wall() -> float:
        nonlocal tick
        now = time.perf_counter()
        clock["wall_s"] += now - tick
        tick = now
        return clock["wall_s"]
    mnist = cfg.dataset.upper() == "MNIST"

    def warm_eval(epoch):
        row = {"test_acc": accuracy(model, test_l, device), "wall_s": wall()}
        log.info("warm-up epoch %d: test accuracy %.3f (%.0f s)", epoch, row["test_acc"], row["wall_s"])
        return row

    def joint_eval(epoch):
        row = {"test_acc": accuracy(model, test_l, device),
               "val_view_acc": view_accuracy(model, gens, val_l, device),  # decides when to stop
               "view_acc": view_accuracy(model, gens, test_l, device)}
        if mnist:
            shares = kept_shares(gens, test_l, cfg.drop_ratio, cfg.high_intensity, device)
            for i in (1, 2):
                k = shares[f"AutoGCL view {i}"]
                row[f"view{i}_high_kept"], row[f"view{i}_other_kept"] = k["high_intensity_kept"], k["other_kept"]
                row[f"view{i}_high_masked"], row[f"view{i}_other_masked"] = (k["high_intensity_masked"],
                                                                             k["other_masked"])
        row["wall_s"] = wall()
        log.info("epoch %d: test accuracy %.3f, accuracy on generated views %.3f (validation %.3f) (%.0f s) %s",
                 epoch, row["test_acc"], row["view_acc"], row["val_view_acc"], row["wall_s"],
                 " ".join(f"{k} {v:.2f}" for k, v in row.items()
                          if k.startswith("view") and ("kept" in k or "mask" in k)))
        return row

    # the classifier alone on the original graphs, then generators and classifier together
    def ckpt(name: str) -> Path | None:
        return None if checkpoint_dir is None else Path(checkpoint_dir) / name

    history = Trainer(SupervisedStrategy(model, opt), device=engine, checkpoint=ckpt("warmup.pt"),
                      loader_gen=loader_gen, desc="warm-up", show_progress=show_progress).fit(
        train_l, cfg.warmup_epochs, evaluate=warm_eval, row_fields={"phase": "warmup"}, extra=clock)
    history += Trainer(strat, device=engine, checkpoint=ckpt("checkpoint.pt"), loader_gen=loader_gen,
                       desc=f"{cfg.dataset} generators + classifier", show_progress=show_progress).fit(
        (None, train_l), cfg.max_epochs, evaluate=joint_eval, row_fields={"phase": "joint"}, extra=clock,
        stop=lambda row: row["val_view_acc"] >= cfg.target_acc)
    return model, gens, history


@torch.no_grad()
def view_masks(gens, batch, drop_ratio: float) -> dict:
    """name -> (kept, masked) boolean node arrays of the views of ``batch``."""
    out = {}
    for i, g in enumerate(gens, 1):
        g.eval()
        s = g.sample(batch)
        masked = (s[:, MASK] > 0) if g.add_mask else torch.zeros(batch.num_nodes, dtype=torch.bool, device=s.device)
        out[f"AutoGCL view {i}"] = (((s[:, KEEP] > 0) | masked).cpu(), masked.cpu())
    out[f"GraphCL node drop {drop_ratio:g}"] = (node_drop_mask(batch, drop_ratio).cpu(),
                                                torch.zeros(batch.num_nodes, dtype=torch.bool))
    return out


@torch.no_grad()
def kept_shares(gens, loader, drop_ratio: float, threshold: float, device=None) -> dict:
    """For each view: share of high-intensity (>= threshold) and of other nodes kept (kept
    or masked), and masked."""
    counts: dict = {}
    for batch in loader:
        batch = to_device(batch, device)
        high = (batch.x[:, 0] >= threshold).cpu()
        for name, (kept, masked) in view_masks(gens, batch, drop_ratio).items():
            c = counts.setdefault(name, np.zeros(6))
            c += [int((kept & high).sum()), int(high.sum()), int((kept & ~high).sum()), int((~high).sum()),
                  int((masked & high).sum()), int((masked & ~high).sum())]
    return {name: {"high_intensity_kept": c[0] / c[1], "other_kept": c[2] / c[3],
                   "all_kept": (c[0] + c[2]) / (c[1] + c[3]), "high_intensity_masked": c[4] / c[1],
                   "other_masked": c[5] / c[3], "high_intensity_nodes": int(c[1]),
                   "other_nodes": int(c[3])} for name, c in counts.items()}


def pick_examples(test_ds, n: int) -> list[int]:
    """Indices of the first test graph of each class, then more, up to ``n``."""
    y = test_ds._data.y.numpy() if test_ds._indices is None else np.array([int(d.y) for d in test_ds])
    first = [int(np.flatnonzero(y == c)[0]) for c in np.unique(y)]
    rest = [i for i in range(len(y)) if i not in first]
    return (first + rest)[:n]


def draw(cfg: ViewsConfig, gens, test_ds, out: Path, n: int, data_root=None, title: str = "") -> list[Path]:
    from ..viz.views import draw_views

    idx = pick_examples(test_ds, n)
    graphs = [test_ds[i] for i in idx]
    batch = Batch.from_data_list(graphs)
    torch.manual_seed(cfg.seed)
    masks = view_masks(gens, batch, cfg.drop_ratio)
    per_graph = []
    for g in range(len(graphs)):
        sel = batch.batch == g
        per_graph.append({k: (kept[sel].numpy(), masked[sel].numpy()) for k, (kept, masked) in masks.items()})
    images = labels = None
    if getattr(graphs[0], "idx", None) is not None and cfg.dataset.upper() == "MNIST":
        from ..data.mnist import IMAGES_FILE

        raw = Path(test_ds.meta["raw_dir"]) / IMAGES_FILE
        all_images = read_idx_images(raw)
        images = [all_images[int(g.idx)] for g in graphs]
        labels = [f"digit {int(g.y)}" for g in graphs]
    return draw_views(graphs, per_graph, out, images, title, labels)


def run(cfg: ViewsConfig, out_dir: Path, data_root=None, n_examples: int = 6, show_progress=None,
        device="cpu", download: bool | None = None, resume: bool = False, restart_damaged: bool = False) -> dict:
    """Train and write the run folder ``out_dir``: ``views.png`` (+ .svg), ``model.pt``,
    ``views.json`` (= ``result.json``), ``metrics.csv``. The run is one unit of
    :func:`autogcl.units.run_units`: it checkpoints after every epoch, ``resume`` continues an
    interrupted run (or keeps a finished one), and the folder appears only when finished."""
    out_dir = Path(out_dir)
    if (out_dir / "views.json").is_file() and not (out_dir / "result.json").is_file():
        raise ConfigError(f"--out {out_dir} holds a views run of an earlier autogcl (views.json, no result.json), "
                          "which cannot be resumed; delete it or name another folder")
    units.check_run_folder(out_dir, "views")
    engine = engine_of(device)
    resolve_device(engine)  # a CUDA device that is not there: an error before any work
    unit = units.Unit(dir=out_dir, config=asdict(cfg), seed=cfg.seed, label=f"views {cfg.dataset}")

    def fn(unit):
        train_ds, test_ds = load_data(cfg, data_root, download)
        check_size(cfg, train_ds)  # before anything is written
        work = units.start_work(unit, runtime_info(engine))
        model, gens, history = train_generators(cfg, train_ds, test_ds, show_progress, engine, checkpoint_dir=work)
        model, gens = model.cpu(), [g.cpu() for g in gens]
        last = history[-1]
        epochs = sum(r["phase"] == "joint" for r in history)
        warm = f" + {cfg.warmup_epochs} warm-up" if cfg.warmup_epochs else ""
        title = (f"{cfg.dataset}: views of two learnable generators trained with a {cfg.classifier} classifier "
                 f"(accuracy on generated views {100 * last['view_acc']:.1f}% after {epochs}{warm} epochs)")
        written = draw(cfg, gens, test_ds, work / "views.png", n_examples, data_root, title)
        result = {"config": asdict(cfg), "epochs": epochs, "warmup_epochs": cfg.warmup_epochs,
                  "view_acc": last["view_acc"], "val_view_acc": last["val_view_acc"], "test_acc": last["test_acc"],
                  "target_reached": last["val_view_acc"] >= cfg.target_acc, "wall_s": last["wall_s"],
                  "stopping": "validation view accuracy (10% of the training graphs); accuracies and shares on test",
                  "train_graphs": len(train_ds), "test_graphs": len(test_ds),
                  "history": history, "figures": [str(out_dir / p.name) for p in written],
                  "runtime": runtime_info(engine)}
        if cfg.dataset.upper() == "MNIST":
            torch.manual_seed(cfg.seed)
            result["kept_shares"] = kept_shares(gens, GraphLoader(test_ds, batch_size=512), cfg.drop_ratio,
                                                cfg.high_intensity)
        atomic.atomic_save({"model": model.state_dict(), "gen1": gens[0].state_dict(),
                          "gen2": gens[1].state_dict()}, work / "model.pt")
        result = units.with_commit(result)  # views.json is result.json, code commit included
        atomic.atomic_write_json(work / "views.json", result)
        result = units.publish(unit, history, result)
        (unit.dir / "warmup.pt").unlink(missing_ok=True)  # once published: until then a resume needs it
        return result

    return units.run_units([unit], fn, resume, f"views {cfg.dataset}", what="run", show_progress=False,
                          restart_damaged=restart_damaged, lock_folder=False)[0]
