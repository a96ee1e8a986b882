"""The README's main command, first seed, at one thread, reproduces the committed unit behind the
README's MUTAG row (``docs/results/units/unsupervised/MUTAG-autogcl/seed0``, read from its files).

Tolerance: abs 1e-6 on every epoch's losses, abs 1e-9 on the SVM accuracies and on both
selections. On the machine kind that made the unit (its torch, one thread, the same MKL code
path) the run is equal to the last digit; ATen's AVX2 dispatch (``ATEN_CPU_CAPABILITY=avx2``)
gives the same digits too. Where MKL takes another code path (another CPU family, or
``MKL_ENABLE_INSTRUCTIONS=AVX2`` on an AVX-512 Intel), the first Adam step rounds differently,
the sampled views change and the seed's curve departs from epoch 1 or 2 on (measured 2026-11-28:
6.5e-5 at epoch 1, 1.2e-2 at epoch 2, up to 0.23 later): no tolerance on the curve holds there,
and this test fails, saying to rerun the cell on that machine (docs/results/README.md)."""

import csv
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from autogcl.protocols.manifest import UNSUPERVISED_CELLS, units_folder

REPO = Path(__file__).resolve().parents[2]
LOSS_ABS = 1e-6  # per-epoch losses (means over the epoch's batches)
ACC_ABS = 1e-9  # SVM accuracies: fold counts over 188 graphs, exact on the same kernels


def _readme_command() -> list[str]:
    """The arguments of the README's main command (``autogcl unsupervised ...``)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [ln for ln in re.findall(r"```bash\n(.*?)```", text, re.S)[0].splitlines() if "autogcl unsupervised" in ln]
    assert lines, "README.md: the first bash block has no 'autogcl unsupervised' command"
    words = shlex.split(lines[0].split("&&")[-1])
    return words[[i for i, w in enumerate(words) if w.endswith("autogcl")][0] + 1:]


def _rows(unit: Path) -> dict[int, dict]:
    with open(unit / "metrics.csv", newline="", encoding="utf-8") as f:
        return {int(r["epoch"]): r for r in csv.DictReader(f)}


def test_readme_main_command_first_seed_reproduces_the_committed_mutag_unit(data_root, tmp_path):
    cell = next(c for c in UNSUPERVISED_CELLS if c.label == ("MUTAG", "autogcl"))
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert re.search(rf"\| MUTAG \| autogcl \|.*`{re.escape(cell.runs[0])}` \|", readme), \
        f"README.md: the MUTAG autogcl row does not name {cell.runs[0]}"
    ref = REPO / units_folder(cell.runs[0]) / "seed0"
    summary = json.loads((REPO / cell.runs[0] / "summary.json").read_text(encoding="utf-8"))

    args = _readme_command()
    assert args[0] == "unsupervised", f"README.md's main command is not 'autogcl unsupervised': {args}"
    i = args.index("--data-root")
    args[i + 1] = str(data_root)
    out = tmp_path / "runs"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "autogcl", *args, "--seeds", "1", "--out", str(out), "--no-progress"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    new = out / "MUTAG-autogcl" / "seed0"

    old_cfg, new_cfg = (json.loads((u / "config.json").read_text(encoding="utf-8")) for u in (ref, new))
    old_res, new_res = (json.loads((u / "result.json").read_text(encoding="utf-8")) for u in (ref, new))
    assert new_cfg.pop("runtime")["torch_threads"] == old_cfg.pop("runtime")["torch_threads"] == 1
    assert new_cfg == old_cfg, "the README command's configuration is not the committed unit's"
    assert new_res["runtime"]["torch"] == old_res["runtime"]["torch"], (
        f"the committed unit was made with torch {old_res['runtime']['torch']}, this run used "
        f"{new_res['runtime']['torch']}: rerun the cell (docs/results/README.md)")
    # the unit is the README row's first seed
    assert summary["seeds"][0] == old_res["seed"] == new_res["seed"] == 0
    for sel in ("val", "test_max"):
        assert summary[sel]["values"][0] == pytest.approx(100 * old_res["selections"][sel]["acc"], abs=1e-9)

    old_rows, new_rows = _rows(ref), _rows(new)
    assert sorted(new_rows) == sorted(old_rows) == list(range(1, 31))
    far = []
    for epoch, o in old_rows.items():
        n = new_rows[epoch]
        for key, tol in (("loss", LOSS_ABS), ("cl_loss", LOSS_ABS), ("sim_loss", LOSS_ABS), ("svm_val_acc", ACC_ABS),
                         ("svm_test_acc", ACC_ABS), ("svm_test_std", ACC_ABS)):
            assert (o[key] == "") == (n[key] == ""), f"epoch {epoch}: {key} recorded in one run only"
            if o[key] and abs(float(o[key]) - float(n[key])) > tol:
                far.append(f"epoch {epoch} {key}: committed {o[key]}, now {n[key]}")
    for sel in ("val", "test_max"):
        o, n = old_res["selections"][sel], new_res["selections"][sel]
        if o["epoch"] != n["epoch"] or abs(o["acc"] - n["acc"]) > ACC_ABS:
            far.append(f"{sel}: committed epoch {o['epoch']} acc {o['acc']}, now epoch {n['epoch']} acc {n['acc']}")
    assert not far, (f"{len(far)} value(s) of {ref.relative_to(REPO)} not reproduced (losses abs {LOSS_ABS}, "
                     f"accuracies abs {ACC_ABS}); on another CPU than the unit's, rerun the cell there: "
                     + "; ".join(far[:6]))
