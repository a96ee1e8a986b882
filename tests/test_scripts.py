"""The analysis scripts under scripts/ on a real (tiny) run."""

import importlib.util
from pathlib import Path

from autogcl.cli import main

ROOT = Path(__file__).resolve().parents[1]


def load_script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_semi_windows_selects_within_each_window(data_root, tmp_path, capsys, monkeypatch):
    out = tmp_path / "semi"
    assert main(["semi", "--dataset", "MUTAG", "--row", "labeled", "--epochs", "3", "--fold-limit", "2",
                 "--data-root", str(data_root), "--out", str(out), "--no-progress", "--device", "cpu"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("AUTOGCL_DATA", str(data_root))
    sw = load_script("semi_windows")
    assert sw.main([str(out / "MUTAG-labeled"), "--epochs", "1,3,5", "--labels", "ours"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ours |")]
    assert [line.split(" | ")[1] for line in lines] == ["1", "3"]  # no fold ran 5 epochs
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    rows = [sw.window(sw.fold_rows(f), 3) for f in sorted(out.glob("MUTAG-labeled/seed0/fold*"))]
    assert cells[1][4].startswith(f"{sum(r['test_max'] for r in rows) / 2:.2f} ±")
    one = [sw.window(sw.fold_rows(f), 1) for f in sorted(out.glob("MUTAG-labeled/seed0/fold*"))]
    assert all(w["val"] == w["test_max"] == w["last"] for w in one)  # one epoch: every selection is it
    per_fold, common = (float(c.split(" ±")[0]) for c in cells[1][4:6])
    assert common <= per_fold
    assert sw.main([str(tmp_path / "nothing")]) == 2
    assert "no finished fold" in capsys.readouterr().err
