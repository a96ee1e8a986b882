"""Transfer pre-training throughput (molecules per second) and peak memory, per method.

    python benchmarks/pretrain_throughput.py --data-root ../shared/data [--molecules 20000] \
        [--steps 30] [--methods autogcl graphcl] [--threads 2]

Featurises the first ``--molecules`` SMILES of the MOSES corpus (or ``--corpus``) into one
chunk (timed: featurising molecules/s on all cores), then times ``--steps`` optimizer
steps of batch 256 after 3 warm-up steps. Each method runs in its own process so that its
peak resident memory (ru_maxrss) is its own. Prints a table and one JSON line per method.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def measure(args) -> dict:
    import torch
    from torch_geometric.loader import DataLoader

    from autogcl.data.corpus import MoleculeCorpus
    from autogcl.protocols.pretrain import (
        PretrainConfig,
        build_strategy,
        resolve_corpus,
    )
    from autogcl.seeding import seed_everything

    torch.set_num_threads(args.threads)
    path = resolve_corpus(args.corpus, args.data_root)
    corpus = MoleculeCorpus(path, max_molecules=args.molecules, chunk_size=args.molecules, progress=False)
    t0 = time.perf_counter()
    corpus.prepare()
    feat_s = time.perf_counter() - t0
    ds = corpus.load(0)
    cfg = PretrainConfig(method=args.method, batch_size=args.batch_size)
    gen = seed_everything(0)
    strategy = build_strategy(cfg)
    for m in strategy.modules().values():
        m.train()
    loader = iter(DataLoader(ds, batch_size=args.batch_size, shuffle=True, drop_last=True, generator=gen))
    for _ in range(3):
        strategy.step(next(loader), 1, 0)
    n, t0 = 0, time.perf_counter()
    for i in range(args.steps):
        batch = next(loader)
        strategy.step(batch, 1, i)
        n += int(batch.num_graphs)
    dt = time.perf_counter() - t0
    return {"method": args.method, "threads": torch.get_num_threads(), "batch_size": args.batch_size,
            "steps": args.steps, "molecules": n, "seconds": dt, "molecules_per_s": n / dt,
            "featurise_molecules_per_s": args.molecules / feat_s if feat_s > 0.5 else None,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-root", default=None)
    p.add_argument("--corpus", default="")
    p.add_argument("--molecules", type=int, default=20_000)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--methods", nargs="+", default=["autogcl", "graphcl"])
    p.add_argument("--method", default=None, help=argparse.SUPPRESS)  # child process
    args = p.parse_args()
    if args.method:
        print(json.dumps(measure(args)))
        return 0
    rows = []
    for m in args.methods:
        cmd = [sys.executable, __file__, "--method", m, "--molecules", str(args.molecules), "--steps",
               str(args.steps), "--batch-size", str(args.batch_size), "--threads", str(args.threads),
               "--corpus", args.corpus] + (["--data-root", args.data_root] if args.data_root else [])
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    print("| method | threads | batch | molecules/s | peak memory (MB) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['method']} | {r['threads']} | {r['batch_size']} | {r['molecules_per_s']:.0f} | "
              f"{r['peak_rss_mb']:.0f} |")
    for r in rows:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
