"""Seconds per training epoch and peak memory, per method, on one dataset.

    python benchmarks/epoch_time.py PROTEINS --data-root ../shared/data [--epochs 5]
    python benchmarks/epoch_time.py PROTEINS --data-root ../shared/data --protocol semi \
        --methods joint joint_released labeled

Unsupervised methods: ``autogcl[:isolate|remove]``, ``graphcl``, and ``plain``: a supervised
5-layer GIN (the same encoder, a linear head, cross-entropy on the graph labels), the unit
in which ``benchmarks/speed.py`` states the others. Semi-supervised methods
are rows of ``autogcl semi``, timed on fold 0 (an epoch of ``joint`` is its unlabeled
contrastive pass plus its labeled pass). Each method runs in its own process so that its
peak resident memory (ru_maxrss) is its own; the first epoch is a warm-up, not counted.
``--_child fast-path`` times the AutoGCL step's fast path against its general path, epochs
alternated in one process (``python benchmarks/epoch_time.py PROTEINS --epochs 8 --_child
fast-path``). ``--_child compile`` times the AutoGCL step with its encoder under ``torch.compile``
(inductor, dynamic shapes) against eager, alternated the same way; its warm-up epoch (the
compilation) is reported apart. ``--_child batched-scorers`` times the two generators'
scorers (forward and backward) one after the other against one batched pass over both
(concatenated first-layer weights, ``torch.bmm`` for the rest), batch by batch, beside the
share of an AutoGCL epoch the scorers take. ``--saved`` also records the largest step's tensors saved for backward (the activations a
step holds, deduplicated by storage), ``--max-steps`` cuts epochs short (memory runs).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys


def measure_semi(args) -> dict:
    import torch
    from torch_geometric.loader import DataLoader

    from autogcl.data import load_tu
    from autogcl.data.splits import semi_splits
    from autogcl.protocols.semi import SemiConfig, estimator
    from autogcl.seeding import seed_everything

    ds = load_tu(args.dataset, args.data_root, args.feat)
    cfg = SemiConfig(dataset=ds.name, row=args.method, batch_size=args.batch_size)
    split = semi_splits(ds._data.y.numpy(), cfg.folds, cfg.label_rate)[0]
    gen = seed_everything(0)
    _, strategy, reads = estimator(cfg, ds.num_features, ds.num_classes).make_strategies()
    kind = "joint" if reads == "all" else "train" if cfg.row == "full" else "labeled"
    train = DataLoader(ds[torch.as_tensor(split.train)], batch_size=cfg.batch_size, shuffle=True, generator=gen)
    labeled = DataLoader(ds[torch.as_tensor(split.labeled)], batch_size=cfg.batch_size, shuffle=True, generator=gen)
    data = {"train": train, "labeled": labeled, "joint": (train, labeled)}[kind]
    times = [strategy.train_epoch(data, e)["time_s"] for e in range(args.epochs + 1)][1:]
    return {"method": args.method, "dropped": "-", "dataset": ds.name, "graphs": len(ds),
            "batch_size": cfg.batch_size, "threads": torch.get_num_threads(),
            "s_per_epoch": statistics.mean(times), "s_per_epoch_std": statistics.pstdev(times),
            "epochs": len(times), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def plain_strategy(num_features: int, num_classes: int, lr: float = 0.001):
    """The denominator: supervised 5-layer GIN (width 128) + linear head, one Adam step a batch."""
    import torch
    import torch.nn.functional as F

    from autogcl.models.gin import GINEncoder
    from autogcl.train.loop import Strategy

    class Plain(Strategy):
        def __init__(self):
            self.encoder = GINEncoder(num_features)
            self.model = torch.nn.Sequential()  # holds both, for modules() / train()
            self.model.add_module("encoder", self.encoder)
            self.model.add_module("head", torch.nn.Linear(self.encoder.out_dim, num_classes))
            self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)

        def step(self, batch, epoch, step):
            self.opt.zero_grad()
            loss = F.cross_entropy(self.model.head(self.encoder(batch)), batch.y.view(-1))
            loss.backward()
            self.opt.step()
            return {"loss": float(loss.detach())}

    return Plain()


class Limited:
    """The first ``n`` batches of a loader (``None``: all)."""

    def __init__(self, loader, n):
        self.loader, self.n = loader, n

    def __iter__(self):
        for i, b in enumerate(self.loader):
            if self.n is not None and i >= self.n:
                return
            yield b


def watch_saved(strategy) -> list:
    """Record the bytes of tensors saved for backward by each step (max over steps in [0])."""
    import torch

    peak, seen = [0], {}

    def pack(t):
        st = t.untyped_storage()
        seen[st.data_ptr()] = st.nbytes()
        return t

    step = strategy.step

    def watched(batch, epoch, i):
        seen.clear()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = step(batch, epoch, i)
        peak[0] = max(peak[0], sum(seen.values()))
        return out

    strategy.step = watched
    return peak


def setup(args):
    """The dataset (``args.dataset``, ``args.feat``), a shuffling loader seeded with 0, and
    ``make(method)``: a fresh strategy of an unsupervised method or of ``plain``."""
    from torch_geometric.loader import DataLoader

    from autogcl.data import load_tu
    from autogcl.protocols.unsupervised import UnsupervisedConfig, build_strategy
    from autogcl.seeding import seed_everything

    ds = load_tu(args.dataset, args.data_root, args.feat)
    gen = seed_everything(0)

    def make(method: str):
        if method == "plain":
            return plain_strategy(ds.num_features, ds.num_classes)
        cfg = UnsupervisedConfig(dataset=ds.name, method=method, batch_size=args.batch_size,
                                 dropped=args.dropped, epochs=args.epochs + 1, eval_epochs=[1])
        return build_strategy(cfg, ds.num_features)

    return ds, Limited(DataLoader(ds, batch_size=args.batch_size, shuffle=True, generator=gen), args.max_steps), make


def alternate(strategies: dict, loader, epochs: int) -> dict:
    """Seconds of each strategy's epochs, one epoch of each in turn (the warm-up dropped)."""
    times = {k: [] for k in strategies}
    for e in range(epochs + 1):
        for k, st in strategies.items():
            times[k].append(st.train_epoch(loader, e)["time_s"])
    return {k: v[1:] for k, v in times.items()}


def measure(args) -> dict:
    import torch

    ds, loader, make = setup(args)
    strategy = make(args.method)
    saved = watch_saved(strategy) if args.saved else None
    data_mb = sum(v.numel() * v.element_size() for v in ds._data.to_dict().values()
                  if isinstance(v, torch.Tensor)) / 2**20
    times = alternate({args.method: strategy}, loader, args.epochs)[args.method]
    return {"method": args.method, "dropped": args.dropped if args.method == "autogcl" else "-",
            "saved_mb": saved[0] / 2**20 if saved else None, "dataset_mb": data_mb, "dataset": ds.name,
            "graphs": len(ds), "batch_size": args.batch_size,
            "threads": torch.get_num_threads(), "s_per_epoch": statistics.mean(times),
            "s_per_epoch_std": statistics.pstdev(times), "epochs": len(times),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure_paired(args) -> dict:
    """Epochs of ``plain`` and ``args.method`` alternated in one process (round r: one epoch of
    each), so that a drift of the machine's speed hits both: the ratio of each round."""
    import torch

    ds, loader, make = setup(args)
    times = alternate({"plain": make("plain"), args.method: make(args.method)}, loader, args.epochs)
    ratios = [m / p for m, p in zip(times[args.method], times["plain"])]
    return {"method": args.method, "dataset": ds.name, "threads": torch.get_num_threads(),
            "plain_s": times["plain"], "method_s": times[args.method], "ratios": ratios,
            "ratio_median": statistics.median(ratios)}


def measure_fast_path(args) -> dict:
    """The AutoGCL step's fast path against the general one (both generators called as
    ``gen(batch)``, the step before the shared neighbour sum and the skipped views), epochs
    alternated in one process on the same model: seconds per epoch and the per-round ratio."""
    import copy

    import torch

    class General(torch.nn.Module):  # not a ViewGenerator: NaiveStrategy takes the general path
        def __init__(self, gen):
            super().__init__()
            self.gen = gen

        def forward(self, batch):
            return self.gen(batch)

    ds, loader, make = setup(args)
    fast = make("autogcl")
    general = copy.copy(fast)
    general.gen1, general.gen2 = General(fast.gen1), General(fast.gen2)
    times = alternate({"general": general, "fast": fast}, loader, args.epochs)
    ratios = [f / g for f, g in zip(times["fast"], times["general"])]
    return {"dataset": ds.name, "threads": torch.get_num_threads(), "fast_s": times["fast"],
            "general_s": times["general"], "ratios": ratios, "ratio_median": statistics.median(ratios)}


def measure_compile(args) -> dict:
    """The AutoGCL step with ``torch.compile`` of its encoder against eager, epochs alternated
    in one process: the first (compiling) epoch's seconds, then seconds per epoch and ratios."""
    import time

    import torch

    ds, loader, make = setup(args)
    eager, compiled = make("autogcl"), make("autogcl")
    compiled.model.encoder = torch.compile(compiled.model.encoder, dynamic=True)
    t0 = time.perf_counter()
    compiled.train_epoch(loader, 0)
    first = time.perf_counter() - t0
    times = alternate({"eager": eager, "compiled": compiled}, loader, args.epochs)
    ratios = [c / e for c, e in zip(times["compiled"], times["eager"])]
    return {"dataset": ds.name, "threads": torch.get_num_threads(), "compile_epoch_s": first,
            "compiled_s": times["compiled"], "eager_s": times["eager"], "ratios": ratios,
            "ratio_median": statistics.median(ratios)}


def batched_scores(scorers, data, first):
    """Both GIN scorers' logits in one pass: the hidden states of the two side by side
    (nodes x 2 hidden), the first Linear layer as one product (both read the same input),
    the others as ``torch.bmm`` over the two weight matrices, one neighbour sum per layer and
    one BatchNorm over the concatenated features. Same arithmetic as the scorers one by one
    (up to floating-point summation order)."""
    import torch
    import torch.nn.functional as F

    a, b = scorers
    n, x = data.num_nodes, data.x
    for i, (ca, cb, ba, bb) in enumerate(zip(a.convs, b.convs, a.bns, b.bns)):
        if i == 0:  # both read x (eps is 0 and not trained: GINConv's default)
            h = first + x
            la, lb = ca.nn[0], cb.nn[0]
            h = F.linear(h, torch.cat([la.weight, lb.weight]), torch.cat([la.bias, lb.bias]))
        else:
            h = ca.propagate(data.edge_index, x=(x, x), size=None) + x  # x: nodes x 2 hidden
            w = torch.stack([ca.nn[0].weight, cb.nn[0].weight]).transpose(1, 2)
            h = torch.baddbmm(torch.stack([ca.nn[0].bias, cb.nn[0].bias]).unsqueeze(1),
                              h.view(n, 2, -1).transpose(0, 1), w)
            h = h.transpose(0, 1).reshape(n, -1)
        h = F.relu(h).view(n, 2, -1).transpose(0, 1)
        w = torch.stack([ca.nn[2].weight, cb.nn[2].weight]).transpose(1, 2)
        h = torch.baddbmm(torch.stack([ca.nn[2].bias, cb.nn[2].bias]).unsqueeze(1), h, w)
        h = F.relu(h).transpose(0, 1).reshape(n, -1)
        x = F.batch_norm(h, None, None, torch.cat([ba.weight, bb.weight]), torch.cat([ba.bias, bb.bias]),
                         training=True, eps=ba.eps)
    return x.view(n, 2, -1).unbind(1)


def measure_batched_scorers(args) -> dict:
    """The two scorers one by one (as the AutoGCL step runs them) against
    :func:`batched_scores`, forward and backward, alternated batch by batch over the
    dataset: seconds per epoch of scorer work, the largest output difference, and the share
    of an AutoGCL epoch the scorers take."""
    import time

    import torch

    from autogcl.augment.learnable import shared_first_aggregate

    ds, loader, make = setup(args)
    st = make("autogcl")
    scorers = [st.gen1.scorer, st.gen2.scorer]
    rounds, diff = [], 0.0
    for _ in range(args.epochs + 1):
        t = {"apart": 0.0, "batched": 0.0}
        for batch in loader:
            first = shared_first_aggregate([st.gen1, st.gen2], batch)
            for k in ("apart", "batched"):
                t0 = time.perf_counter()
                out = [s(batch, first) for s in scorers] if k == "apart" else batched_scores(scorers, batch, first)
                sum(o.sum() for o in out).backward()
                t[k] += time.perf_counter() - t0
                if k == "apart":
                    ref = [o.detach() for o in out]
                else:
                    diff = max(diff, *(float((o.detach() - r).abs().max()) for o, r in zip(out, ref)))
        rounds.append(t)
    rounds = rounds[1:]
    epoch = alternate({"autogcl": st}, loader, args.epochs)["autogcl"]
    ratios = [r["batched"] / r["apart"] for r in rounds]
    return {"dataset": ds.name, "threads": torch.get_num_threads(),
            "apart_s": [r["apart"] for r in rounds], "batched_s": [r["batched"] for r in rounds],
            "ratios": ratios, "ratio_median": statistics.median(ratios), "max_abs_diff": diff,
            "autogcl_epoch_s": epoch,
            "scorer_share": statistics.median(r["apart"] for r in rounds) / statistics.median(epoch)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset")
    p.add_argument("--data-root", default=None)
    p.add_argument("--feat", default="deg+odeg100")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--epochs", type=int, default=5, help="timed epochs (after one warm-up)")
    p.add_argument("--protocol", default="unsupervised", choices=["unsupervised", "semi"])
    p.add_argument("--methods", nargs="+", default=None,
                   help="unsupervised: method[:dropped-mode] (default autogcl autogcl:remove graphcl); "
                   "semi: rows (default joint joint_released labeled)")
    p.add_argument("--max-steps", type=int, default=None, help="batches per epoch (default: all)")
    p.add_argument("--saved", action="store_true", help="record the largest step's saved activations")
    p.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args._child:
        alternated = {"fast-path": measure_fast_path, "compile": measure_compile,
                      "batched-scorers": measure_batched_scorers}
        if args._child in alternated:
            args.dropped = "isolate"
            print(json.dumps(alternated[args._child](args)))
            return
        if args._child.startswith("paired:"):  # paired:METHOD
            args.method, args.dropped = args._child.split(":", 1)[1], "isolate"
            print(json.dumps(measure_paired(args)))
            return
        args.method, _, args.dropped = args._child.partition(":")
        args.dropped = args.dropped or "isolate"
        print(json.dumps(measure(args) if args.protocol == "unsupervised" else measure_semi(args)))
        return
    if args.methods is None:
        args.methods = (["autogcl", "autogcl:remove", "graphcl"] if args.protocol == "unsupervised"
                        else ["joint", "joint_released", "labeled"])
    rows = []
    for m in args.methods:
        cmd = [sys.executable, __file__, args.dataset, "--feat", args.feat, "--batch-size",
               str(args.batch_size), "--epochs", str(args.epochs), "--protocol", args.protocol, "--_child", m]
        cmd += ["--saved"] if args.saved else []
        cmd += ["--max-steps", str(args.max_steps)] if args.max_steps else []
        if args.data_root:
            cmd += ["--data-root", args.data_root]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    print(f"{args.protocol} protocol")
    print(f"{'method':14} {'dropped':8} {'dataset':10} {'batch':>5} {'s/epoch':>14} {'peak RSS':>10}")
    for r in rows:
        print(f"{r['method']:14} {r['dropped']:8} {r['dataset']:10} {r['batch_size']:5d} "
              f"{r['s_per_epoch']:7.3f} ± {r['s_per_epoch_std']:.3f} {r['peak_rss_mb']:7.0f} MB")
    print(f"({rows[0]['epochs']} timed epochs after 1 warm-up, {rows[0]['threads']} torch threads)")


if __name__ == "__main__":
    main()
