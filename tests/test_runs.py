import json

import pytest

from autogcl import runs
from autogcl.errors import ConfigError


def test_atomic_writes_leave_no_temporary_files(tmp_path):
    runs.atomic_write_json(tmp_path / "a" / "r.json", {"x": 1})
    runs.atomic_write_csv(tmp_path / "a" / "m.csv", [{"epoch": 1, "loss": 0.5}, {"epoch": 2, "acc": 0.9}])
    assert json.loads((tmp_path / "a" / "r.json").read_text()) == {"x": 1}
    assert (tmp_path / "a" / "m.csv").read_text().splitlines() == ["epoch,loss,acc", "1,0.5,", "2,,0.9"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["m.csv", "r.json"]
    plain = tmp_path / "plain.txt"
    plain.write_text("x")  # results get the mode an ordinary new file gets
    assert (tmp_path / "a" / "r.json").stat().st_mode == plain.stat().st_mode


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "r.json"
    runs.atomic_write_json(path, {"ok": True})
    with pytest.raises(TypeError):
        runs.atomic_write_json(path, {"bad": object()})
    assert json.loads(path.read_text()) == {"ok": True}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_unit_finish_and_resume_checks(tmp_path):
    unit = runs.Unit(dir=tmp_path / "seed0", config={"epochs": 2}, seed=0)
    unit.partial.mkdir()
    runs.atomic_write_json(unit.partial / "config.json", unit.config)
    runs.atomic_write_json(unit.partial / "result.json", {"acc": 1.0})
    assert not unit.finished
    unit.finish()
    assert unit.finished and not unit.partial.exists() and unit.result() == {"acc": 1.0}
    runs.check_resumable([unit], resume=True)
    with pytest.raises(ConfigError, match="pass --resume"):
        runs.check_resumable([unit], resume=False)
    other = runs.Unit(dir=unit.dir, config={"epochs": 3}, seed=0)
    with pytest.raises(ConfigError, match="epochs: 2 != 3"):
        runs.check_resumable([other], resume=True)


def test_serial_executor_skips_finished_units(tmp_path):
    done = []

    def fn(u):
        done.append(u.seed)
        u.partial.mkdir()
        runs.atomic_write_json(u.partial / "result.json", {"seed": u.seed})
        u.finish()

    units = [runs.Unit(dir=tmp_path / f"s{i}", config={}, seed=i) for i in range(3)]
    fn(units[1])
    done.clear()
    assert [r["seed"] for r in runs.run_serial(units, fn)] == [0, 1, 2]
    assert done == [0, 2]
