"""``autogcl reproduce --missing``: the manifest's missing cells run through the protocols' own
commands, land in their committed folders, and a second call has nothing left to do."""

import json
import re

from autogcl.cli import main
from autogcl.protocols.manifest import CELLS, Cell, missing
from autogcl.protocols.runner import reproduce

CHEAP = Cell("unsupervised", ("MUTAG", "autogcl"), ("docs/results/summaries/tiny/MUTAG-autogcl",),
             "runs/tiny/unsupervised/MUTAG-autogcl",
             "autogcl unsupervised --dataset MUTAG --method autogcl --seeds 1 --epochs 1 --eval-epochs 1 "
             "--data-root ../shared/data --out runs/tiny/unsupervised --resume --no-progress", seeds=1)


def test_a_missing_cell_runs_and_is_published_once(tmp_path, data_root, monkeypatch):
    monkeypatch.setenv("AUTOGCL_COMMIT", "abc1234")
    lines = []
    assert reproduce([CHEAP], tmp_path, data_root=str(data_root), dry_run=True, echo=lines.append) == []
    assert "--data-root " + str(data_root) in lines[0] and "--resume" not in lines[0]
    assert not (tmp_path / "runs").exists()  # a dry run runs nothing

    calls = []

    def run(argv):
        calls.append(argv)
        return main(argv)

    done = reproduce([CHEAP], tmp_path, data_root=str(data_root), extra=["--executor", "serial"], resume=True,
                     run=run, echo=lines.append)
    assert done == [CHEAP] and len(calls) == 1 and "--resume" in calls[0]
    summary = json.loads((tmp_path / CHEAP.runs[0] / "summary.json").read_text())
    assert summary["dataset"] == "MUTAG" and summary["n_seeds"] == 1
    unit = tmp_path / "docs/results/units/tiny/MUTAG-autogcl/seed0"
    # no checkpoints; the unit names the commit and device that ran it
    assert sorted(p.name for p in unit.iterdir()) == ["config.json", "metrics.csv", "provenance.json", "result.json"]
    unit_record = json.loads((unit / "provenance.json").read_text())
    assert (unit_record["commit"], unit_record["device"]) == ("abc1234", "cpu")
    assert json.loads((unit / "result.json").read_text())["code_commit"] == "abc1234"  # recorded as it ran
    assert "unit_commits" not in json.loads((tmp_path / CHEAP.runs[0] / "provenance.json").read_text())
    assert missing([CHEAP], tmp_path) == []
    assert reproduce([CHEAP], tmp_path, run=run, echo=lines.append) == [] and len(calls) == 1  # nothing left


def test_cells_sharing_a_command_run_it_once(tmp_path):
    ablation = [c for c in CELLS if c.label[0] == "NCI1" and c.label[1].startswith("node_drop")]
    assert len(ablation) == 6
    calls = []
    reproduce(ablation, tmp_path, run=lambda argv: calls.append(argv) or 0, echo=lambda _: None)
    assert len(calls) == 1 and calls[0][:2] == ["ablate", "graphcl-aug"]



def test_a_rerun_of_one_ratio_keeps_the_committed_units_of_the_ratios_done(tmp_path):
    """One ablation command runs every ratio; rerunning a stale ratio restores the committed units
    of a done ratio sharing the command (all of them, so ``--resume`` trains none again) and of the
    stale one only those that name their commit. Without the siblings' restore the command would
    find ratio 0.1's sweep folder empty."""
    ablation = {c.label[1]: c for c in CELLS if c.label[0] == "NCI1" and c.label[1].startswith("node_drop")}

    def committed(cell, folds, commit):
        summary = tmp_path / cell.runs[0]
        summary.mkdir(parents=True)
        score = {"mean": 70.0, "std": 0.0, "values": [70.0] * folds}
        (summary / "summary.json").write_text(json.dumps({
            "protocol": "semi", "dataset": "NCI1", "row": "graphcl_cl", "tag": "NCI1-graphcl_cl", "n_folds": folds,
            "n_seeds": 1, "selection": "val", "val": score, "test_max": score}))
        if commit:
            (summary / "provenance.json").write_text(json.dumps({"commit": commit}))
        for f in range(folds):
            unit = tmp_path / cell.runs[0].replace("/summaries/", "/units/") / "seed0" / f"fold{f}"
            unit.mkdir(parents=True)
            (unit / "result.json").write_text(json.dumps({"seed": 0, "fold": f, "acc": 70.0 + f}))
            if commit and f != 3:  # one unit of a recorded cell predates provenance.json
                (unit / "provenance.json").write_text(json.dumps({"commit": commit}))

    committed(ablation["node_drop 0.1"], 10, "abc1234")
    committed(ablation["node_drop 0.5"], 10, None)  # stale: names no commit
    (tmp_path / ablation["node_drop 0.5"].runs[0].replace("/summaries/", "/units/") / "seed0" / "fold2"
     / "provenance.json").write_text(json.dumps({"commit": "abc1234"}))
    seen = {}

    def run(argv):
        for ratio in ("node_drop 0.1", "node_drop 0.5"):
            seen[ratio] = sorted(p.parent.name for p in (tmp_path / ablation[ratio].out).rglob("result.json"))
        return 0

    reproduce(list(ablation.values()), tmp_path, resume=True, run=run, echo=lambda _: None,
              missing_cells=False, stale_cells=True)
    assert seen["node_drop 0.1"] == [f"fold{f}" for f in range(10)]  # all, the unrecorded fold3 too
    assert seen["node_drop 0.5"] == ["fold2"]  # the stale ratio: only its recorded unit


def test_the_cli_lists_the_gpu_queue(capsys):
    assert main(["reproduce", "--missing", "--dry-run", "--compute", "gpu", "--data-root", "/mirror"]) == 0
    out = capsys.readouterr().out
    assert "autogcl semi --dataset COLLAB --row joint" in out and "--data-root /mirror" in out
    assert "ablate" not in out  # a CPU cell
    assert main(["reproduce", "--dry-run"]) == 2  # nothing named to run


# --- a budgeted window (run_budget): a fake command in place of autogcl, so that the scheduler's
# decisions (what starts, what is stopped, what is published) are the test's, in seconds

import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from autogcl.protocols.runner import plan, run_budget  # noqa: E402

FAKE = Cell("unsupervised", ("FAKE", "autogcl"), ("docs/results/summaries/fake/FAKE-autogcl",),
            "runs/fake/FAKE-autogcl",
            "autogcl unsupervised --dataset FAKE --method autogcl --seeds 3 --out runs/fake --resume", seeds=3)

#: a stand-in for `autogcl unsupervised`: a unit (--first-seed S --seeds 1) sleeps, then writes its
#: result.json (seed 2, or $SLOW_SEED, sleeps long); every finished command writes the summary of its seeds.
#: SIGTERM: exit 143, as the protocols do after their checkpoint.
FAKE_SCRIPT = r'''
import json, os, signal, sys, time
from pathlib import Path
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
argv = sys.argv[1:]
opt = lambda name, d=None: argv[argv.index(name) + 1] if name in argv else d
out = Path(opt("--out")) / "FAKE-autogcl"
seeds = int(opt("--seeds"))
first = int(opt("--first-seed", 0))
for s in range(first, first + seeds):
    unit = out / f"seed{s}"
    if (unit / "result.json").is_file():
        continue
    time.sleep(60 if s == int(os.environ.get("SLOW_SEED", 2)) else 0.3)
    unit.mkdir(parents=True, exist_ok=True)
    (unit / "config.json").write_text("{}")
    (unit / "result.json").write_text(json.dumps({"seed": s, "acc": 80.0 + s, "runtime": {"device": "cpu"}}))
# like the protocols, every finished command writes the summary of its own seeds
vals = {"mean": 80.5, "std": 0.5, "values": [80.0 + s for s in range(first, first + seeds)]}
(out / "summary.json").write_text(json.dumps({
    "protocol": "unsupervised", "dataset": "FAKE", "method": "autogcl", "tag": "FAKE-autogcl",
    "n_seeds": seeds, "seeds": list(range(first, first + seeds)), "config": {}, "val": vals, "test_max": vals,
    "train_time_s": 0.3}))
'''


def fake_spawn(script):
    def spawn(argv, root, log):
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as f:
            return subprocess.Popen([sys.executable, str(script), *argv], cwd=root, stdout=f,
                                    stderr=subprocess.STDOUT, start_new_session=True)
    return spawn


def test_a_budget_starts_what_fits_stops_the_rest_and_publishes_what_finished(tmp_path, monkeypatch):
    script = tmp_path / "fake_autogcl.py"
    script.write_text(FAKE_SCRIPT)
    monkeypatch.setenv("AUTOGCL_COMMIT", "abc1234")
    root = tmp_path / "repo"
    root.mkdir()
    lines = []
    jobs = plan([FAKE], root, unit_default=0.5)
    assert [j.label for j in jobs] == [f"unsupervised / FAKE / autogcl seed {s}" for s in range(3)]
    assert all("--first-seed" in j.argv and j.argv[j.argv.index("--seeds") + 1] == "1" for j in jobs)
    # no estimate at all: nothing starts, nothing breaks
    assert run_budget([FAKE], root, 5, spawn=fake_spawn(script), echo=lines.append)["not_started"] == 3
    assert not (root / "runs").exists() and any("no estimate" in line for line in lines)

    t0 = time.monotonic()
    res = run_budget([FAKE], root, 4, jobs=2, unit_default=0.5, grace=5, spawn=fake_spawn(script),
                     echo=lines.append)
    assert time.monotonic() - t0 < 30  # stopped at the budget, not after seed 2's minute
    assert (res["finished"], res["stopped"], res["failed"], res["not_started"]) == (2, 1, 0, 0)
    assert res["published"] == [FAKE]
    summary = json.loads((root / FAKE.runs[0] / "summary.json").read_text())
    assert summary["n_seeds"] == 2 and FAKE.count(summary) == 2 and FAKE.status(root) == "partial"
    provenance = json.loads((root / FAKE.runs[0] / "provenance.json").read_text())
    assert provenance["commit"] == "abc1234" and provenance["devices"] == ["cpu"]
    units = root / "docs/results/units/fake/FAKE-autogcl"
    assert sorted(p.name for p in units.iterdir()) == ["seed0", "seed1"]  # the stopped seed is not published

    # a bare machine: the run folder is gone; the committed units come back, only seed 2 is left
    import shutil

    shutil.rmtree(root / "runs")
    jobs = plan([FAKE], root)
    assert [j.label for j in jobs] == ["unsupervised / FAKE / autogcl seed 2"]
    assert (root / FAKE.out / "seed0" / "result.json").is_file()  # restored
    # the committed summary now estimates a unit (0.3 s, its train_time_s on the CPU), ahead of
    # --unit-seconds; it does not fit 0.2 s: not started, and nothing committed is lost
    assert plan([FAKE], root, unit_default=100)[0].seconds == 0.3
    res = run_budget([FAKE], root, 0.2, unit_default=100, spawn=fake_spawn(script), echo=lines.append)
    assert res["not_started"] == 1 and res["published"] == [] and FAKE.count(
        json.loads((root / FAKE.runs[0] / "summary.json").read_text())) == 2


def test_estimates_come_from_committed_summaries_of_the_same_device(tmp_path):
    from autogcl.protocols.estimates import unit_seconds
    from autogcl.protocols.manifest import TRANSFER_CELLS

    tox21 = next(c for c in TRANSFER_CELLS if c.label == ("tox21", "none"))
    from tests.conftest import REPO

    est = unit_seconds(tox21, REPO, "cuda")
    assert est is not None and "summaries/gpu/transfer" in est[1] and "x 3.8" in est[1]  # bbbp's, scaled
    bbbp = json.loads((REPO / "docs/results/summaries/gpu/transfer/no_pretrain/bbbp/summary.json").read_text())
    assert abs(est[0] - bbbp["train_time_s"] * 7831 / 2039) < 1e-6
    assert unit_seconds(tox21, tmp_path, "cuda") is None  # no committed file, no estimate


def test_the_cli_plans_a_budgeted_window(capsys):
    assert main(["reproduce", "--missing", "--dry-run", "--budget", "540", "--jobs", "8", "--margin", "1.5", "--compute", "gpu",
                 "--only", "transfer / bbbp / none", "--data-root", "/mirror", "--device", "cuda"]) == 0
    out = capsys.readouterr().out
    # a GPU estimate: the bbbp GPU study's summary, or the cell's own committed GPU units once
    # a window has run some (the first seeds left then depend on what is committed)
    assert re.search(r"plan: transfer / bbbp / none seed \d: ~\d+ s \(docs/results/(summaries/gpu|units/paper)/transfer", out)
    assert "tox21" not in out


def test_sigterm_stops_every_job_publishes_what_finished_and_then_raises(tmp_path, monkeypatch):
    """SIGTERM to reproduce (a scheduler's preemption): no job starts after it, the running one
    gets SIGTERM as at the budget (it checkpoints and exits), the finished unit is published, and
    then Preempted is raised (the command line's resume line); no job outlives the call, so
    ``--resume`` finds no sweep folder still locked by one."""
    import os
    import signal
    import threading

    import pytest

    from autogcl import preempt
    from autogcl.errors import Preempted

    script = tmp_path / "fake_autogcl.py"
    script.write_text(FAKE_SCRIPT)
    monkeypatch.setenv("SLOW_SEED", "1")  # seed 1 sleeps a minute
    root = tmp_path / "repo"
    root.mkdir()
    procs, lines = [], []
    spawn = fake_spawn(script)

    def recording(argv, where, log):
        procs.append(spawn(argv, where, log))
        return procs[-1]

    timer = threading.Timer(3.0, os.kill, (os.getpid(), signal.SIGTERM))
    t0 = time.monotonic()
    with preempt.handling(), pytest.raises(Preempted):
        timer.start()
        run_budget([FAKE], root, 300, jobs=1, unit_default=0.5, grace=10, spawn=recording, echo=lines.append)
    timer.cancel()
    assert time.monotonic() - t0 < 30, lines  # not after seed 1's minute, nor the budget
    assert procs and all(p.poll() is not None for p in procs), lines  # no job left running
    assert any(line.startswith("reproduce: stopped by a signal (exit code 143): unsupervised / FAKE / autogcl seed 1")
               for line in lines), lines
    assert any("not started: unsupervised / FAKE / autogcl seed 2: stopped by a signal first" in line
               for line in lines), lines
    units = root / "docs/results/units/fake/FAKE-autogcl"
    assert (units / "seed0").is_dir() and not (units / "seed1").exists()


def test_a_window_whose_first_seed_is_stopped_publishes_units_but_no_summary(tmp_path, monkeypatch):
    """Seeds 1 and 2 finished in an earlier window (their one-seed commands left a summary of
    seed 2 alone in the run folder); seed 0 is stopped: no summary of seeds 0..k-1 exists, so
    none is published, only the finished units."""
    script = tmp_path / "fake_autogcl.py"
    script.write_text(FAKE_SCRIPT)
    monkeypatch.setenv("SLOW_SEED", "0")
    root = tmp_path / "repo"
    for s in (1, 2):
        unit = root / FAKE.out / f"seed{s}"
        unit.mkdir(parents=True)
        (unit / "result.json").write_text(json.dumps({"seed": s, "runtime": {"device": "cpu"}}))
    vals = {"mean": 82.0, "std": 0.0, "values": [82.0]}
    (root / FAKE.out / "summary.json").write_text(json.dumps({
        "protocol": "unsupervised", "dataset": "FAKE", "method": "autogcl", "tag": "FAKE-autogcl", "n_seeds": 1,
        "seeds": [2], "config": {}, "val": vals, "test_max": vals}))
    res = run_budget([FAKE], root, 3, jobs=3, unit_default=0.5, grace=5, spawn=fake_spawn(script),
                     echo=lambda _: None)
    assert (res["finished"], res["stopped"], res["published"]) == (0, 1, [])
    assert not (root / FAKE.runs[0] / "summary.json").exists() and FAKE.status(root) == "missing"
    units = root / "docs/results/units/fake/FAKE-autogcl"
    assert sorted(p.name for p in units.iterdir()) == ["seed1", "seed2"]


def test_seeds_of_one_sweep_folder_never_run_at_once(tmp_path, monkeypatch):
    """The protocols lock a sweep folder: two seeds of one cell would collide, so a window runs
    them one after the other even with free slots (two cells would share the slots)."""
    script = tmp_path / "fake_autogcl.py"
    script.write_text(FAKE_SCRIPT)
    monkeypatch.setenv("SLOW_SEED", "99")  # every seed quick
    root = tmp_path / "repo"
    root.mkdir()
    lines = []
    run_budget([FAKE], root, 30, jobs=3, unit_default=0.5, grace=5, spawn=fake_spawn(script), echo=lines.append)
    events = [line.split(":")[1].strip().split(" ")[0] + line.rsplit("seed ", 1)[1][:1] for line in lines
              if line.startswith(("reproduce: start", "reproduce: done"))]
    assert events == ["start0", "done0", "start1", "done1", "start2", "done2"], lines


def test_estimates_read_a_cells_committed_units_before_its_summary_exists(tmp_path):
    """A cell whose first units finished (committed as units, no summary yet) is estimated from
    the mean time of those units on the device asked for; units of the other device don't count,
    and without its own files the cell falls back to its proxies (or None)."""
    from autogcl.protocols.estimates import unit_seconds
    from autogcl.protocols.manifest import SEMI_CELLS, units_folder

    dd = next(c for c in SEMI_CELLS if c.label == ("DD", "naive"))
    units = tmp_path / units_folder(dd.runs[0]) / "seed0"
    for fold, (dev, t) in enumerate([("cpu", 1000.0), ("cpu", 1500.0), ("cuda:0", 40.0)]):
        (units / f"fold{fold}").mkdir(parents=True)
        (units / f"fold{fold}" / "result.json").write_text(json.dumps({"time_s": t, "runtime": {"device": dev}}))
    (units / ".fold3.partial").mkdir()  # an unfinished unit's checkpoint folder is not a unit
    (units / ".fold3.partial" / "result.json").write_text(json.dumps({"time_s": 1.0, "runtime": {"device": "cpu"}}))
    cpu, gpu = unit_seconds(dd, tmp_path, "cpu"), unit_seconds(dd, tmp_path, "cuda")
    assert cpu[0] == 1250.0 and "mean of 2 finished units" in cpu[1] and units_folder(dd.runs[0]) in cpu[1]
    assert gpu[0] == 40.0 and "mean of 1 finished unit)" in gpu[1]
    # a summary of the cell's own wins over its units
    summary = tmp_path / dd.runs[0] / "summary.json"
    summary.parent.mkdir(parents=True)
    summary.write_text(json.dumps({"time_per_fold_s": 900.0}))
    (summary.parent / "provenance.json").write_text(json.dumps({"devices": ["cpu"]}))
    assert unit_seconds(dd, tmp_path, "cpu") == (900.0, f"{dd.runs[0]}/summary.json")
    # a summary over units of both devices (seeds on a GPU, then on the CPU): its mean is neither
    # device's time, and a GPU estimate of it would keep the cell out of every GPU window
    (summary.parent / "provenance.json").write_text(json.dumps({"devices": ["cpu", "cuda:0"]}))
    cpu, gpu = unit_seconds(dd, tmp_path, "cpu"), unit_seconds(dd, tmp_path, "cuda")
    assert cpu[0] == 1250.0 and "mean of 2 finished units" in cpu[1]
    assert gpu[0] == 40.0 and "mean of 1 finished unit)" in gpu[1]
    transfer_units = [c for c in CELLS if c.protocol == "transfer" and c.proxy]
    assert transfer_units and unit_seconds(transfer_units[0], tmp_path / "empty", "cpu") is None


def test_a_window_never_shadows_a_summary_of_more_seeds_in_another_folder_of_the_cell(tmp_path, monkeypatch):
    """A transfer cell's tables read its paper folder first, then the size study's (3 CPU seeds,
    no units to restore). A window that finishes seeds 0 and 1 publishes their units, but no
    2-seed summary in the paper folder, which would hide the 3 seeds; when the other folder holds
    fewer seeds than the window finished, the window's summary is published."""
    script = tmp_path / "fake_autogcl.py"
    script.write_text(FAKE_SCRIPT)
    monkeypatch.setenv("AUTOGCL_COMMIT", "abc1234")
    cell = Cell("unsupervised", ("FAKE", "autogcl"),
                ("docs/results/summaries/fake/FAKE-autogcl", "docs/results/summaries/sizes/FAKE-autogcl"),
                FAKE.out, FAKE.command, seeds=10)  # 10 wanted: the 3-seed study leaves it partial

    def study(root, n):  # the other folder's committed summary of n seeds
        vals = {"mean": 70.0, "std": 0.0, "values": [70.0] * n}
        folder = root / cell.runs[1]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "summary.json").write_text(json.dumps({
            "protocol": "unsupervised", "dataset": "FAKE", "method": "autogcl", "tag": "FAKE-autogcl",
            "n_seeds": n, "seeds": list(range(n)), "config": {}, "val": vals, "test_max": vals,
            "train_time_s": 0.3}))

    for n_study, published in ((3, False), (1, True)):
        root = tmp_path / f"repo{n_study}"
        study(root, n_study)
        res = run_budget([cell], root, 4, jobs=2, unit_default=0.5, grace=5, spawn=fake_spawn(script),
                         echo=lambda _: None)  # seed 2 sleeps a minute: stopped at the budget
        assert (res["finished"], res["stopped"]) == (2, 1)
        assert (res["published"] == [cell]) is published
        assert (root / cell.runs[0] / "summary.json").is_file() is published
        folder, summary = cell.found(root)
        assert (folder, cell.count(summary)) == ((Path(cell.runs[0]), 2) if published else (Path(cell.runs[1]), 3))
        units = root / "docs/results/units/fake/FAKE-autogcl"
        assert sorted(p.name for p in units.iterdir()) == ["seed0", "seed1"]  # published either way


def test_a_summary_over_units_of_several_windows_names_each_commit(tmp_path, monkeypatch):
    """Each window's new units name the commit that ran them (their provenance.json); a summary
    published over units of two windows counts the units of each commit, and the units that
    were committed already keep the commit of their own window."""
    script = tmp_path / "fake_autogcl.py"
    script.write_text(FAKE_SCRIPT)
    root = tmp_path / "repo"
    monkeypatch.setenv("AUTOGCL_COMMIT", "aaa1111")
    res = run_budget([FAKE], root, 4, jobs=2, unit_default=0.5, grace=5, spawn=fake_spawn(script),
                     echo=lambda _: None)  # seeds 0 and 1 finish, seed 2 is stopped
    assert (res["finished"], res["stopped"]) == (2, 1)
    first = json.loads((root / FAKE.runs[0] / "provenance.json").read_text())
    assert first["commit"] == "aaa1111" and "unit_commits" not in first

    monkeypatch.setenv("AUTOGCL_COMMIT", "bbb2222")
    monkeypatch.setenv("SLOW_SEED", "99")  # seed 2 is quick now
    res = run_budget([FAKE], root, 10, jobs=2, unit_default=0.5, grace=5, spawn=fake_spawn(script),
                     echo=lambda _: None)
    assert res["finished"] == 1 and res["published"] == [FAKE]
    record = json.loads((root / FAKE.runs[0] / "provenance.json").read_text())
    assert record["commit"] == "bbb2222" and record["unit_commits"] == {"aaa1111": 2, "bbb2222": 1}
    units = root / "docs/results/units/fake/FAKE-autogcl"
    assert [json.loads((units / f"seed{s}" / "provenance.json").read_text())["commit"] for s in range(3)] == [
        "aaa1111", "aaa1111", "bbb2222"]


def test_a_unit_starts_only_when_its_estimate_times_the_margin_fits(tmp_path, monkeypatch):
    """Estimates are training times; start-up and units sharing a device add to them. With
    --margin 1.3 (the default) a unit estimated at 10 s does not start in 12 s; with 1.0 it does;
    the command line passes its --margin on."""
    script = tmp_path / "fake_autogcl.py"
    script.write_text(FAKE_SCRIPT)
    monkeypatch.setenv("SLOW_SEED", "99")  # every fake unit is quick
    lines = []
    res = run_budget([FAKE], tmp_path / "a", 12, unit_default=10, grace=5, spawn=fake_spawn(script),
                     echo=lines.append)
    assert res["not_started"] == 3 and res["finished"] == 0
    assert any("~10 s (x 1.3) does not fit the budget" in line for line in lines)
    res = run_budget([FAKE], tmp_path / "b", 12, unit_default=10, grace=5, margin=1.0, spawn=fake_spawn(script),
                     echo=lambda _: None)
    assert res["finished"] >= 1

    import autogcl.protocols.runner as runner

    seen = {}

    def fake_budget(cells, root, budget, **kw):
        seen.update(kw, budget=budget)
        return {"failed": 0}

    monkeypatch.setattr(runner, "run_budget", fake_budget)
    assert main(["reproduce", "--missing", "--budget", "12", "--margin", "1.7", "--only", "transfer / bbbp / none",
                 "--root", str(tmp_path / "c")]) == 0
    assert (seen["budget"], seen["margin"]) == (12.0, 1.7)


def test_unit_provenance_when_the_commit_is_unknown_or_a_unit_was_run_again(tmp_path, monkeypatch):
    """Without a known commit, units that name none make no "unit_commits" (the tables then say
    "commit not recorded", not a commit called "not recorded"); a unit run again locally with
    another result gets the provenance of its new run."""
    import autogcl.protocols.publishing as publishing

    script = tmp_path / "fake_autogcl.py"
    script.write_text(FAKE_SCRIPT)
    monkeypatch.setenv("SLOW_SEED", "99")
    monkeypatch.setattr(publishing, "code_commit", lambda root=None: (None, False))
    root = tmp_path / "repo"
    res = run_budget([FAKE], root, 10, jobs=1, unit_default=0.5, grace=5, spawn=fake_spawn(script),
                     echo=lambda _: None)
    assert res["published"] == [FAKE]
    record = json.loads((root / FAKE.runs[0] / "provenance.json").read_text())
    assert record["commit"] is None and "unit_commits" not in record
    units = root / "docs/results/units/fake/FAKE-autogcl"
    assert not (units / "seed0" / "provenance.json").exists()  # nothing to name

    monkeypatch.setattr(publishing, "code_commit", lambda root=None: ("ccc3333", False))
    (root / FAKE.out / "seed0" / "result.json").write_text(json.dumps({"seed": 0, "acc": 99.0,
                                                                       "runtime": {"device": "cuda"}}))
    publishing.publish_units(FAKE, root)
    assert json.loads((units / "seed0" / "provenance.json").read_text())["commit"] == "ccc3333"
    assert not (units / "seed1" / "provenance.json").exists()  # the same result: left as it was


def test_a_unit_published_over_a_committed_one_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """publish_units stages a unit beside its committed folder and swaps the folders: a full disk
    mid-unit leaves the committed unit as it was (before, its new config.json stood beside the old
    result.json and provenance.json), a kill between the two renames is undone by the next publish,
    which then writes the new unit whole, and a new result whose commit is unknown drops the old
    result's record."""
    import os

    import pytest

    import autogcl.atomic as atomic
    import autogcl.protocols.publishing as publishing
    from autogcl.errors import StorageError

    root = tmp_path / "repo"
    sweep, target = root / FAKE.out / "seed0", root / "docs/results/units/fake/FAKE-autogcl/seed0"
    for folder, tag, commit in ((target, "old", "old0000"), (sweep, "new", "new1111")):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps({"run": tag}))
        (folder / "result.json").write_text(json.dumps({"seed": 0, "acc": 70.0 if tag == "old" else 80.0,
                                                        "code_commit": commit, "runtime": {"device": "cpu"}}))
    (target / "provenance.json").write_text(json.dumps({"commit": "old0000"}))
    before = {f.name: f.read_bytes() for f in target.iterdir()}
    monkeypatch.setattr(publishing, "code_commit", lambda root=None: ("hhh9999", False))

    real_copy = publishing.atomic_copy

    def full_disk(src, dst):
        if Path(dst).name == "result.json":
            raise StorageError(f"cannot write {dst} (No space left on device); the previous file is kept as it was",
                               28, dst, "No space left on device")
        real_copy(src, dst)

    monkeypatch.setattr(publishing, "atomic_copy", full_disk)
    with pytest.raises(StorageError, match=r"seed0/result.json \(No space left on device\); the previous file"):
        publishing.publish_units(FAKE, root)
    assert {f.name: f.read_bytes() for f in target.iterdir()} == before  # nothing of the new unit
    monkeypatch.setattr(publishing, "atomic_copy", real_copy)

    real_rename = os.rename
    renames = []

    def killed(a, b):  # the process dies after the first rename of the swap
        if renames:
            raise KeyboardInterrupt
        renames.append(b)
        real_rename(a, b)

    monkeypatch.setattr(atomic.os, "rename", killed)
    with pytest.raises(KeyboardInterrupt):
        publishing.publish_units(FAKE, root)
    monkeypatch.setattr(atomic.os, "rename", real_rename)
    assert not target.exists() and Path(renames[0]).is_dir()  # the old unit aside, none in its place
    assert publishing.publish_units(FAKE, root) == [target]
    assert json.loads((target / "config.json").read_text()) == {"run": "new"}
    assert json.loads((target / "result.json").read_text())["acc"] == 80.0
    assert json.loads((target / "provenance.json").read_text())["commit"] == "new1111"
    assert sorted(p.name for p in target.parent.iterdir()) == ["seed0"]  # nothing staged or aside is left

    (sweep / "result.json").write_text(json.dumps({"seed": 0, "acc": 90.0}))  # run again, commit unknown
    monkeypatch.setattr(publishing, "code_commit", lambda root=None: (None, False))
    publishing.publish_units(FAKE, root)
    assert json.loads((target / "result.json").read_text())["acc"] == 90.0
    assert not (target / "provenance.json").exists()  # new1111 did not make this result


def test_publishing_again_what_is_committed_keeps_its_record(tmp_path, monkeypatch):
    """A cell published at one commit and published again at a later one, with the same summary
    and no new unit, keeps the provenance of the commit that made it; a new unit (or another
    summary) writes the record of the new publish."""
    import autogcl.protocols.publishing as publishing

    root = tmp_path / "repo"

    def unit(seed, acc):
        folder = root / FAKE.out / f"seed{seed}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text("{}")
        (folder / "result.json").write_text(json.dumps({"seed": seed, "acc": acc, "code_commit": "aaa1111",
                                                        "runtime": {"device": "cpu"}}))

    unit(0, 70.0)
    (root / FAKE.out / FAKE.file).write_text(json.dumps({"n_seeds": 1, "seeds": [0]}))
    monkeypatch.setattr(publishing, "code_commit", lambda root=None: ("aaa1111", False))
    dst = publishing.publish(FAKE, root)
    first = (dst / "provenance.json").read_text()
    assert json.loads(first)["commit"] == "aaa1111"

    monkeypatch.setattr(publishing, "code_commit", lambda root=None: ("bbb2222", False))
    assert publishing.publish(FAKE, root) == dst
    assert (dst / "provenance.json").read_text() == first  # the same cell: its record stays

    unit(1, 71.0)  # a new unit, a summary of two seeds: the new publish's record
    (root / FAKE.out / FAKE.file).write_text(json.dumps({"n_seeds": 2, "seeds": [0, 1]}))
    publishing.publish(FAKE, root)
    record = json.loads((dst / "provenance.json").read_text())
    assert record["commit"] == "bbb2222" and record["unit_commits"] == {"aaa1111": 2}


def test_publishing_on_a_full_disk_keeps_the_committed_cell_and_imports_no_torch(tmp_path, monkeypatch):
    """Publishing writes through :mod:`autogcl.atomic`: a publish that fails on a full disk keeps
    the committed summary, units and records as they were, leaves no part file, and says which
    file; and the publishing module stays light (no torch: ``autogcl docs`` and ``reproduce``)."""
    import errno
    import os
    import subprocess
    import sys

    import pytest

    import autogcl.atomic as atomic
    import autogcl.protocols.publishing as publishing
    from autogcl.errors import StorageError

    root = tmp_path / "repo"
    unit = root / FAKE.out / "seed0"
    unit.mkdir(parents=True)
    (unit / "config.json").write_text("{}")
    (unit / "result.json").write_text(json.dumps({"seed": 0, "acc": 70.0, "code_commit": "aaa1111"}))
    (root / FAKE.out / FAKE.file).write_text(json.dumps({"n_seeds": 1, "seeds": [0]}))
    dst = publishing.publish(FAKE, root)
    before = {p: p.read_bytes() for p in sorted(root.joinpath("docs").rglob("*")) if p.is_file()}

    (unit / "result.json").write_text(json.dumps({"seed": 0, "acc": 71.0, "code_commit": "bbb2222"}))
    (root / FAKE.out / FAKE.file).write_text(json.dumps({"n_seeds": 1, "seeds": [0], "mean": 71.0}))

    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fsync", no_space)
    with pytest.raises(StorageError, match=r"seed0/config.json \(No space left on device\); the previous file is kept"):
        publishing.publish(FAKE, root)
    after = {p: p.read_bytes() for p in sorted(root.joinpath("docs").rglob("*")) if p.is_file()}
    assert after == before and (dst / "summary.json") in after  # nothing half-written, no temporary file left

    probe = "import sys, autogcl.protocols.publishing; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=120)


def test_the_largest_transfer_sets_are_estimated_from_the_largest_set_measured_on_the_cpu():
    """The queue's CPU column (why MUV and HIV wait for a GPU): MUV and HIV have no committed run;
    their CPU estimate scales tox21's committed CPU summary by the number of molecules (not
    bbbp's, 20-46 times smaller), while their GPU estimate still reads the GPU runs of bbbp."""
    import pytest

    from autogcl.protocols.estimates import unit_seconds
    from autogcl.protocols.manifest import MOLECULES, RESULTS, TRANSFER_CELLS
    from tests.conftest import REPO

    for cell in TRANSFER_CELLS:
        ds, pre = cell.label
        tag = "mosesfullx1" if pre == "autogcl" else "no_pretrain"
        tox21 = f"{RESULTS}/summaries/paper/transfer/{tag}/tox21"
        cpu_proxies = [f for f, _ in cell.proxy if "/gpu/" not in f]
        if ds in ("muv", "hiv"):
            assert cpu_proxies[0] == tox21 and dict(cell.proxy)[tox21] == MOLECULES[ds] / MOLECULES["tox21"]
            est = unit_seconds(cell, REPO, "cpu")
            tox = json.loads((REPO / tox21 / "summary.json").read_text())
            expect = (tox["train_time_s"] + tox.get("eval_time_s", 0.0)) * MOLECULES[ds] / MOLECULES["tox21"]
            assert est[0] == pytest.approx(expect, rel=1e-9) and est[1].startswith(tox21)
            gpu = unit_seconds(cell, REPO, "cuda")
            assert "/gpu/" in gpu[1] and est[0] > gpu[0]
        else:
            assert tox21 not in cpu_proxies


#: a stand-in for `autogcl semi`: folds in order (each FOLD_S seconds), resumable, --fold-limit k
#: runs the first k; a finished command writes the summary of the folds it covers
FAKE_SEMI_SCRIPT = r'''
import json, os, signal, sys, time
from pathlib import Path
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
argv = sys.argv[1:]
opt = lambda name, d=None: argv[argv.index(name) + 1] if name in argv else d
out = Path(opt("--out")) / "FAKE-joint"
k = int(opt("--fold-limit", 10))
for fold in range(k):
    unit = out / "seed0" / f"fold{fold}"
    if (unit / "result.json").is_file():
        continue
    time.sleep(float(os.environ.get("FOLD_S", 0.3)))
    unit.mkdir(parents=True, exist_ok=True)
    (unit / "result.json").write_text(json.dumps({"fold": fold, "acc": 0.7, "runtime": {"device": "cpu"}}))
vals = {"mean": 70.0, "std": 0.0, "values": [70.0] * k}
(out / "summary.json").write_text(json.dumps({
    "protocol": "semi", "dataset": "FAKE", "row": "joint", "tag": "FAKE-joint", "n_seeds": 1, "n_folds": k,
    "config": {}, "val": vals, "test_max": vals, "time_per_fold_s": 0.3}))
'''

FAKE_SEMI = Cell("semi", ("FAKE", "joint"), ("docs/results/summaries/fakesemi/FAKE-joint",), "runs/fakesemi/FAKE-joint",
                 "autogcl semi --dataset FAKE --row joint --seeds 1 --out runs/fakesemi --resume", seeds=10)


def test_a_semi_cell_too_long_for_the_budget_runs_the_folds_that_fit(tmp_path, monkeypatch):
    """A semi command is one job of the folds it lacks; when they do not all fit, the window starts
    it with --fold-limit for the next folds that fit (estimate x margin each), publishes the
    summary of the folds done, and the next window continues from there. A committed summary is
    never replaced by one of fewer folds."""
    import shutil

    from autogcl.protocols.publishing import publish

    script = tmp_path / "fake_semi.py"
    script.write_text(FAKE_SEMI_SCRIPT)
    monkeypatch.setenv("AUTOGCL_COMMIT", "abc1234")
    monkeypatch.setenv("FOLD_S", "0.2")
    root = tmp_path / "repo"
    root.mkdir()
    (job,) = plan([FAKE_SEMI], root, unit_default=1.0)
    assert (job.units, job.seconds, job.per_unit, job.done) == (10, 10.0, 1.0, 0)
    assert job.shortened(2.5, 1.0).argv[-2:] == ["--fold-limit", "2"] and job.shortened(0.9, 1.0) is None
    lines = []
    res = run_budget([FAKE_SEMI], root, 3.5, unit_default=1.0, margin=1.2, grace=5, spawn=fake_spawn(script),
                     echo=lines.append)  # 10 folds of 1 s x 1.2 do not fit 3.5 s; 2 folds do (2.4 s)
    started = [line for line in lines if line.startswith("reproduce: start ")]
    assert "--fold-limit 2" in started[0] and "(2 of 10 units" in started[0], lines
    # the folds take 0.2 s, not the 1 s estimated: each shortened run ends early and the rest of
    # the job is queued again, with the next folds that fit what is left
    limits = [int(line.rsplit("--fold-limit ", 1)[1]) for line in started]
    assert limits == sorted(set(limits)) and limits[-1] < 10, lines
    assert (res["finished"], res["stopped"], res["published"]) == (len(limits), 0, [FAKE_SEMI])
    summary = json.loads((root / FAKE_SEMI.runs[0] / "summary.json").read_text())
    assert summary["n_folds"] == limits[-1] and FAKE_SEMI.status(root) == "partial"
    assert len(list((root / "docs/results/units/fakesemi/FAKE-joint/seed0").iterdir())) == limits[-1]
    # the next window continues where this one stopped
    shutil.rmtree(root / FAKE_SEMI.out / "seed0" / "fold2")  # as if this window had finished folds 0 and 1 only
    (root / FAKE_SEMI.out / "seed0" / "splits.json").unlink(missing_ok=True)
    for extra in range(2, limits[-1]):
        shutil.rmtree(root / "docs/results/units/fakesemi/FAKE-joint/seed0" / f"fold{extra}", ignore_errors=True)
        shutil.rmtree(root / FAKE_SEMI.out / "seed0" / f"fold{extra}", ignore_errors=True)
    (job,) = plan([FAKE_SEMI], root, unit_default=1.0)
    assert (job.units, job.done) == (8, 2) and job.shortened(3.5 * job.per_unit, 1.0).argv[-1] == "5"
    # a sweep whose saved splits hold 6 folds (an earlier, longer run that was stopped) is cut
    # like any other: the semi command resumes under a smaller limit (tests/protocols/test_semi.py)
    splits = root / FAKE_SEMI.out / "seed0" / "splits.json"
    splits.write_text(json.dumps({"folds": [{}] * 6}))
    (job,) = plan([FAKE_SEMI], root, unit_default=1.0)
    cut = job.shortened(2.5 * job.per_unit, 1.0)
    assert job.done == 2 and cut.argv[-1] == "4" and (cut.rest.done, cut.rest.units) == (4, 6)
    # folds past a gap do not count as done: --fold-limit done + m never runs more than m new folds
    for folder in (FAKE_SEMI.out, "docs/results/units/fakesemi/FAKE-joint"):  # a run's folder, and the committed units
        (root / folder / "seed0" / "fold1" / "result.json").unlink()
    (job,) = plan([FAKE_SEMI], root, unit_default=1.0)
    assert job.done == 1
    # a sweep folder holding an older, shorter summary does not shadow the committed one
    short = root / FAKE_SEMI.out / "summary.json"
    short.write_text(json.dumps({**summary, "n_folds": 1}))
    assert publish(FAKE_SEMI, root) is None
    assert json.loads((root / FAKE_SEMI.runs[0] / "summary.json").read_text())["n_folds"] == limits[-1]


def test_only_takes_several_texts():
    from autogcl.protocols.manifest import CELLS, select

    both = select(CELLS, "gpu", "transfer / hiv,semi / REDDIT-BINARY")
    assert {c.label for c in both} == {("hiv", "none"), ("hiv", "autogcl"), *(("REDDIT-BINARY", r) for r in
                                                                             ("labeled", "graphcl_cl", "naive", "joint"))}
    assert select(CELLS, "all", "transfer / hiv") == [c for c in both if c.protocol == "transfer"]


def test_big_semi_folds_are_estimated_from_the_sets_autogcl_runs_and_dds_row_ratio(tmp_path):
    """A REDDIT-BINARY or COLLAB semi fold without a committed run of its own is estimated from
    the set's unsupervised AutoGCL seed (its training time: GPU runs for cuda, CPU runs for cpu)
    times DD's ratio of that row's fold to an AutoGCL seed's training, both on the CPU; COLLAB
    has no GPU run, so no GPU estimate (a window never starts it). Read from a copy of the
    committed summaries the estimates need, so that no cell there has its own run."""
    import shutil

    from autogcl.protocols.estimates import unit_seconds
    from autogcl.protocols.manifest import RESULTS, SEMI_CELLS
    from tests.conftest import REPO

    def per_unit(folder, train=False):
        s = json.loads((REPO / folder / "summary.json").read_text())
        if "time_per_fold_s" in s:
            return s["time_per_fold_s"]
        return s["train_time_s"] + (0.0 if train else s.get("eval_time_s", 0.0))

    needed = [f"{RESULTS}/summaries/{w}unsupervised/{d}-autogcl" for w in ("", "gpu/") for d in ("DD", "REDDIT-BINARY")]
    needed += [f"{RESULTS}/summaries/unsupervised/COLLAB-autogcl"]
    needed += [f"{RESULTS}/summaries/semi/DD-{r}" for r in ("labeled", "graphcl_cl", "naive", "joint")]
    for folder in needed:
        (tmp_path / folder).mkdir(parents=True)
        for name in ("summary.json", "provenance.json"):
            if (REPO / folder / name).is_file():
                shutil.copy(REPO / folder / name, tmp_path / folder / name)
    checked = 0
    for cell in SEMI_CELLS:
        ds, row = cell.label
        if ds not in ("REDDIT-BINARY", "COLLAB"):
            continue
        checked += 1
        ratio = per_unit(f"{RESULTS}/summaries/semi/DD-{row}") / per_unit(
            f"{RESULTS}/summaries/unsupervised/DD-autogcl", train=True)
        cpu = unit_seconds(cell, tmp_path, "cpu")
        want = per_unit(f"{RESULTS}/summaries/unsupervised/{ds}-autogcl", train=True) * ratio
        assert abs(cpu[0] - want) < 1e-9 * want and f"DD-{row} / DD-autogcl on the CPU" in cpu[1], cpu
        gpu = unit_seconds(cell, tmp_path, "cuda")
        if ds == "COLLAB":
            assert gpu is None
        else:
            want = per_unit(f"{RESULTS}/summaries/gpu/unsupervised/{ds}-autogcl", train=True) * ratio
            assert abs(gpu[0] - want) < 1e-9 * want and "(training time)" in gpu[1] and gpu[0] < cpu[0]
    assert checked == 8


def test_publish_sweeps_writes_the_provenance_of_a_tables_run(tmp_path, monkeypatch):
    """scripts/docs/tables.sh publish: each sweep of the run folder (unsupervised seeds, semi
    folds) lands in its summary and units folders with a provenance.json naming the commit (the
    one a unit's result.json records it ran at, else the checkout's) and device; a unit still in its hidden .partial folder is left out, and a committed summary of
    more seeds is not replaced by a shorter one."""
    import autogcl.protocols.publishing as publishing

    monkeypatch.setattr(publishing, "code_commit", lambda root=None: ("abc1234", False))
    out = tmp_path / "runs/tables"

    def unit(path, **result):
        path.mkdir(parents=True)
        (path / "config.json").write_text("{}")
        (path / "metrics.csv").write_text("epoch\n")
        (path / "result.json").write_text(json.dumps({**result, "runtime": {"device": "cpu"}}))

    unit(out / "unsupervised/X-autogcl/seed0", seed=0, acc=80.0)
    unit(out / "unsupervised/X-autogcl/.seed1.partial", seed=1, acc=10.0)
    (out / "unsupervised/X-autogcl/summary.json").write_text(json.dumps({"n_seeds": 1, "val": {"mean": 80.0}}))
    unit(out / "semi/Y-joint/seed0/fold0", fold=0, acc=70.0, code_commit="fff0000+dirty")  # ran at another commit
    (out / "semi/Y-joint/summary.json").write_text(json.dumps({"n_seeds": 1, "n_folds": 1}))
    committed = tmp_path / "docs/results/summaries/semi/Y-joint"
    committed.mkdir(parents=True)
    (committed / "summary.json").write_text(json.dumps({"n_seeds": 1, "n_folds": 10}))

    written = publishing.publish_sweeps(Path("runs/tables"), Path("docs/results/summaries"), tmp_path)
    summary = tmp_path / "docs/results/summaries/unsupervised/X-autogcl"
    assert written == [summary]
    record = json.loads((summary / "provenance.json").read_text())
    assert (record["commit"], record["devices"]) == ("abc1234", ["cpu"]) and "unit_commits" not in record
    units = tmp_path / "docs/results/units"
    assert json.loads((units / "unsupervised/X-autogcl/seed0/provenance.json").read_text())["commit"] == "abc1234"
    assert not list((units / "unsupervised/X-autogcl").glob("*partial*"))
    # the semi sweep's unit is published with the commit it ran at (its result.json's), its
    # one-fold summary does not replace the ten-fold one
    semi_unit = json.loads((units / "semi/Y-joint/seed0/fold0/provenance.json").read_text())
    assert (semi_unit["commit"], semi_unit["dirty"]) == ("fff0000", True)
    assert json.loads((committed / "summary.json").read_text())["n_folds"] == 10


def test_publish_names_the_commit_a_pretraining_ran_at(tmp_path, monkeypatch):
    """A cell of one result.json (a pre-training, no units) is published with the commit that
    file records it ran at, not the publishing checkout's, and no empty unit_commits; one that
    records none gets the checkout's."""
    import autogcl.protocols.publishing as publishing

    monkeypatch.setattr(publishing, "code_commit", lambda root=None: ("bbb2222", False))
    for name, result, want in (("ran", {"code_commit": "aaa1111+dirty"}, ("aaa1111", True)),
                               ("old", {}, ("bbb2222", False))):
        run = tmp_path / "runs" / name
        run.mkdir(parents=True)
        (run / "result.json").write_text(json.dumps({**result, "runtime": {"device": "cpu"}}))
        cell = Cell("pretrain", (name,), (f"docs/results/pretrain/{name}",), f"runs/{name}", "", file="result.json")
        dst = publishing.publish(cell, tmp_path)
        record = json.loads((dst / "provenance.json").read_text())
        assert ((record["commit"], record["dirty"]), record["devices"]) == (want, ["cpu"]), record
        assert "unit_commits" not in record


def _committed_fake(root: Path, n: int) -> tuple[Path, Path]:
    """FAKE's committed summary of seeds 0..n-1 (every value 50) and its units, none naming a
    commit (code that predates provenance.json): (summary folder, units folder)."""
    summary = root / FAKE.runs[0]
    summary.mkdir(parents=True)
    old = {"mean": 50.0, "std": 0.0, "values": [50.0] * n}
    (summary / "summary.json").write_text(json.dumps({
        "protocol": "unsupervised", "dataset": "FAKE", "method": "autogcl", "tag": "FAKE-autogcl", "n_seeds": n,
        "seeds": list(range(n)), "config": {}, "val": old, "test_max": old, "train_time_s": 0.3}))
    units = root / "docs/results/units/fake/FAKE-autogcl"
    for s in range(n):
        (units / f"seed{s}").mkdir(parents=True)
        (units / f"seed{s}" / "result.json").write_text(json.dumps({"seed": s, "acc": 50.0,
                                                                    "runtime": {"device": "cpu"}}))
    return summary, units


def test_stale_cells_run_again_at_this_code_and_replace_their_summary(tmp_path, monkeypatch, capsys):
    """``autogcl reproduce --stale``: a done cell whose committed folder names no commit runs
    again; its committed units that name none are not restored (they run again), one that names
    its commit is kept; the new summary of as many seeds replaces the old one, with the commit of
    each unit; then nothing is stale."""
    from autogcl.protocols.manifest import stale

    script = tmp_path / "fake_autogcl.py"
    script.write_text(FAKE_SCRIPT)
    monkeypatch.setenv("AUTOGCL_COMMIT", "abc1234")
    monkeypatch.setenv("SLOW_SEED", "99")
    root = tmp_path / "repo"
    summary, units = _committed_fake(root, 3)
    (units / "seed1" / "provenance.json").write_text(json.dumps({"commit": "old1111"}))
    assert FAKE.status(root) == "done" and missing([FAKE], root) == [] and stale([FAKE], root) == [FAKE]
    assert plan([FAKE], root, unit_default=0.5) == []  # --missing alone: nothing to do
    jobs = plan([FAKE], root, unit_default=0.5, missing_cells=False, stale_cells=True)
    assert [j.label for j in jobs] == [f"unsupervised / FAKE / autogcl seed {s}" for s in (0, 2)]
    assert sorted(p.name for p in (root / FAKE.out).iterdir()) == ["seed1"]  # only the recorded unit came back

    lines = []
    res = run_budget([FAKE], root, 30, jobs=2, unit_default=0.5, grace=5, spawn=fake_spawn(script),
                     echo=lines.append, missing_cells=False, stale_cells=True)
    assert (res["finished"], res["failed"], res["published"]) == (2, 0, [FAKE]), lines
    new = json.loads((summary / "summary.json").read_text())
    assert new["n_seeds"] == 3 and new["val"]["values"] == [80.0, 81.0, 82.0]
    record = json.loads((summary / "provenance.json").read_text())
    assert record["commit"] == "abc1234" and record["unit_commits"] == {"abc1234": 2, "old1111": 1}
    assert json.loads((units / "seed0" / "provenance.json").read_text())["commit"] == "abc1234"
    assert json.loads((units / "seed0" / "result.json").read_text())["acc"] == 80.0
    assert stale([FAKE], root) == [] and FAKE.recorded(root)

    # the command line: --stale is a way to say what to run; on a root with nothing run, nothing is stale
    assert main(["reproduce", "--stale", "--dry-run", "--root", str(tmp_path / "empty")]) == 0
    assert "every listed cell is done and names its code commit" in capsys.readouterr().out


def test_a_partial_cell_of_unrecorded_code_resumes_from_all_its_committed_units(tmp_path):
    """A cell not done whose units predate provenance.json is run for the seeds it lacks only,
    with --missing and with --stale alike (it is not stale: only a done cell is rerun whole)."""
    from autogcl.protocols.manifest import stale

    root = tmp_path / "repo"
    _committed_fake(root, 2)
    assert FAKE.status(root) == "partial" and not FAKE.recorded(root) and stale([FAKE], root) == []
    for stale_cells in (False, True):
        jobs = plan([FAKE], root, unit_default=0.5, stale_cells=stale_cells)
        assert [j.label for j in jobs] == ["unsupervised / FAKE / autogcl seed 2"], stale_cells
        assert sorted(p.name for p in (root / FAKE.out).iterdir()) == ["seed0", "seed1"]  # restored


def test_a_restore_killed_on_the_way_leaves_no_finished_unit_without_its_record(tmp_path, monkeypatch):
    """restore writes a unit's carried record before its result.json: killed while writing the
    record, the sweep holds no finished unit (it runs again), not one whose record is lost (which
    publishing would then name with the checkout's commit)."""
    import pytest

    import autogcl.protocols.publishing as publishing

    root = tmp_path / "repo"
    unit = root / "docs/results/units/fake/FAKE-autogcl/seed0"
    unit.mkdir(parents=True)
    (unit / "config.json").write_text("{}")
    (unit / "result.json").write_text(json.dumps({"seed": 0, "acc": 70.0}))
    (unit / "provenance.json").write_text(json.dumps({"commit": "aaa1111"}))
    real = publishing.atomic_write_text

    def killed(path, text):
        if Path(path).name == publishing.CARRIED:
            raise KeyboardInterrupt
        real(path, text)

    monkeypatch.setattr(publishing, "atomic_write_text", killed)
    with pytest.raises(KeyboardInterrupt):
        publishing.restore(FAKE, root)
    assert publishing.finished_units(root / FAKE.out) == []
    monkeypatch.setattr(publishing, "atomic_write_text", real)
    assert publishing.restore(FAKE, root) == 1
    assert json.loads((root / FAKE.out / "seed0" / publishing.CARRIED).read_text())["provenance"]["commit"] == "aaa1111"


def test_units_restored_from_one_cell_and_published_into_another_keep_the_commit_that_ran_them(tmp_path, monkeypatch):
    """A study that shares units with a committed cell (the size study's no-pretrain row is the
    transfer table's) restores them into its own sweep and publishes them into its own folder:
    each unit keeps the commit and device its committed record names (its result.json names
    none: older code), a unit whose committed record names none stays unrecorded, and a unit
    run again over the restored one (another result) gets the record of the new run."""
    import autogcl.protocols.publishing as publishing

    root = tmp_path / "repo"
    src_units = root / "docs/results/units/fake/FAKE-autogcl"
    for seed, prov in ((0, {"commit": "aaa1111", "dirty": False, "device": "cuda"}), (1, None), (2, None)):
        unit = src_units / f"seed{seed}"
        unit.mkdir(parents=True)
        (unit / "config.json").write_text("{}")
        (unit / "result.json").write_text(json.dumps({"seed": seed, "acc": 70.0 + seed, "runtime": {"device": "cpu"}}))
        if prov:
            (unit / "provenance.json").write_text(json.dumps(prov))
    study = Cell("transfer", ("FAKE", "study"), ("docs/results/summaries/study/FAKE",), "runs/study/FAKE", "", seeds=3)
    assert publishing.restore(Cell(**{**FAKE.__dict__, "out": "runs/two"}), root, seeds=2) == 2  # a sweep of 2 seeds
    assert sorted(p.name for p in (root / "runs/two").iterdir()) == ["seed0", "seed1"]
    assert publishing.restore(Cell(**{**FAKE.__dict__, "out": study.out}), root) == 3
    # seed 2 is run again locally over its restored copy, with another result
    (root / study.out / "seed2" / "result.json").write_text(json.dumps({"seed": 2, "acc": 75.0,
                                                                        "runtime": {"device": "cpu"}}))
    (root / study.out / "summary.json").write_text(json.dumps({"n_seeds": 3, "seeds": [0, 1, 2]}))
    monkeypatch.setattr(publishing, "code_commit", lambda root=None: ("hhh9999", False))
    dst = publishing.publish(study, root)
    units = root / "docs/results/units/study/FAKE"
    assert json.loads((units / "seed0" / "provenance.json").read_text())["commit"] == "aaa1111"
    assert json.loads((units / "seed0" / "provenance.json").read_text())["device"] == "cuda"
    assert not (units / "seed1" / "provenance.json").exists()  # its committed record named no commit
    assert json.loads((units / "seed2" / "provenance.json").read_text())["commit"] == "hhh9999"  # run here
    record = json.loads((dst / "provenance.json").read_text())
    assert record["commit"] == "hhh9999"
    assert record["unit_commits"] == {"aaa1111": 1, "hhh9999": 1, publishing.UNRECORDED: 1}
