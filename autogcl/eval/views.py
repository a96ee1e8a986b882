"""View visualisation (SPEC 3.4): train two learnable view generators jointly with a
classifier until the classifier is accurate on the generated views, then measure which
nodes the views keep and draw them beside GraphCL's random node dropping.

Training is the labeled pass of the joint strategy on every training graph:
L_cls(x, x1, x2) + lambda * L_sim, with the mask operation on by default.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from sklearn.model_selection import train_test_split
from torch_geometric.data import Batch
from torch_geometric.loader import DataLoader
from tqdm.auto import tqdm

from .. import runs
from ..augment import ViewGenerator
from ..augment.learnable import KEEP, MASK
from ..augment.random import node_drop_mask
from ..data import load_tu
from ..data.mnist import load_mnist_superpixels, read_idx_images
from ..models.resgcn import ResGCN
from ..train import JointStrategy
from .semi import accuracy

log = logging.getLogger(__name__)


@dataclass
class ViewsConfig:
    dataset: str = "MNIST"
    target_acc: float = 0.9
    max_epochs: int = 30
    batch_size: int = 128
    lr: float = 0.01
    lam: float = 1.0
    add_mask: bool = True
    # dropped nodes are removed from the views the classifier sees: isolated zero-feature
    # nodes (the released default) skew its BatchNorm statistics and its eval-mode accuracy
    dropped: str = "remove"
    hidden: int = 128
    seed: int = 0
    limit: int | None = None  # graphs per split, for quick runs
    drop_ratio: float = 0.2  # GraphCL node dropping shown beside
    high_intensity: float = 0.5  # superpixels at or above this mean intensity count as strokes


def load_data(cfg: ViewsConfig, data_root=None):
    """(train, test) datasets: MNIST superpixels, or a TU dataset split 80/20 (stratified)."""
    if cfg.dataset.upper() == "MNIST":
        tr = load_mnist_superpixels(data_root, "train", limit=cfg.limit, seed=cfg.seed)
        te = load_mnist_superpixels(data_root, "test", limit=cfg.limit, seed=cfg.seed)
        return tr, te
    ds = load_tu(cfg.dataset, data_root)
    y = ds._data.y.numpy()
    tr, te = train_test_split(np.arange(len(ds)), test_size=0.2, stratify=y, random_state=cfg.seed)
    if cfg.limit:
        tr, te = tr[: cfg.limit], te[: cfg.limit]
    return ds[torch.as_tensor(tr)], ds[torch.as_tensor(te)]


@torch.no_grad()
def view_accuracy(model, gens, loader) -> float:
    """Classifier accuracy on generated views (mean over the generators)."""
    model.eval()
    for g in gens:
        g.eval()
    correct = total = 0
    for batch in loader:
        for g in gens:
            view, _ = g(batch)
            correct += int((model(view).argmax(1) == batch.y.view(-1)).sum())
            total += int(batch.num_graphs)
    return correct / max(total, 1)


def train_generators(cfg: ViewsConfig, train_ds, test_ds, show_progress=None):
    """Train until the view accuracy on the test part reaches the target (or max epochs)."""
    loader_gen = runs.seed_everything(cfg.seed)
    nf = train_ds.num_features
    nc = int(max(int(train_ds._data.y.max()), int(test_ds._data.y.max())) + 1)
    model = ResGCN(nf, nc, cfg.hidden)
    gens = [ViewGenerator(nf, 128, 2, add_mask=cfg.add_mask, dropped=cfg.dropped) for _ in range(2)]
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    opt_gen = torch.optim.Adam([*gens[0].parameters(), *gens[1].parameters()], lr=cfg.lr)
    strat = JointStrategy(model, *gens, opt, opt_gen, use_cl=False, use_sim=True, lam=cfg.lam)
    train_l = DataLoader(train_ds, batch_size=cfg.batch_size, shuffle=True, generator=loader_gen)
    test_l = DataLoader(test_ds, batch_size=512)
    history = []
    bar = tqdm(range(1, cfg.max_epochs + 1), desc=f"{cfg.dataset} generators + classifier", unit="epoch",
               disable=None if show_progress is None else not show_progress)
    for epoch in bar:
        row = {"epoch": epoch, **strat.train_epoch((None, train_l), epoch)}
        row["test_acc"] = accuracy(model, test_l)
        row["view_acc"] = view_accuracy(model, gens, test_l)
        history.append(row)
        bar.set_postfix(view_acc=f"{row['view_acc']:.3f}")
        log.info("epoch %d: loss %.3f, test accuracy %.3f, accuracy on generated views %.3f",
                 epoch, row["loss"], row["test_acc"], row["view_acc"])
        if row["view_acc"] >= cfg.target_acc:
            break
    bar.close()
    return model, gens, history


@torch.no_grad()
def view_masks(gens, batch, drop_ratio: float) -> dict:
    """name -> (kept, masked) boolean node arrays of the views of ``batch``."""
    out = {}
    for i, g in enumerate(gens, 1):
        g.eval()
        s = g.sample(batch)
        masked = (s[:, MASK] > 0) if g.add_mask else torch.zeros(batch.num_nodes, dtype=torch.bool)
        out[f"AutoGCL view {i}"] = ((s[:, KEEP] > 0) | masked, masked)
    out[f"GraphCL node drop {drop_ratio:g}"] = (node_drop_mask(batch, drop_ratio),
                                                torch.zeros(batch.num_nodes, dtype=torch.bool))
    return out


@torch.no_grad()
def kept_shares(gens, loader, drop_ratio: float, threshold: float) -> dict:
    """For each view: share of high-intensity (>= threshold) and of other nodes kept."""
    counts: dict = {}
    for batch in loader:
        high = batch.x[:, 0] >= threshold
        for name, (kept, _) in view_masks(gens, batch, drop_ratio).items():
            c = counts.setdefault(name, np.zeros(4))
            c += [int((kept & high).sum()), int(high.sum()), int((kept & ~high).sum()), int((~high).sum())]
    return {name: {"high_intensity_kept": c[0] / c[1], "other_kept": c[2] / c[3],
                   "all_kept": (c[0] + c[2]) / (c[1] + c[3]), "high_intensity_nodes": int(c[1]),
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


def run(cfg: ViewsConfig, out_dir: Path, data_root=None, n_examples: int = 6, show_progress=None) -> dict:
    train_ds, test_ds = load_data(cfg, data_root)
    model, gens, history = train_generators(cfg, train_ds, test_ds, show_progress)
    reached = history[-1]["view_acc"]
    out_dir = Path(out_dir)
    title = (f"{cfg.dataset}: views of two learnable generators trained with a classifier "
             f"(accuracy on generated views {100 * reached:.1f}% after {len(history)} epochs)")
    written = draw(cfg, gens, test_ds, out_dir / "views.png", n_examples, data_root, title)
    result = {"config": asdict(cfg), "epochs": len(history), "view_acc": reached,
              "test_acc": history[-1]["test_acc"], "target_reached": reached >= cfg.target_acc,
              "history": history, "figures": [str(p) for p in written]}
    if cfg.dataset.upper() == "MNIST":
        torch.manual_seed(cfg.seed)
        result["kept_shares"] = kept_shares(gens, DataLoader(test_ds, batch_size=512), cfg.drop_ratio,
                                            cfg.high_intensity)
    runs.atomic_save({"model": model.state_dict(), "gen1": gens[0].state_dict(), "gen2": gens[1].state_dict()},
                     out_dir / "model.pt")
    runs.atomic_write_json(out_dir / "views.json", result)
    return result
