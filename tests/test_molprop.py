"""benchmarks/molprop.py end to end on a slice of BACE: every method reads the same split file,
each unit records its scores, CPU time and commit, a finished unit is skipped, and the docs
generator renders the units' mean ± std as written (the docs' table of docs/molecules.md)."""

from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np
import pytest

from tests.conftest import REPO

pytest.importorskip("rdkit")


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def molprop():
    return _module(REPO / "benchmarks" / "molprop.py", "_molprop")


def test_units_share_the_split_file_resume_and_render(molprop, data_root, tmp_path, monkeypatch):
    full = molprop.load_set("bace", data_root)
    assert full["task"] == "classification" and full["tasks"] == ["Class"] and full["dropped"] == 0
    data = {**full, "smiles": full["smiles"][:120], "y": full["y"][:120]}
    monkeypatch.setattr(molprop, "ROOT", tmp_path)  # work folders under tmp
    out = tmp_path / "docs" / "results" / "molprop"
    seen = []
    real = molprop.read_split

    def spy(path):
        seen.append(path.name)
        return real(path)

    monkeypatch.setattr(molprop, "read_split", spy)
    for seed, method in ((0, "rf_morgan"), (0, "autogcl_forest"), (1, "rf_morgan")):
        assert molprop.run_unit(out, "bace", data, "scaffold", seed, method) is not None
    assert seen == ["bace-scaffold-0.json"] * 2 + ["bace-scaffold-1.json"]  # one split file per seed, for all
    parts = json.loads((out / "splits" / "bace-scaffold-0.json").read_text())[0]
    assert set(parts) == {"train", "val", "test"} and sum(map(len, parts.values())) == 120
    assert molprop.run_unit(out, "bace", data, "scaffold", 0, "rf_morgan") is None  # done: skipped
    units = [json.loads(p.read_text()) for p in sorted((out / "units" / "bace").glob("*.json"))]
    assert len(units) == 3
    for u in units:
        assert u["selection"] == "val" and u["cpu_s"] > 0 and u["provenance"]["torch_threads"] >= 1
        assert 0 <= u["test"]["roc_auc"] <= 1 and u["split_file"] == f"splits/bace-scaffold-{u['seed']}.json"
    # a changed set is never split by an old file
    other = {**data, "smiles": data["smiles"][::-1]}
    with pytest.raises(SystemExit, match="made for other molecules"):
        molprop.split_file(out, "bace", other, "scaffold", 0)

    sys.path.insert(0, str(REPO / "scripts" / "docs"))
    try:
        from docsgen.molprop import molprop_block
    finally:
        sys.path.remove(str(REPO / "scripts" / "docs"))
    table = molprop_block(tmp_path)
    rf = np.array([u["test"]["roc_auc"] for u in units if u["method"] == "rf_morgan"])
    cpu = np.mean([u["cpu_s"] for u in units if u["method"] == "rf_morgan"])
    row = next(line for line in table.splitlines() if line.startswith("| bace |"))
    assert f"{rf.mean():.3f} ± {rf.std():.3f} (2), {cpu:.0f} s" in row
    assert "not run" in row  # autogcl and chemprop have no unit here
