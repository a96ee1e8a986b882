"""The pilots that chose the logP regression's settings (readout, dropout, learning rate and its
schedule, BatchNorm statistics): each fine-tunes the shipped encoder on bbbp's Crippen logP with
the scaffold split of ``scripts/studies/regression_logp.py`` and keeps only the training loss and the
validation scores per epoch (the test part is never read for a choice). ``run`` does one
setting (a process with one torch thread); ``collect`` gathers the pilots' files into
``docs/results/regression_logp_pilots.json``, which docs/api.md shows (through scripts/docs/docs.py).

    OMP_NUM_THREADS=1 python scripts/studies/regression_pilots.py run --name ss_d0_cos --readout scaled_sum \\
        --dropout 0 --lr-schedule cosine --epochs 12
    python scripts/studies/regression_pilots.py collect runs/pilot/*.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts" / "studies"))

from autogcl.atomic import atomic_write_json  # noqa: E402

OUT = REPO / "docs" / "results" / "regression_logp_pilots.json"
#: what a pilot keeps of each epoch: nothing of the test part
KEPT = ("epoch", "loss", "val_r2", "val_rmse")


def run(args) -> None:
    import torch

    import autogcl
    from regression_logp import DEFAULT_ENCODER, read_target

    torch.set_num_threads(1)
    smiles, target = read_target(args.data_root, args.dataset, "smiles")
    given = {k: getattr(args, k) for k in ("readout", "dropout", "lr", "lr_schedule", "bn_stats")
             if getattr(args, k) is not None}
    t0 = time.perf_counter()
    pred = autogcl.MoleculeEncoder.load(DEFAULT_ENCODER).finetune(
        smiles, target, tasks=["logP"], task="regression", epochs=args.epochs, split="scaffold", selection="val",
        seed=args.seed, device="cpu", progress=False, **given)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    atomic_write_json(Path(args.out_dir) / f"{args.name}.json", {
        "name": args.name, "dataset": args.dataset, "epochs": args.epochs, "seed": args.seed,
        "settings": {k: pred.hparams[k] for k in ("readout", "dropout", "lr", "lr_schedule", "bn_stats")},
        "history": [{k: r[k] for k in KEPT} for r in pred.history], "train_time_s": time.perf_counter() - t0,
        "code_commit": commit, "command": "OMP_NUM_THREADS=1 python scripts/studies/regression_pilots.py " +
        " ".join(sys.argv[1:])})


def collect(files: list[str], out: Path) -> None:
    pilots = [json.loads(Path(f).read_text(encoding="utf-8")) for f in files]
    for p in pilots:  # a pilot file keeps no test score; drop any a hand-made one carries
        p["history"] = [{k: r[k] for k in KEPT if k in r} for r in p["history"]]
    atomic_write_json(out, {"what": "validation scores of the settings tried for the logP regression "
                                    "(scaffold split, shipped encoder, seed 0); the test part is not read",
                            "pilots": pilots})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--name", required=True)
    r.add_argument("--data-root", default="../shared/data")
    r.add_argument("--dataset", default="bbbp")
    r.add_argument("--epochs", type=int, default=12)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--readout")
    r.add_argument("--dropout", type=float)
    r.add_argument("--lr", type=float)
    r.add_argument("--lr-schedule")
    r.add_argument("--bn-stats")
    r.add_argument("--out-dir", default=str(REPO / "runs" / "pilot"))
    c = sub.add_parser("collect")
    c.add_argument("files", nargs="+")
    c.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    if args.cmd == "run":
        run(args)
    else:
        collect(args.files, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
