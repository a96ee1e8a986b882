"""Study: the classification forest of ``autogcl.PropertyPredictor`` with and without class
weights (``class_weight="balanced_subsample"``), on the molecule benchmark's own scaffold splits
and features (Morgan counts + RDKit 2D descriptors), scored on the validation part (what chose
the weighting) and on the test part. The forest and the features are the member's own
(``autogcl.api.property._forest`` and ``_fixed_features``), with the class weights set. Writes ``docs/results/molprop/forest_class_weight.json``.

    OMP_NUM_THREADS=1 python scripts/studies/forest_class_weight.py --sets bace,bbbp,clintox
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import molprop  # noqa: E402  (the benchmark's data, splits and scores)

VARIANTS = {"unweighted": None, "balanced_subsample": "balanced_subsample"}


def run(name: str, seeds, data_root: Path) -> list[dict]:
    from autogcl.api.property import _fixed_features, _forest

    data = molprop.load_set(name, data_root)
    x, y = _fixed_features(data["smiles"]), data["y"]  # the features the forest member reads
    rows = []
    for seed in seeds:
        parts = molprop.read_split(molprop.OUT / "splits" / f"{name}-scaffold-{seed}.json")
        for variant, weight in VARIANTS.items():
            t0 = time.process_time()
            pred = {p: np.full((len(parts[p]), y.shape[1]), 0.5) for p in ("val", "test")}
            for t in range(y.shape[1]):  # the member's own forest per task, seeded as PropertyPredictor seeds it
                train = parts["train"][~np.isnan(y[parts["train"], t])]
                if len(np.unique(y[train, t])) < 2:
                    continue
                m = _forest("classification", 500, None, seed + t).set_params(class_weight=weight)
                m.fit(x[train], y[train, t])
                for p in pred:
                    pred[p][:, t] = m.predict_proba(x[parts[p]])[:, 1]
            rows.append({"set": name, "seed": seed, "variant": variant, "cpu_s": time.process_time() - t0,
                         **{p: molprop.scores("classification", y[parts[p]], pred[p])["roc_auc"] for p in pred}})
            print(f"{name} seed {seed} {variant}: valid {rows[-1]['val']:.4f} test {rows[-1]['test']:.4f}", flush=True)
    return rows


def main():
    from autogcl.atomic import atomic_write_json

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="bace,bbbp,clintox")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--data-root", default=str(ROOT.parent / "shared" / "data"))
    a = ap.parse_args()
    rows = [r for s in a.sets.split(",") for r in run(s, [int(v) for v in a.seeds.split(",")], Path(a.data_root))]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    atomic_write_json(molprop.OUT / "forest_class_weight.json",
                      {"rows": rows, "commit": commit, "machine": platform.node(), "threads": 1,
                       "command": "python scripts/studies/forest_class_weight.py --sets " + a.sets})


if __name__ == "__main__":
    main()
