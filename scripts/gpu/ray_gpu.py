"""Ray on a lent GPU: a sweep of units of a quarter GPU each gives the numbers of the serial sweep.

    python scripts/gpu/ray_gpu.py pack --out .gpu/ray [--python-version 3.12] [--data-root ../shared/data]  # here
    python scripts/gpu/ray_gpu.py check --source .gpu/ray --out $OUT [--device cuda] [--tag h200]           # there
    python scripts/gpu/ray_gpu.py repack WHEEL DEST.tar.xz   # any wheel, packed the same way (gpu_pretrain.sh: RDKit)

The device's image has no Ray, and Ray's wheel alone (75.6 MiB for 2.60.0) is more than the 64 MiB
a device call carries. ``pack`` downloads the wheel of this machine's Ray version for the device's
Python, leaves out what a local cluster never uses (the Java jars, the dashboard's web client,
source maps), strips the symbols of its binaries and writes the rest as one ``ray.tar.xz`` (about
26 MiB), with the wheels of Ray's dependencies and the MUTAG files. ``check`` (on the device, in
``scripts/gpu/gpu_checks.sh ray``) unpacks it into a temporary folder, installs only the
dependencies the device lacks, runs ``autogcl unsupervised`` on MUTAG twice (serially, then as Ray
units of a quarter GPU and one CPU each, all at once on one GPU, PyTorch's deterministic kernels
in both) and writes ``ray_gpu_<tag>.json``: each seed's selected accuracies and evaluations from
both runs, whether they are equal, and both wall times. ``check --device cpu`` (no GPU fractions)
runs the same comparison on a CPU.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: what a local cluster without the dashboard or Java workers never reads
LEFT_OUT = ("ray/jars", "ray/dashboard/client/build")
BINARIES = ("ray/_raylet.so", "ray/core/src/ray/gcs/gcs_server", "ray/core/src/ray/raylet/raylet")
#: import names of the dependency wheels whose distribution name differs
MODULES = {"protobuf": "google.protobuf", "pyyaml": "yaml", "rpds_py": "rpds", "attrs": "attr"}


def pip_download(dest: Path, python_version: str, spec: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--implementation", "cp",
                    "--python-version", python_version, "--platform", "manylinux_2_28_x86_64", "--platform",
                    "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64", "-d", str(dest), spec], check=True)


def pack(out: Path, python_version: str, data_root: Path) -> Path:
    """``out``: ray.tar.xz, whl/ (Ray's dependencies) and data/TU/MUTAG; returns ``out``."""
    import ray

    shutil.rmtree(out, ignore_errors=True)
    (out / "whl").mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        pip_download(tmp / "dl", python_version, f"ray=={ray.__version__}")
        (wheel,) = (tmp / "dl").glob("ray-*.whl")
        for dep in (tmp / "dl").glob("*.whl"):
            if dep != wheel:
                shutil.copy2(dep, out / "whl")
        repack(wheel, out / "ray.tar.xz", LEFT_OUT, BINARIES)
    shutil.copytree(data_root / "TU" / "MUTAG", out / "data" / "TU" / "MUTAG")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 2 ** 20
    print(f"ray_gpu: {out} holds {size:.1f} MiB (Ray {ray.__version__} for Python {python_version}); "
          "carry it to the device call")
    return out


def repack(wheel: Path, dest: Path, left_out=(), binaries=()) -> Path:
    """The files of ``wheel`` (their modes kept: the binaries stay executable), without the
    folders ``left_out``, source maps and byte code, the ``binaries``' symbols stripped, as one
    ``.tar.xz`` to unpack onto ``sys.path`` (smaller than the zip: a device call carries 64 MiB)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with zipfile.ZipFile(wheel) as whl:
            for info in whl.infolist():
                whl.extract(info, root)
                mode = (info.external_attr >> 16) & 0o777  # zip keeps the binaries' modes here
                if mode and not info.is_dir():
                    (root / info.filename).chmod(mode)
        for part in left_out:
            shutil.rmtree(root / part, ignore_errors=True)
        for junk in [*root.rglob("*.map"), *root.rglob("__pycache__")]:
            shutil.rmtree(junk) if junk.is_dir() else junk.unlink()
        if binaries and shutil.which("strip"):
            subprocess.run(["strip", "--strip-unneeded", *(str(root / b) for b in binaries if (root / b).is_file())],
                           check=True)
        tmp_dest = dest.with_name(dest.name + ".tmp")
        with tarfile.open(tmp_dest, "w:xz", preset=6) as tar:
            for item in sorted(root.iterdir()):
                tar.add(item, arcname=item.name)
        os.replace(tmp_dest, dest)
    return dest


def install(source: Path, target: Path) -> None:
    """Unpack the packed Ray into ``target`` and add the dependency wheels the device lacks."""
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(source / "ray.tar.xz") as tar:
        tar.extractall(target, filter="data")
    missing = []
    for wheel in sorted((source / "whl").glob("*.whl")):
        name = wheel.name.split("-")[0].lower()
        probe = subprocess.run([sys.executable, "-c", f"import {MODULES.get(name, name)}"], capture_output=True)
        if probe.returncode:
            missing.append(str(wheel))
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--target", str(target), *missing], check=True)
    print(f"ray_gpu: Ray unpacked into {target}; dependencies installed: {[Path(m).name for m in missing]}")


def sweep(out: Path, data_root: Path, device: str, seeds: int, epochs: int, ray_units: bool) -> float:
    """One ``autogcl unsupervised`` MUTAG sweep; its wall time (s)."""
    args = [sys.executable, "-m", "autogcl", "unsupervised", "--dataset", "MUTAG", "--seeds", str(seeds),
            "--epochs", str(epochs), "--eval-epochs", str(epochs), "--device", device, "--deterministic",
            "--data-root", str(data_root), "--out", str(out), "--no-progress", "--jobs", "1"]
    if ray_units:
        args += ["--executor", "ray", "--cpus-per-unit", "1"] + (["--gpus-per-unit", "0.25"] if device != "cpu" else [])
    else:
        args += ["--executor", "serial"]
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"ray_gpu: {' '.join(args[2:])} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - t0


def unit_numbers(out: Path) -> dict:
    """seed -> the numbers each unit selected and evaluated, and where it ran."""
    found = {}
    for f in sorted(out.glob("MUTAG-autogcl/seed*/result.json")):
        r = json.loads(f.read_text())
        found[f.parent.name] = {"evaluations": r["evaluations"], "selections": r["selections"],
                                "device": r["runtime"]["device"], "threads": r["runtime"]["torch_threads"]}
    return found


def compare(serial: dict, ray_run: dict) -> dict:
    """Per seed: both runs' selected accuracies and whether every evaluation is equal."""
    rows = []
    for seed in sorted(set(serial) | set(ray_run)):
        a, b = serial.get(seed), ray_run.get(seed)
        rows.append({"seed": seed, "serial_val_acc": a and a["selections"]["val"]["acc"],
                     "ray_val_acc": b and b["selections"]["val"]["acc"],
                     "equal": a is not None and b is not None and a["evaluations"] == b["evaluations"]
                     and a["selections"] == b["selections"],
                     "ray_device": b and b["device"], "ray_threads": b and b["threads"]})
    return {"rows": rows, "equal": bool(rows) and all(r["equal"] for r in rows)}


def check(source: Path, out: Path, device: str, tag: str, seeds: int, epochs: int) -> dict:
    try:
        import ray  # noqa: F401
    except ImportError:
        site = Path(tempfile.mkdtemp(prefix="ray-site-"))
        install(source, site)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), str(site), os.environ.get("PYTHONPATH")]))
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS, before any process starts it
    os.environ["OMP_NUM_THREADS"] = "1"
    runs = Path(tempfile.mkdtemp(prefix="ray-gpu-runs-"))
    data = source / "data"
    serial_s = sweep(runs / "serial", data, device, seeds, epochs, ray_units=False)
    ray_s = sweep(runs / "ray", data, device, seeds, epochs, ray_units=True)
    result = compare(unit_numbers(runs / "serial"), unit_numbers(runs / "ray"))
    record = {"benchmark": "ray_gpu", "command": " ".join(sys.argv), "date": datetime.datetime.now(
        datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": platform.node(), "device": device,
        "commit": os.environ.get("AUTOGCL_COMMIT"), "seeds": seeds, "epochs": epochs,
        "gpus_per_unit": 0.25 if device != "cpu" else 0, "serial_wall_s": serial_s, "ray_wall_s": ray_s, **result}
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"ray_gpu_{tag}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"ray_gpu: {seeds} MUTAG units, serial {serial_s:.0f} s, Ray {ray_s:.0f} s; every evaluation equal: "
          f"{result['equal']} ({path})")
    return record


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="stage", required=True)
    p = sub.add_parser("pack", help="here: Ray for the device, its dependencies and MUTAG, in one folder")
    p.add_argument("--out", type=Path, default=REPO / ".gpu" / "ray")
    p.add_argument("--python-version", default="3.12", help="the device's Python (default 3.12)")
    p.add_argument("--data-root", type=Path, default=REPO.parent / "shared" / "data")
    r = sub.add_parser("repack", help="any wheel as one .tar.xz to unpack onto sys.path (e.g. RDKit's)")
    r.add_argument("wheel", type=Path)
    r.add_argument("dest", type=Path)
    c = sub.add_parser("check", help="there: the serial and the Ray sweep, compared")
    c.add_argument("--source", type=Path, default=REPO / ".gpu" / "ray")
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--device", default="cuda")
    c.add_argument("--tag", default="gpu")
    c.add_argument("--seeds", type=int, default=4)
    c.add_argument("--epochs", type=int, default=3)
    a = ap.parse_args(argv)
    if a.stage == "pack":
        pack(a.out, a.python_version, a.data_root)
        return 0
    if a.stage == "repack":
        repack(a.wheel, a.dest)
        return 0
    return 0 if check(a.source, a.out, a.device, a.tag, a.seeds, a.epochs)["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
