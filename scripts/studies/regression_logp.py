"""Molecule regression with the shipped encoder on a real property: RDKit's Crippen logP of the
molecules of a MoleculeNet CSV, fine-tuned with ``MoleculeEncoder.finetune(task="regression")``
on a scaffold split, scored on the held-out scaffolds, beside the same recipe from random
weights (no pre-training) and, with ``--random-split``, on a random split. Each run is a
process of its own (``--jobs`` at a time, one torch thread each). Writes a small JSON that
docs/api.md shows (through scripts/docs/docs.py).

    OMP_NUM_THREADS=1 python scripts/studies/regression_logp.py --data-root ../shared/data \\
        --out docs/results/regression_logp.json
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import autogcl  # noqa: E402
from autogcl.atomic import atomic_write_json  # noqa: E402
from autogcl.data.molecules import open_text, rdkit  # noqa: E402
from autogcl.molecules import DEFAULT_ENCODER  # noqa: E402


def crippen_logp(smiles: list[str]) -> list[float]:
    """RDKit's Crippen logP (Wildman and Crippen 1999) per SMILES; NaN where RDKit gives no
    molecule (those rows are also skipped by the featurisation)."""
    from rdkit.Chem import Crippen

    Chem = rdkit()
    out = []
    for s in smiles:
        mol = Chem.MolFromSmiles(s)
        out.append(Crippen.MolLogP(mol) if mol is not None else float("nan"))
    return out


#: the runs of the record: (key, split, from random weights); the first is the headline
RUNS = (("pretrained", "scaffold", False), ("from_scratch", "scaffold", True), ("random_split", "random", False))
SPLITS = {"scaffold": "scaffold 80/10/10 (Bemis-Murcko; test scaffolds unseen in training)",
          "random": "random 80/10/10 (seeded; test molecules may share scaffolds with training)"}
METRICS = ("rmse", "mae", "r2")
#: the recipe's settings a record states (those given, else ``finetune``'s defaults)
SETTINGS = ("dropout", "lr", "lr_schedule", "bn_stats", "readout", "readout_scale", "batch_size", "weight_decay")


def read_target(data_root: str, dataset: str, smiles_col: str) -> tuple[list[str], list[float]]:
    """The SMILES of a MoleculeNet CSV that RDKit parses, and their Crippen logP."""
    path = Path(data_root) / "moleculenet" / f"{dataset}.csv"
    with open_text(path) as f:
        smiles = [row[smiles_col] for row in csv.DictReader(f)]
    target = crippen_logp(smiles)
    keep = [i for i, v in enumerate(target) if v == v]
    return [smiles[i] for i in keep], [target[i] for i in keep]


def fit_one(args, split: str, from_scratch: bool) -> dict:
    """One fine-tuning run (in a process of its own): its held-out scores at the selected epoch
    and its history."""
    torch.set_num_threads(1)
    smiles, target = read_target(args.data_root, args.dataset, args.smiles_col)
    encoder = autogcl.MoleculeEncoder.load(args.encoder)
    t0 = time.perf_counter()
    pred = encoder.finetune(smiles, target, tasks=["logP"], task="regression", epochs=args.epochs, split=split,
                            dropout=args.dropout, lr=args.lr, readout=args.readout, lr_schedule=args.lr_schedule,
                            bn_stats=args.bn_stats, from_scratch=from_scratch, selection="val", seed=args.seed,
                            device="cpu", progress=False)
    seconds = time.perf_counter() - t0
    best = next(r for r in pred.history if r["epoch"] == pred.selected_epoch)
    return {"split": SPLITS[split], "from_scratch": from_scratch, "molecules": pred.hparams["molecules"],
            "split_sizes": pred.hparams["split_sizes"], "selected_epoch": pred.selected_epoch,
            "test": {k: best[f"test_{k}"] for k in METRICS}, "valid": {k: best[f"val_{k}"] for k in METRICS},
            "history": [{k: r[k] for k in ("epoch", "loss", "val_rmse", "val_r2", "test_rmse", "test_r2")}
                        for r in pred.history],
            "train_time_s": seconds, "target": target,
            "settings": {k: pred.hparams[k] for k in SETTINGS}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-root", default="../shared/data")
    p.add_argument("--dataset", default="bbbp", help="a MoleculeNet CSV of the data root's moleculenet/ folder")
    p.add_argument("--smiles-col", default="smiles")
    p.add_argument("--encoder", default=DEFAULT_ENCODER)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--dropout", type=float, help="dropout inside the GIN (default: the recipe's)")
    p.add_argument("--lr", type=float, help="Adam's learning rate (default: the recipe's)")
    p.add_argument("--lr-schedule", help="constant or cosine (autogcl.choices.LR_SCHEDULES; default: the recipe's)")
    p.add_argument("--bn-stats", help="running or settled (autogcl.choices.BN_STATS; default: the recipe's)")
    p.add_argument("--readout", help="the predictor's pooling (autogcl.choices.READOUTS; default: the recipe's)")
    p.add_argument("--random-split", action="store_true", help="also fine-tune on a random split")
    p.add_argument("--jobs", type=int, default=1, help="runs at a time, each a process with one torch thread")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=REPO / "docs" / "results" / "regression_logp.json")
    args = p.parse_args(argv)

    runs = [r for r in RUNS if args.random_split or r[1] != "random"]
    git = {"cwd": REPO, "capture_output": True, "text": True}  # the code that runs: HEAD now, and any edits
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], **git).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], **git).stdout.strip()
    t0 = time.perf_counter()
    if args.jobs > 1:
        with ProcessPoolExecutor(min(args.jobs, len(runs))) as pool:
            futures = [pool.submit(fit_one, args, split, scratch) for _, split, scratch in runs]
            done = [f.result() for f in futures]
    else:
        done = [fit_one(args, split, scratch) for _, split, scratch in runs]
    wall = time.perf_counter() - t0
    results = dict(zip([key for key, _, _ in runs], done))
    y = np.asarray(results["pretrained"].pop("target"))
    for r in results.values():
        r.pop("target", None)
    head = results.pop("pretrained")
    settings = head.pop("settings")  # the same recipe in every run (readout_scale: of its own training part)
    for r in results.values():
        r["readout_scale"] = r.pop("settings")["readout_scale"]
    record = {
        "what": f"Crippen logP (RDKit) of the {args.dataset} molecules, fine-tuned from {args.encoder}",
        "command": "OMP_NUM_THREADS=1 python scripts/studies/regression_logp.py " + " ".join(argv or sys.argv[1:]),
        "dataset": args.dataset, "target": "Crippen MolLogP", "target_mean": float(y.mean()),
        "target_std": float(y.std()), "encoder": args.encoder, "epochs": args.epochs, "seed": args.seed,
        **settings, "selection": "lowest validation RMSE",
        **head, **results,
        "wall_time_s": wall, "jobs": min(args.jobs, len(runs)), "runtime": autogcl.runtime_info("cpu"),
        "torch_threads": 1, "code_commit": commit + ("+uncommitted" if dirty else ""),
    }
    atomic_write_json(args.out, record)
    lines = [f"{name}: test R² {r['test']['r2']:.3f}, RMSE {r['test']['rmse']:.3f} (epoch {r['selected_epoch']}, "
             f"{r['split']})" for name, r in [("pretrained", head), *results.items()]]
    print(f"{args.dataset}: {record['molecules']} molecules, {wall:.0f} s -> {args.out}\n  " + "\n  ".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
