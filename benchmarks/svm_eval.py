"""Time the SVM evaluation: autogcl's evaluator against the reference loop of the released
code (``GridSearchCV(SVC(), {"C": grid}, cv=5)`` in an outer stratified 10-fold CV), on the
same embeddings with the same folds, and check that both give the same accuracies.

    python benchmarks/svm_eval.py runs/unsupervised/NCI1-autogcl/seed0 --epoch 30

Embeddings come from a finished unit's saved model (``model.pt``), or from an embeddings
file written with ``--save-embeddings`` (``--npz FILE``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.svm import SVC

from autogcl.eval.svm import C_GRID, svm_evaluate


def reference(x, y, seed):
    accs, cs = [], []
    for tr, te in StratifiedKFold(10, shuffle=True, random_state=seed).split(x, y):
        g = GridSearchCV(SVC(), {"C": list(C_GRID)}, cv=5).fit(x[tr], y[tr])
        accs.append(float((g.predict(x[te]) == y[te]).mean()))
        cs.append(g.best_params_["C"])
    return float(np.mean(accs)), cs


def embeddings_from_unit(unit: Path, data_root):
    from torch_geometric.loader import DataLoader

    import autogcl
    from autogcl.data import load_tu
    from autogcl.protocols.unsupervised import UnsupervisedConfig

    cfg = UnsupervisedConfig.from_dict(json.loads((unit / "config.json").read_text()))
    ds = load_tu(cfg.dataset, data_root, cfg.feat)
    emb, y = autogcl.load(unit / "model.pt").encoder.embed(DataLoader(ds, batch_size=512))
    return emb.numpy(), y.numpy()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("unit", nargs="?", help="finished unit directory (holds model.pt, config.json)")
    p.add_argument("--npz", help="embeddings file (emb, y) instead of a unit")
    p.add_argument("--data-root", default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skip-reference", action="store_true", help="time only autogcl's evaluator")
    args = p.parse_args()
    if args.npz:
        z = np.load(args.npz)
        x, y = z["emb"], z["y"]
    else:
        x, y = embeddings_from_unit(Path(args.unit), args.data_root)
    print(f"embeddings: {x.shape[0]} graphs x {x.shape[1]} dims")
    for jobs in (1, 2):
        t = time.perf_counter()
        ours = svm_evaluate(x, y, seed=args.seed, n_jobs=jobs)
        print(f"autogcl evaluator, {jobs} process(es): {time.perf_counter() - t:7.1f} s, "
              f"accuracy {100 * ours['test_acc']:.2f}")
    if not args.skip_reference:
        t = time.perf_counter()
        acc, cs = reference(x.astype(np.float64), y, args.seed)
        print(f"reference GridSearchCV(SVC()) loop:  {time.perf_counter() - t:7.1f} s, accuracy {100 * acc:.2f}")
        same = acc == ours["test_acc"] and cs == [f["C"] for f in ours["folds"]]
        print("same accuracy and same C in every fold:", same)


if __name__ == "__main__":
    main()
