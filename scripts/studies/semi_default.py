"""Study: what ``SemiSupervised()`` reaches with few labels, beside the paper preset and
candidate defaults, as a user would run it: a TU set, a stratified 80/20 split (seed), 10% of
all graphs labeled (drawn stratified from the 80%), the rest of the 80% unlabeled, 30 epochs;
held-out accuracy on the 20%, and the selection each fit made. One JSON per (set, seed,
config) under ``docs/results/semi_default/`` (skipped when it exists, so a rerun resumes).

    OMP_NUM_THREADS=1 python scripts/studies/semi_default.py --sets PROTEINS --seeds 0
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.model_selection import train_test_split

import autogcl

ROOT = Path(__file__).resolve().parents[2]
DATA = os.environ.get("AUTOGCL_DATA", str(ROOT.parent / "shared" / "data"))

#: name -> (the model of a data set's name, fit's extra options)
CONFIGS = {
    # the estimator's default before this study (spelled out: SemiSupervised() is now the preset's)
    "default": (lambda ds: autogcl.SemiSupervised(classifier="gin", lr=0.001, bn_stats="settled"), {}),
    "paper": (lambda ds: autogcl.SemiSupervised.paper("joint", ds), {}),
    "paper_settled": (lambda ds: autogcl.SemiSupervised.paper("joint", ds, bn_stats="settled"), {}),
    "paper_val": (lambda ds: autogcl.SemiSupervised.paper("joint", ds), {"validation": 0.2}),
    "gin_lr01": (lambda ds: autogcl.SemiSupervised(lr=0.01), {}),
    "gin_lr01_running": (lambda ds: autogcl.SemiSupervised(lr=0.01, bn_stats="running"), {}),
    "gin_running": (lambda ds: autogcl.SemiSupervised(bn_stats="running"), {}),
    "default_val": (lambda ds: autogcl.SemiSupervised(), {"validation": 0.2}),
}


def split(y: np.ndarray, seed: int, label_share: float = 0.1):
    idx = np.arange(len(y))
    train, test = train_test_split(idx, test_size=0.2, stratify=y, random_state=seed)
    n_lab = int(round(label_share * len(y)))
    lab, _ = train_test_split(train, train_size=n_lab, stratify=y[train], random_state=seed)
    return train, test, lab


def commit() -> str:
    from autogcl.protocols.publishing import code_commit

    head, dirty = code_commit()
    return (head or "unknown") + ("-dirty" if dirty else "")


def run(name: str, ds_name: str, seed: int, out: Path, epochs: int) -> dict:
    path = out / f"{ds_name}-seed{seed}-{name}.json"
    if path.exists():
        return json.loads(path.read_text())
    ds = autogcl.load_tu(ds_name, data_root=DATA)
    y = np.asarray([int(d.y) for d in ds])
    train, test, lab = split(y, seed)
    labels = np.full(len(y), -1)
    labels[lab] = y[lab]
    graphs = [ds[int(i)] for i in train]
    build, options = CONFIGS[name]
    model = build(ds_name)
    t0, c0 = time.time(), time.process_time()
    hist = model.fit(graphs, labels=torch.as_tensor(labels[train]), epochs=epochs, seed=seed, progress=False,
                     device="cpu", **options)
    wall, cpu = time.time() - t0, time.process_time() - c0
    test_graphs = [ds[int(i)] for i in test]
    acc = float(model.score(test_graphs))
    lab_acc = float(model.score([ds[int(i)] for i in lab]))
    res = {"set": ds_name, "seed": seed, "config": name, "hparams": dict(model.hparams), "fit_options": options, "epochs": epochs,
           "labeled": int(len(lab)), "unlabeled": int(len(train) - len(lab)), "test_graphs": int(len(test)),
           "majority": float(np.bincount(y[test]).max() / len(test)), "test_acc": acc, "labeled_acc": lab_acc,
           "selection": getattr(model, "selection", None), "last_row": {k: v for k, v in hist[-1].items()
                                                                        if isinstance(v, (int, float, str, bool))},
           "wall_s": wall, "cpu_s": cpu, "threads": torch.get_num_threads(), "commit": commit(),
           "machine": platform.node(), "python": platform.python_version(), "torch": torch.__version__}
    out.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(res, indent=1, default=str))
    os.replace(tmp, path)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="PROTEINS")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--out", default=str(ROOT / "docs" / "results" / "semi_default"))
    a = ap.parse_args()
    for s in a.sets.split(","):
        for seed in map(int, a.seeds.split(",")):
            for c in a.configs.split(","):
                r = run(c, s, seed, Path(a.out), a.epochs)
                print(f"{s} seed {seed} {c}: held out {r['test_acc']:.4f} (labeled {r['labeled_acc']:.4f}, "
                      f"majority {r['majority']:.4f}) {r['cpu_s']:.0f} CPU s", flush=True)


if __name__ == "__main__":
    main()
