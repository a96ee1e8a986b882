"""Speed and memory of the default unsupervised protocol, in plain-GIN epochs, in one run.

    python benchmarks/speed.py --data-root ../shared/data [--label before] [--only epochs seed memory help]

Every figure is stated beside a denominator measured in the same run: the seconds of one
epoch of a plain supervised 5-layer GIN (``benchmarks/epoch_time.py``'s ``plain``: the same
encoder, a linear head, cross-entropy, batch 128) on the same dataset. So a figure from a
slower or busier machine stays comparable. What it measures, each in its own process:

* ``epochs``: seconds per epoch of ``plain``, ``autogcl`` (default options) and ``graphcl``
  on each of ``--datasets`` (5 timed epochs after a warm-up), and their ratio to ``plain``
  (timed before and after the others; the mean of the two); the peak RSS of each process.
  Then each method again, its epochs alternated with plain epochs in one process: the median
  of the per-round ratios, the figure least moved by a drift of the machine's speed.
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
        # plain first and last: the machine's speed may drift, the denominator is their mean
        first = epoch_child(args, ds, "plain")
        rows = {m: epoch_child(args, ds, m) for m in ("autogcl", "graphcl")}
        last = epoch_child(args, ds, "plain")
        plain = (first["s_per_epoch"] + last["s_per_epoch"]) / 2
        rows = {"plain": {**first, "s_per_epoch": plain, "s_per_epoch_runs": [first["s_per_epoch"],
                                                                              last["s_per_epoch"]]}, **rows}
        paired = {m: epoch_child(args, ds, f"paired:{m}") for m in ("autogcl", "graphcl")}
        for m, r in rows.items():
            r["plain_epochs"] = r["s_per_epoch"] / plain
            if m in paired:
                r["paired"] = paired[m]
            print(f"  epoch {ds:9} {m:8} {r['s_per_epoch']:7.3f} s = {r['plain_epochs']:5.2f} plain, "
                  f"peak RSS {r['peak_rss_mb']:5.0f} MB" + (f"; alternated in one process: {paired[m]['ratio_median']:.2f} "
                  f"plain (rounds {', '.join(f'{x:.2f}' for x in paired[m]['ratios'])})" if m in paired else ""),
                  flush=True)
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
                             "dataset_mb": r.get("dataset_mb"), "s_per_step": r["s_per_epoch"] / args.dd_steps}
        print(f"  memory DD batch {b:4d}: peak RSS {r['peak_rss_mb']:5.0f} MB, largest step's activations "
              f"{r['saved_mb']:5.0f} MB, dataset tensors {r.get('dataset_mb') or 0:4.0f} MB", flush=True)
    res["memory"] = mem


def section_help(args, res: dict) -> None:
    times = {}
    for c in HELP_COMMANDS:
        best = min(run_measured(autogcl_cmd() + c.split() + ["--help"])[0] for _ in range(3))
        times[c or "(top)"] = best
        print(f"  help  autogcl {c + ' ' if c else ''}--help: {best:.2f} s", flush=True)
    res["help"] = times


#: the released AutoGCL code, run unmodified on this machine in an earlier session (README,
#: "Performance"); plain-GIN units where that session measured the denominator
RELEASED = {
    "epoch PROTEINS": "2.6 plain (1.1 s)", "epoch NCI1": "3.3 s", "seed PROTEINS": "279 plain (1:57)",
    "seed NCI1": "19:52", "rss PROTEINS": "~1 GB", "help": "-",
}


def table(results: list[dict], labels: list[str]) -> str:
    """A Markdown table of the runs named ``labels``: the runs with one label merged in order
    (a later run's section, e.g. its epochs of one dataset, replaces an earlier one's)."""
    def merged(label):
        out = {}
        for r in results:
            if r["label"] != label:
                continue
            for k, v in r.items():
                out[k] = {**out[k], **v} if isinstance(v, dict) and isinstance(out.get(k), dict) else v
        if not out:
            raise SystemExit(f"no run labelled {label!r} in the results")
        return out

    runs = [merged(lab) for lab in labels]

    def cell(r, fn):
        try:
            return fn(r)
        except (KeyError, TypeError):
            return "-"

    def mmss(s):
        return f"{int(s // 60)}:{s % 60:04.1f}"

    rows = []
    for ds in ("PROTEINS", "NCI1"):
        for m in ("autogcl", "graphcl"):
            rows.append((f"{m} epoch, {ds} (goal autogcl <= 2.0)" if m == "autogcl" else f"{m} epoch, {ds}",
                         lambda r, ds=ds, m=m: f"{r['epochs'][ds][m]['paired']['ratio_median']:.2f} plain "
                                               f"alternated, {r['epochs'][ds][m]['plain_epochs']:.2f} apart "
                                               f"({r['epochs'][ds][m]['s_per_epoch']:.2f} s)"
                         if "paired" in r["epochs"][ds][m] else f"{r['epochs'][ds][m]['plain_epochs']:.2f} plain "
                                                                 f"({r['epochs'][ds][m]['s_per_epoch']:.2f} s)",
                         RELEASED.get(f"epoch {ds}", "-") if m == "autogcl" else "-"))
        rows.append((f"plain GIN epoch, {ds} (the denominator)",
                     lambda r, ds=ds: f"{r['epochs'][ds]['plain']['s_per_epoch']:.2f} s", "-"))
    rows.append(("whole seed, PROTEINS (goal <= 80 plain)",
                 lambda r: f"{r['seed']['PROTEINS']['plain_epochs']:.0f} plain ({mmss(r['seed']['PROTEINS']['wall_s'])}; "
                           f"SVM {r['seed']['PROTEINS']['eval_time_s']:.0f} s)", RELEASED["seed PROTEINS"]))
    rows.append(("whole seed, NCI1 (goal <= 2 min on the day of the goal)",
                 lambda r: f"{r['seed']['NCI1']['plain_epochs']:.0f} plain ({mmss(r['seed']['NCI1']['wall_s'])}; "
                           f"SVM {r['seed']['NCI1']['eval_time_s']:.0f} s)", RELEASED["seed NCI1"]))
    rows.append(("import floor (torch + PyG + scikit-learn)", lambda r: f"{r['memory']['import_floor_mb']:.0f} MB", "-"))
    rows.append(("peak RSS, PROTEINS autogcl training (goal <= floor + 150)",
                 lambda r: f"{r['memory']['proteins_train_mb']:.0f} MB (floor + "
                           f"{r['memory']['proteins_train_mb'] - r['memory']['import_floor_mb']:.0f})",
                 RELEASED["rss PROTEINS"]))
    rows.append(("peak RSS, whole PROTEINS seed", lambda r: f"{r['seed']['PROTEINS']['peak_rss_mb']:.0f} MB", "-"))
    for b in ("32", "64", "128"):
        rows.append((f"peak RSS, DD autogcl, batch {b} (largest step's activations)",
                     lambda r, b=b: f"{r['memory']['dd'][b]['peak_rss_mb']:.0f} MB ({r['memory']['dd'][b]['saved_mb']:.0f} MB)",
                     "-"))
    rows.append(("`autogcl --help`", lambda r: f"{r['help']['(top)']:.2f} s", "-"))
    rows.append(("slowest command `--help` (goal <= 1 s)",
                 lambda r: "{1:.2f} s ({0})".format(*max(((k, v) for k, v in r["help"].items() if k != "(top)"),
                                                         key=lambda kv: kv[1])), "-"))
    head = "| figure | " + " | ".join(f"{lab} ({r['date']})" for lab, r in zip(labels, runs)) + " | released code |"
    lines = [head, "|" + "---|" * (len(runs) + 2)]
    for name, fn, rel in rows:
        lines.append(f"| {name} | " + " | ".join(cell(r, fn) for r in runs) + f" | {rel} |")
    return "\n".join(lines)


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
    p.add_argument("--table", nargs="+", metavar="LABEL", default=None,
                   help="print the Markdown table of the runs with these labels and exit")
    args = p.parse_args()
    if args.table:
        if not Path(args.out).is_file():
            sys.exit(f"no results at {args.out}: run the benchmark first (or name the file with --out)")
        print(table(json.loads(Path(args.out).read_text()), args.table))
        return

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
