"""Molecule regression with the shipped encoder on a real property: RDKit's Crippen logP of the
molecules of a MoleculeNet CSV, fine-tuned with ``MoleculeEncoder.finetune(task="regression")``
on a scaffold split, scored on the held-out scaffolds. Writes a small JSON that docs/api.md
shows (through scripts/docs.py).

    OMP_NUM_THREADS=1 python scripts/regression_logp.py --data-root ../shared/data \\
        --out docs/results/regression_logp.json
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-root", default="../shared/data")
    p.add_argument("--dataset", default="bbbp", help="a MoleculeNet CSV of the data root's moleculenet/ folder")
    p.add_argument("--smiles-col", default="smiles")
    p.add_argument("--encoder", default=DEFAULT_ENCODER)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--dropout", type=float, default=0.5, help="dropout inside the GIN (the recipe's default: 0.5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=REPO / "docs" / "results" / "regression_logp.json")
    args = p.parse_args(argv)

    path = Path(args.data_root) / "moleculenet" / f"{args.dataset}.csv"
    with open_text(path) as f:
        smiles = [row[args.smiles_col] for row in csv.DictReader(f)]
    target = crippen_logp(smiles)
    keep = [i for i, v in enumerate(target) if v == v]
    smiles, target = [smiles[i] for i in keep], [target[i] for i in keep]

    encoder = autogcl.MoleculeEncoder.load(args.encoder)
    t0 = time.perf_counter()
    pred = encoder.finetune(smiles, target, tasks=["logP"], task="regression", epochs=args.epochs, split="scaffold",
                            dropout=args.dropout,
                            selection="val", seed=args.seed, device="cpu")
    seconds = time.perf_counter() - t0
    best = next(r for r in pred.history if r["epoch"] == pred.selected_epoch)
    y = np.asarray(target)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    record = {
        "what": f"Crippen logP (RDKit) of the {args.dataset} molecules, fine-tuned from {args.encoder}",
        "command": "OMP_NUM_THREADS=1 python scripts/regression_logp.py " + " ".join(argv or sys.argv[1:]),
        "dataset": args.dataset, "molecules": pred.hparams["molecules"], "target": "Crippen MolLogP",
        "target_mean": float(y.mean()), "target_std": float(y.std()),
        "split": "scaffold 80/10/10 (Bemis-Murcko; test scaffolds unseen in training)",
        "split_sizes": pred.hparams["split_sizes"], "encoder": args.encoder, "epochs": args.epochs,
        "seed": args.seed, "dropout": args.dropout, "selected_epoch": pred.selected_epoch, "selection": "lowest validation RMSE",
        "test": {k: best[f"test_{k}"] for k in ("rmse", "mae", "r2")},
        "valid": {k: best[f"val_{k}"] for k in ("rmse", "mae", "r2")},
        "history": [{k: r[k] for k in ("epoch", "loss", "val_rmse", "val_r2", "test_rmse", "test_r2")}
                    for r in pred.history],
        "train_time_s": seconds, "runtime": autogcl.runtime_info("cpu"), "torch_threads": torch.get_num_threads(),
        "code_commit": commit,
    }
    atomic_write_json(args.out, record)
    print(f"{args.dataset}: {record['molecules']} molecules, test (scaffold) R² {record['test']['r2']:.3f}, "
          f"RMSE {record['test']['rmse']:.3f} logP units (epoch {pred.selected_epoch}), {seconds:.0f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
