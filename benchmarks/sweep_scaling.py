"""Wall time of the same units run serially and on Ray, in one run.

    python benchmarks/sweep_scaling.py --data-root ../shared/data [--dataset PROTEINS] [--epochs 30]

The units are the unsupervised protocol's on one dataset: autogcl and graphcl x seeds 0 and
1 (default options, so a unit is a whole seed: training and SVM evaluations). ``serial`` runs
them one after the other in one process with torch's default threads (all cores), as
``autogcl unsupervised`` does by default; ``ray`` starts a local Ray cluster sized to this
machine and runs them as tasks of one CPU (one torch thread) each, as ``--executor ray``
does. Each mode runs in its own fresh process and output folder; the wall time counts
everything from the first unit to the last result (Ray's cluster start and stop included),
not the dataset loading. Results go to ``benchmarks/results/sweep_scaling_<dataset>.json``.
Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one_mode(args) -> dict:
    import torch

    from autogcl.data import load_tu
    from autogcl.executors import make_executor
    from autogcl.protocols.unsupervised import UnsupervisedConfig, plan
    from autogcl.units import run_sweeps

    ds = load_tu(args.dataset, args.data_root)
    out = Path(tempfile.mkdtemp(prefix=f"sweep-{args.mode}-"))
    extra = {"epochs": args.epochs} if args.epochs else {}
    sweeps = [plan(UnsupervisedConfig(dataset=ds.name, method=m, **extra), ds, [0, 1], out, n_jobs=1,
                   show_progress=False) for m in ("autogcl", "graphcl")]
    executor = make_executor(args.mode)
    t0 = time.perf_counter()
    summaries = run_sweeps(sweeps, False, args.mode, show_progress=False, executor=executor)
    wall = time.perf_counter() - t0
    units = [json.loads((u.dir / "result.json").read_text()) for s in sweeps for u in s.units]
    return {"mode": args.mode, "wall_s": wall, "units": len(units),
            "unit_threads": sorted({u["runtime"]["torch_threads"] for u in units}),
            "unit_train_s": [round(u["train_time_s"], 2) for u in units],
            "val_acc": {s["method"]: round(s["val"]["mean"], 2) for s in summaries},
            "driver_threads": torch.get_num_threads()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="PROTEINS")
    p.add_argument("--data-root", default=None)
    p.add_argument("--epochs", type=int, default=None, help="default: the protocol's (30)")
    p.add_argument("--mode", choices=("serial", "ray"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.mode:
        print(json.dumps(one_mode(args)))
        return
    rows = []
    for mode in ("serial", "ray"):
        cmd = [sys.executable, __file__, "--dataset", args.dataset, "--mode", mode]
        cmd += ["--data-root", args.data_root] if args.data_root else []
        cmd += ["--epochs", str(args.epochs)] if args.epochs else []
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"{mode} run failed:\n{done.stderr[-3000:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"{mode:>6}: {rows[-1]['wall_s']:7.1f} s for {rows[-1]['units']} units "
              f"(torch threads per unit {rows[-1]['unit_threads']}; val acc {rows[-1]['val_acc']})", flush=True)
    ratio = rows[0]["wall_s"] / rows[1]["wall_s"]
    print(f" ratio: Ray is {ratio:.2f}x faster than serial on {os.cpu_count()} cores")
    record = {"dataset": args.dataset, "epochs": args.epochs or 30, "cores": os.cpu_count(),
              "machine": platform.processor() or platform.machine(), "serial": rows[0], "ray": rows[1],
              "ratio": ratio, "date": time.strftime("%Y-%m-%d"),
              "command": "python benchmarks/sweep_scaling.py " + " ".join(sys.argv[1:])}
    dest = Path(__file__).parent / "results" / f"sweep_scaling_{args.dataset}.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps(record, indent=2) + "\n")
    print(f"written to {dest}")


if __name__ == "__main__":
    main()
