"""How much of a digit can the MNIST view classifier read from the background alone?

The view figure's generators are trained by the classifier's loss on their views: they keep
the stroke superpixels only as far as dropping them costs accuracy. This trains the views
command's classifier (RelPosNet, its defaults: width 64, Adam lr 0.001, batch 64, the same
training part without the validation graphs) twice from the same seed: on the whole graphs,
and on views with every stroke superpixel (intensity >= 0.5) dropped (node weight 0, as
``--dropped weight`` does), each scored on the test graphs under the same view.

    python scripts/studies/mnist_background.py --data-root ../shared/data --epochs 2
"""

from __future__ import annotations

import argparse
import sys
import time


def background_view(graph, threshold: float = 0.5):
    """A copy of a superpixel graph whose stroke nodes (intensity, column 0, >= ``threshold``)
    have node weight 0 (dropped, as ``--dropped weight`` drops them) and the others 1."""
    g = graph.clone()
    g.node_weight = (g.x[:, 0] < threshold).float()
    return g


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=None, help="folder holding MNIST/raw/ (else $AUTOGCL_DATA, else the cache)")
    ap.add_argument("--epochs", type=int, default=2, help="training epochs of each classifier (default 2)")
    ap.add_argument("--limit", type=int, default=None, help="graphs per split (quick runs)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)

    import copy
    import functools

    import torch
    from torch_geometric.loader import DataLoader

    from autogcl import seeding
    from autogcl.data.mnist import POS_COLS
    from autogcl.errors import AutoGCLError
    from autogcl.eval.metrics import accuracy
    from autogcl.models.relpos import RelPosNet
    from autogcl.protocols.configs import ViewsConfig
    from autogcl.protocols.views import load_data, split_validation
    from autogcl.train import SupervisedStrategy, Trainer

    cfg = ViewsConfig(limit=args.limit)
    try:
        train, test = load_data(cfg, args.data_root)
    except AutoGCLError as exc:
        print(f"mnist_background.py: error: {exc}", file=sys.stderr)
        return 2
    train, _ = split_validation(train, cfg.seed)

    def background(ds):  # the same graphs, strokes dropped as each one is read (a PyG transform)
        ds = copy.copy(ds)
        ds.transform = functools.partial(background_view, threshold=cfg.high_intensity)
        return ds

    print("| classifier trained and scored on | test accuracy | epochs | seconds |\n|---|---|---|---|")
    for name, tr, te in (("whole graphs", train, test),
                         ("background only (strokes dropped)", background(train), background(test))):
        gen = seeding.seed_everything(cfg.seed)
        model = RelPosNet(train.num_features, 10, cfg.hidden, pos_cols=POS_COLS)
        loader = DataLoader(tr, batch_size=cfg.batch_size, shuffle=True, generator=gen,
                            drop_last=len(tr) % cfg.batch_size == 1)
        t0 = time.perf_counter()
        Trainer(SupervisedStrategy(model, torch.optim.Adam(model.parameters(), lr=cfg.lr)), loader_gen=gen,
                desc=name, show_progress=False if args.no_progress else None).fit(loader, args.epochs)
        acc = accuracy(model, DataLoader(te, batch_size=512))
        print(f"| {name} | {100 * acc:.1f}% | {args.epochs} | {time.perf_counter() - t0:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
