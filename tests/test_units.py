import json
import os

import pytest

from autogcl import atomic, units
from autogcl.errors import ConfigError


def test_atomic_writes_leave_no_temporary_files(tmp_path):
    atomic.atomic_write_json(tmp_path / "a" / "r.json", {"x": 1})
    atomic.atomic_write_csv(tmp_path / "a" / "m.csv", [{"epoch": 1, "loss": 0.5}, {"epoch": 2, "acc": 0.9}])
    assert json.loads((tmp_path / "a" / "r.json").read_text()) == {"x": 1}
    assert (tmp_path / "a" / "m.csv").read_text().splitlines() == ["epoch,loss,acc", "1,0.5,", "2,,0.9"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["m.csv", "r.json"]
    plain = tmp_path / "plain.txt"
    plain.write_text("x")  # results get the mode an ordinary new file gets
    assert (tmp_path / "a" / "r.json").stat().st_mode == plain.stat().st_mode


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "r.json"
    atomic.atomic_write_json(path, {"ok": True})
    with pytest.raises(TypeError):
        atomic.atomic_write_json(path, {"bad": object()})
    assert json.loads(path.read_text()) == {"ok": True}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def _without_commit(result: dict) -> dict:
    """A published result without the code commit units.publish adds (the checkout's, if known)."""
    return {k: v for k, v in result.items() if k != "code_commit"}


def test_a_published_unit_records_the_commit_it_ran_at(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOGCL_COMMIT", "abc1234")
    unit = units.Unit(dir=tmp_path / "seed0", config={"epochs": 2}, seed=0)
    units.start_work(unit)
    assert units.publish(unit, [{"epoch": 1}], {"acc": 1.0}) == unit.result() == {"acc": 1.0, "code_commit": "abc1234"}
    monkeypatch.setenv("AUTOGCL_COMMIT", "abc1234+dirty")  # a copy whose package files differ from the commit
    other = units.Unit(dir=tmp_path / "seed1", config={"epochs": 2}, seed=1)
    units.start_work(other)
    assert units.publish(other, [{"epoch": 1}], {"acc": 1.0})["code_commit"] == "abc1234+dirty"


def test_unit_finish_and_resume_checks(tmp_path):
    unit = units.Unit(dir=tmp_path / "seed0", config={"epochs": 2}, seed=0)
    unit.partial.mkdir()
    atomic.atomic_write_json(unit.partial / "config.json", unit.config)
    atomic.atomic_write_json(unit.partial / "result.json", {"acc": 1.0})
    assert not unit.finished
    unit.finish()
    assert unit.finished and not unit.partial.exists() and unit.result() == {"acc": 1.0}
    units.check_resumable([unit], resume=True)
    with pytest.raises(ConfigError, match="pass --resume"):
        units.check_resumable([unit], resume=False)
    other = units.Unit(dir=unit.dir, config={"epochs": 3}, seed=0)
    with pytest.raises(ConfigError, match="epochs: 2 != 3"):
        units.check_resumable([other], resume=True)


def test_each_sweep_of_a_pool_is_summarised_when_its_own_units_finish(tmp_path):
    events = []

    def fn(u):
        events.append(("unit", u.dir.parent.name, u.seed))
        if u.dir.parent.name == "b" and u.seed == 1:
            raise KeyboardInterrupt  # the pool stops in the second sweep
        atomic.atomic_write_json(units.start_work(u) / "result.json", {"seed": u.seed})
        u.finish()

    def finisher(name):
        def finish(results):
            events.append(("summary", name, [r["seed"] for r in results]))
            return {"name": name}
        return finish

    def sweeps():
        return [units.Sweep([units.Unit(dir=tmp_path / name / f"s{i}", config={}, seed=i) for i in range(2)], fn,
                           finisher(name)) for name in ("a", "b")]

    with pytest.raises(KeyboardInterrupt):
        units.run_sweeps(sweeps(), resume=False, desc="pool", show_progress=False)
    # sweep a was summarised before the pool stopped; b was not
    assert events == [("unit", "a", 0), ("unit", "a", 1), ("summary", "a", [0, 1]), ("unit", "b", 0),
                      ("unit", "b", 1)]
    events.clear()

    def fn_ok(u):
        atomic.atomic_write_json(units.start_work(u) / "result.json", {"seed": u.seed})
        u.finish()

    out = units.run_sweeps([units.Sweep(s.units, fn_ok, s.finish) for s in sweeps()], resume=True, desc="pool",
                          show_progress=False)
    assert out == [{"name": "a"}, {"name": "b"}]
    assert events == [("summary", "b", [0, 1]), ("summary", "a", [0, 1])]  # b on its last unit, a at the end


def test_serial_executor_skips_finished_units(tmp_path):
    done = []

    def fn(u):
        done.append(u.seed)
        u.partial.mkdir()
        atomic.atomic_write_json(u.partial / "result.json", {"seed": u.seed})
        u.finish()

    us = [units.Unit(dir=tmp_path / f"s{i}", config={}, seed=i) for i in range(3)]
    fn(us[1])
    done.clear()
    assert [r["seed"] for r in units.run_serial(us, fn)] == [0, 1, 2]
    assert done == [0, 2]


def test_a_unit_another_process_is_running_is_refused_not_raced(tmp_path):
    import subprocess
    import sys

    unit = units.Unit(dir=tmp_path / "seed0", config={}, seed=0, label="MUTAG seed 0")
    ran = []

    def fn(u):
        u.partial.mkdir()
        units.publish(u, [], {"acc": 1.0})
        ran.append(u.seed)

    code = ("import sys, fcntl, time\nf = open(sys.argv[1], 'a+')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
            "f.write('pid 4242 on elsewhere'); f.flush()\nprint('held', flush=True)\ntime.sleep(60)")
    # another process holds the unit, as a second `autogcl ... --resume` on the same folder would
    holder = subprocess.Popen([sys.executable, "-c", code, str(unit.lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError, match=r"MUTAG seed 0 is being run by pid 4242 on elsewhere"):
            units.run_one(unit, fn, wait=0.3)
        unit.partial.mkdir()  # its work in progress is not deleted by a fresh run either
        with pytest.raises(ConfigError, match="is being run by"):
            units.run_units([unit], fn, resume=False, desc="t", show_progress=False)
        assert unit.partial.is_dir() and ran == []
    finally:
        holder.kill()  # a killed holder (kill -9) releases the lock: nothing stale is left
        holder.wait(timeout=30)
    units.run_units([unit], fn, resume=False, desc="t", show_progress=False)
    assert ran == [0] and _without_commit(unit.result()) == {"acc": 1.0}
    assert not unit.lock.exists()  # removed when the unit ended: run folders keep no lock files


def test_a_failed_unit_leaves_no_lock_file(tmp_path):
    unit = units.Unit(dir=tmp_path / "seed0", config={}, seed=0)

    def fails(u):
        raise ValueError("bad data")
    with pytest.raises(ValueError, match="bad data"):
        units.run_one(unit, fails)
    assert list(tmp_path.iterdir()) == []


def test_a_unit_finished_by_the_run_it_waited_for_is_kept_only_if_its_configuration_matches(tmp_path):
    import subprocess
    import sys

    unit = units.Unit(dir=tmp_path / "seed0", config={"epochs": 2}, seed=0)
    code = ("import json, sys, fcntl, time, pathlib\nf = open(sys.argv[1], 'a+')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\ntime.sleep(0.5)\nd = pathlib.Path(sys.argv[2]); d.mkdir()\n"
            "(d / 'config.json').write_text(json.dumps({'epochs': 3}))\n(d / 'result.json').write_text('{}')\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(unit.lock), str(unit.dir)], stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(ConfigError, match="epochs: 3 != 2"):  # the other run's result is not adopted
        units.run_one(unit, lambda u: pytest.fail("a finished unit ran again"), wait=30)
    assert holder.wait(timeout=30) == 0


def test_storage_without_file_locks_runs_the_unit_unlocked(tmp_path, monkeypatch, caplog):
    import errno
    import fcntl

    def refuse(f, op):
        raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(fcntl, "flock", refuse)
    unit = units.Unit(dir=tmp_path / "seed0", config={}, seed=0)

    def fn(u):
        u.partial.mkdir()
        units.publish(u, [], {"acc": 1.0})
    with caplog.at_level("WARNING"):
        units.run_one(unit, fn)
    assert _without_commit(unit.result()) == {"acc": 1.0} and "cannot be locked (No locks available)" in caplog.text


def test_a_one_unit_run_folder_may_hold_lock_files_of_earlier_runs(tmp_path):
    (tmp_path / ".old-run.lock").write_text("pid 1 on x\n")
    units.check_run_folder(tmp_path, "pre-training")  # no error: only a lock file
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="holds other files"):
        units.check_run_folder(tmp_path, "pre-training")


def test_a_unit_records_the_commit_its_process_loaded_not_the_one_checked_out_when_it_ends(tmp_path, monkeypatch):
    """A long run (hours of fine-tuning) outlives commits to its checkout: its units must name the
    code the process imported. A throwaway git checkout holding provenance.py commits again after
    the import; the label still names the first commit, and an edit after the import adds no +dirty."""
    import shutil
    import subprocess
    import sys

    from autogcl import provenance

    monkeypatch.delenv("AUTOGCL_COMMIT", raising=False)
    repo = tmp_path / "checkout"
    (repo / "autogcl").mkdir(parents=True)
    shutil.copy(provenance.__file__, repo / "autogcl" / "provenance.py")
    (repo / "autogcl" / "__init__.py").write_text("")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "first"]):
        subprocess.run(git + args, cwd=repo, check=True, timeout=30)
    first = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
    script = (
        "import subprocess, sys\n"
        f"sys.path.insert(0, {str(repo)!r})\n"
        "from autogcl import provenance\n"
        f"git = {git!r}\n"
        f"subprocess.run(git + ['commit', '-q', '--allow-empty', '-m', 'second'], cwd={str(repo)!r}, check=True)\n"
        f"open({str(repo / 'autogcl' / 'provenance.py')!r}, 'a').write('# edited\\n')\n"
        "print(provenance.commit_label())\n"
        "print(provenance.code_commit())\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env={k: v for k, v in os.environ.items() if k != "AUTOGCL_COMMIT"})
    assert out.returncode == 0, out.stderr
    label, now = out.stdout.splitlines()
    assert label == first  # the loaded code: neither the second commit nor "+dirty"
    assert first not in now and "True" in now  # while the checkout itself has moved on and is dirty
