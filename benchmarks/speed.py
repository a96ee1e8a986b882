"""Speed and memory of the default unsupervised protocol, in plain-GIN epochs, in one run.

    python benchmarks/speed.py --data-root ../shared/data [--label before] [--only epochs seed memory help]

Every figure is stated beside a denominator measured in the same run: the seconds of one
epoch of a plain supervised 5-layer GIN (``benchmarks/epoch_time.py``'s ``plain``: the same
encoder, a linear head, cross-entropy, batch 128) on the same dataset. So a figure from a
slower or busier machine stays comparable. What it measures, each in its own process:

* ``epochs``: seconds per epoch of ``plain``, ``autogcl`` (default options) and ``graphcl``
  on each of ``--datasets`` (5 timed epochs after a warm-up), and their ratio to ``plain``;
  the peak RSS of each training process.
* ``seed``: the wall time of a whole seed, ``autogcl unsupervised --dataset D --seeds 1``
  (training, 3 SVM evaluations, start-up), in seconds and in plain epochs, and its peak RSS.
* ``memory``: the import floor (``import torch, torch_geometric, sklearn.svm``) and DD's
  peak RSS at several batch sizes, beside the largest step's activations (tensors saved for
  backward) at that batch.
* ``help``: the seconds of ``autogcl --help`` and of every command's ``--help`` (best of 3).

Results are appended to ``benchmarks/results/speed.json`` under ``--label``; run it on a
quiet machine (nothing else running).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EPOCH_TIME = HERE / "epoch_time.py"
HELP_COMMANDS = ["", "unsupervised", "semi", "ablate", "report", "transfer", "transfer pretrain",
                 "transfer finetune", "visualize", "visualize views", "visualize curves", "visualize tsne"]


def run_measured(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) of that process alone (os.wait4), and its stdout."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        if proc.returncode:
            sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{err.read()[-3000:]}")
        return wall, usage.ru_maxrss / 1024, out.read()


def epoch_child(args, dataset: str, method: str, extra=()) -> dict:
    cmd = [sys.executable, str(EPOCH_TIME), dataset, "--epochs", str(args.epochs), "--_child", method, *extra]
    cmd += ["--data-root", args.data_root] if args.data_root else []
    _, _, out = run_measured(cmd)
    return json.loads(out.strip().splitlines()[-1])


def autogcl_cmd() -> list[str]:
    exe = shutil.which("autogcl")
    return [exe] if exe else [sys.executable, "-m", "autogcl"]


def section_epochs(args, res: dict) -> None:
    for ds in args.datasets:
        rows = {m: epoch_child(args, ds, m) for m in ("plain", "autogcl", "graphcl")}
        plain = rows["plain"]["s_per_epoch"]
        for m, r in rows.items():
            r["plain_epochs"] = r["s_per_epoch"] / plain
            print(f"  epoch {ds:9} {m:8} {r['s_per_epoch']:7.3f} s = {r['plain_epochs']:5.2f} plain, "
                  f"peak RSS {r['peak_rss_mb']:5.0f} MB", flush=True)
        res.setdefault("epochs", {})[ds] = rows


def section_seed(args, res: dict) -> None:
    for ds in args.seed_datasets:
        plain = res.get("epochs", {}).get(ds, {}).get("plain") or epoch_child(args, ds, "plain")
        out = Path(tempfile.mkdtemp(prefix="speed-seed-"))
        cmd = autogcl_cmd() + ["unsupervised", "--dataset", ds, "--seeds", "1", "--out", str(out), "--no-progress"]
        cmd += ["--data-root", args.data_root] if args.data_root else []
        wall, rss, _ = run_measured(cmd)
        result = json.loads(next(out.rglob("result.json")).read_text())
        shutil.rmtree(out, ignore_errors=True)
        row = {"wall_s": wall, "plain_s_per_epoch": plain["s_per_epoch"],
               "plain_epochs": wall / plain["s_per_epoch"], "train_time_s": result["train_time_s"],
               "eval_time_s": result["eval_time_s"], "peak_rss_mb": rss, "val_acc": result["selections"]["val"]["acc"]}
        print(f"  seed  {ds:9} {wall:7.1f} s = {row['plain_epochs']:5.1f} plain epochs "
              f"(train {row['train_time_s']:.1f} s, SVM {row['eval_time_s']:.1f} s), peak RSS {rss:.0f} MB", flush=True)
        res.setdefault("seed", {})[ds] = row


def section_memory(args, res: dict) -> None:
    code = ("import resource, torch, torch_geometric, sklearn.svm; "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    _, _, out = run_measured([sys.executable, "-c", code])
    floor = float(out.strip().splitlines()[-1])
    mem = {"import_floor_mb": floor, "dd": {}}
    print(f"  memory import floor {floor:.0f} MB", flush=True)
    prot = res.get("epochs", {}).get("PROTEINS", {}).get("autogcl")
    if prot:
        mem["proteins_train_mb"] = prot["peak_rss_mb"]
        print(f"  memory PROTEINS autogcl training {prot['peak_rss_mb']:.0f} MB "
              f"(floor + {prot['peak_rss_mb'] - floor:.0f})", flush=True)
    for b in args.dd_batches:
        r = epoch_child(args, "DD", "autogcl", ["--batch-size", str(b), "--saved", "--max-steps",
                                                 str(args.dd_steps), "--epochs", "1"])
        mem["dd"][str(b)] = {"peak_rss_mb": r["peak_rss_mb"], "saved_mb": r["saved_mb"],
                             "s_per_step": r["s_per_epoch"] / args.dd_steps}
        print(f"  memory DD batch {b:4d}: peak RSS {r['peak_rss_mb']:5.0f} MB, largest step's activations "
              f"{r['saved_mb']:5.0f} MB", flush=True)
    res["memory"] = mem


def section_help(args, res: dict) -> None:
    times = {}
    for c in HELP_COMMANDS:
        best = min(run_measured(autogcl_cmd() + c.split() + ["--help"])[0] for _ in range(3))
        times[c or "(top)"] = best
        print(f"  help  autogcl {c + ' ' if c else ''}--help: {best:.2f} s", flush=True)
    res["help"] = times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-root", default=None)
    p.add_argument("--label", default="run", help="name of this run in the results file (e.g. before, after)")
    p.add_argument("--only", nargs="+", default=["epochs", "seed", "memory", "help"],
                   choices=["epochs", "seed", "memory", "help"])
    p.add_argument("--datasets", nargs="+", default=["PROTEINS", "NCI1"])
    p.add_argument("--seed-datasets", nargs="+", default=["PROTEINS", "NCI1"])
    p.add_argument("--epochs", type=int, default=5, help="timed epochs (after one warm-up)")
    p.add_argument("--dd-batches", nargs="+", type=int, default=[32, 64, 128])
    p.add_argument("--dd-steps", type=int, default=4, help="DD steps per batch size (memory only)")
    p.add_argument("--out", default=str(HERE / "results" / "speed.json"))
    args = p.parse_args()

    import torch

    res = {"label": args.label, "date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.machine(),
           "cores": os.cpu_count(), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
           "python": platform.python_version()}
    del torch
    t0 = time.perf_counter()
    for name in ("epochs", "seed", "memory", "help"):
        if name in args.only:
            print(f"[{name}]", flush=True)
            globals()[f"section_{name}"](args, res)
    res["bench_wall_s"] = time.perf_counter() - t0
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    runs = json.loads(out.read_text()) if out.exists() else []
    runs.append(res)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(runs, indent=1))
    os.replace(tmp, out)
    print(f"appended to {out}")


if __name__ == "__main__":
    main()
