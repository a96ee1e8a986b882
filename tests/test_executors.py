"""Executors: serial and Ray run the same units to the same results; a Ray worker killed with
SIGKILL is retried and its unit continues from its checkpoint; Ctrl-C stops a Ray sweep
cleanly and --resume (serial or Ray) finishes it. Ray runs on a local 2-CPU cluster that the
tests start and shut down."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from autogcl import units
from autogcl.errors import ConfigError, DataError
from autogcl.executors import RayExecutor, SerialExecutor, make_executor
from tests.faults.common import autogcl_here

UNIT_ARGS = ["--dataset", "MUTAG", "--epochs", "4", "--eval-epochs", "2,4", "--seeds", "2", "--jobs", "1",
             "--no-progress"]


def toy_units(tmp_path, n=3):
    return [units.Unit(dir=tmp_path / f"u{i}", config={"i": i}, seed=i, label=f"u{i}") for i in range(n)]


def toy_fn(unit):
    """Publishes the unit's seed squared and the torch threads it ran with."""
    units.start_work(unit)
    return units.publish(unit, [{"epoch": 1}], {"value": unit.seed ** 2, "threads": torch.get_num_threads()})


def test_serial_executor_runs_units_with_their_threads(tmp_path):
    before = torch.get_num_threads()
    res = units.run_units(toy_units(tmp_path), toy_fn, False, "toy", show_progress=False,
                         executor=SerialExecutor(cpus_per_unit=1))
    assert [r["value"] for r in res] == [0, 1, 4]
    assert {r["threads"] for r in res} == {1}
    assert torch.get_num_threads() == before


def test_one_function_per_unit(tmp_path):
    def other(unit):
        units.start_work(unit)
        return units.publish(unit, [], {"value": -1})

    us = toy_units(tmp_path, 2)
    assert [r["value"] for r in units.run_units(us, [toy_fn, other], False, "toy", show_progress=False)] == [0, -1]
    with pytest.raises(ValueError, match="2 unit functions for 3 units"):
        units.run_units(toy_units(tmp_path / "b"), [toy_fn, other], False, "toy", show_progress=False)


def test_unknown_executor_and_missing_ray(monkeypatch):
    with pytest.raises(ConfigError, match="unknown executor 'dask'"):
        make_executor("dask")
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails
    with pytest.raises(ConfigError, match=r"pip install 'autogcl\[ray\]'"):
        make_executor("ray")


# --- Ray -------------------------------------------------------------------------------------

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # the workers use the session's private cache too (conftest's _private_cache)
    cache = str(tmp_path_factory.getbasetemp() / "cache")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"AUTOGCL_CACHE": cache}})
    yield
    ray.shutdown()


def test_ray_runs_units_with_threads_of_their_cpus(cluster, tmp_path):
    res = units.run_units(toy_units(tmp_path), toy_fn, False, "toy", show_progress=False,
                         executor=RayExecutor(cpus_per_unit=1))
    assert [r["value"] for r in res] == [0, 1, 4]
    assert {r["threads"] for r in res} == {1}
    assert ray.is_initialized()  # a cluster the caller started is left running


def test_ray_unit_error_is_raised_as_itself(cluster, tmp_path):
    def broken(unit):
        raise DataError(f"{unit.label}: graph 3 has no nodes")

    with pytest.raises(DataError, match="u0: graph 3 has no nodes"):
        units.run_units(toy_units(tmp_path, 1), broken, False, "toy", show_progress=False, executor=RayExecutor())


def test_ray_unit_larger_than_cluster_is_refused(cluster, tmp_path):
    with pytest.raises(ConfigError, match="asks for 3 CPU.*cluster has 2"):
        units.run_units(toy_units(tmp_path, 1), toy_fn, False, "toy", show_progress=False,
                       executor=RayExecutor(cpus_per_unit=3))
    with pytest.raises(ConfigError, match="asks for 0.5 GPU.*cluster has 0"):
        units.run_units(toy_units(tmp_path / "g", 1), toy_fn, False, "toy", show_progress=False,
                       executor=RayExecutor(gpus_per_unit=0.5))


def test_pretraining_runs_as_one_ray_unit(cluster, data_root, tmp_path):
    import gzip

    from autogcl.models.mol_gin import load_encoder
    from autogcl.protocols.pretrain import PretrainConfig, pretrain

    with gzip.open(data_root / "pretrain" / "moses_train.csv.gz", "rt") as f:
        lines = [next(f) for _ in range(81)]
    (tmp_path / "slice.csv").write_text("".join(lines))
    cfg = PretrainConfig(corpus=str(tmp_path / "slice.csv"), epochs=1, batch_size=16, chunk_size=40, dim=16,
                         num_layers=2, gen_hidden=8)
    serial = pretrain(cfg, tmp_path / "serial", workers=1, show_progress=False,
                      executor=SerialExecutor(cpus_per_unit=1))
    on_ray = pretrain(cfg, tmp_path / "ray", workers=1, show_progress=False, executor=RayExecutor())
    assert on_ray["steps"] == serial["steps"] > 0 and on_ray["runtime"]["torch_threads"] == 1
    a, b = (load_encoder(tmp_path / d / "encoder.pt")[0] for d in ("serial", "ray"))
    # both on one torch thread (cpus_per_unit=1; the Ray unit's checked above), the same
    # operations in another process: bit-exact by construction
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def results(out: Path) -> dict:
    found = {}
    for f in sorted(out.glob("MUTAG-autogcl/seed*/result.json")):
        r = json.loads(f.read_text())
        found[f.parent.name] = {"evaluations": r["evaluations"], "selections": r["selections"],
                                "threads": r["runtime"]["torch_threads"]}
    return found


@pytest.fixture(scope="module")
def serial_reference(tmp_path_factory, data_root):
    """Two MUTAG seeds run one after the other with one thread each."""
    from autogcl.data import load_tu
    from autogcl.protocols.unsupervised import UnsupervisedConfig, run_sweep

    out = tmp_path_factory.mktemp("serial")
    cfg = UnsupervisedConfig(dataset="MUTAG", epochs=4, eval_epochs=[2, 4])
    run_sweep(cfg, load_tu("MUTAG", data_root), [0, 1], out, show_progress=False,
              executor=SerialExecutor(cpus_per_unit=1))
    found = results(out)
    assert len(found) == 2 and {r["threads"] for r in found.values()} == {1}
    return found


def unit_workers(label: str = "MUTAG-autogcl seed") -> list[int]:
    """Processes running an autogcl unit of these tests as a Ray task (their title is
    ``ray::autogcl <unit label>``)."""
    pids, title = [], f"ray::autogcl {label}".encode()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "cmdline").read_bytes().startswith(title):
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


def test_ray_sweep_matches_serial_and_survives_a_killed_worker(cluster, serial_reference, data_root, tmp_path):
    """Seed 0's worker is SIGKILLed after its first checkpoint: Ray retries the task, the unit
    continues after the checkpointed epochs (their rows, timings included, are kept) and both
    seeds end as in the serial run."""
    from autogcl.data import load_tu
    from autogcl.protocols.unsupervised import UnsupervisedConfig, run_sweep

    ckpt = tmp_path / "MUTAG-autogcl" / ".seed0.partial" / "checkpoint.pt"
    seen = {}

    def killer():
        t0 = time.time()
        while time.time() - t0 < 300 and not ckpt.is_file():
            time.sleep(0.02)
        pids = unit_workers()
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        seen["killed"] = pids
        time.sleep(0.2)
        seen["rows"] = torch.load(ckpt, weights_only=True)["rows"]

    watcher = threading.Thread(target=killer, daemon=True)
    watcher.start()
    cfg = UnsupervisedConfig(dataset="MUTAG", epochs=4, eval_epochs=[2, 4])
    run_sweep(cfg, load_tu("MUTAG", data_root), [0, 1], tmp_path, show_progress=False,
              executor=RayExecutor(cpus_per_unit=1))
    watcher.join(10)
    assert seen.get("killed"), "no unit worker was running when the checkpoint appeared"
    # accuracies compared exactly: every unit runs on one torch thread (results() holds the
    # threads, so a unit on more fails here) and a retried unit replays its checkpointed run
    assert results(tmp_path) == serial_reference
    import csv

    with open(tmp_path / "MUTAG-autogcl" / "seed0" / "metrics.csv") as f:
        final = list(csv.DictReader(f))
    assert seen["rows"], "the checkpoint held no epoch"
    for before, after in zip(seen["rows"], final):  # the checkpointed epochs were not trained again
        assert float(after["time_s"]) == pytest.approx(before["time_s"], abs=1e-9)


def cli(args, cwd, **kw):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    # a test run started in the background of a non-interactive shell inherits SIGINT ignored;
    # the command gets the default disposition, as in a terminal, so Ctrl-C reaches it
    return subprocess.Popen([sys.executable, "-m", "autogcl", *map(str, args)], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)


def test_ctrl_c_stops_a_ray_sweep_and_resume_finishes_it(serial_reference, data_root, tmp_path):
    """SIGINT to the command while its Ray units train: it exits 130 at once with its workers
    gone, the partial units stay, and --resume (serial) gives the uninterrupted results."""
    if ray.is_initialized():
        ray.shutdown()  # the command starts its own local cluster
    out = tmp_path / "out"
    proc = cli(["unsupervised", *UNIT_ARGS, "--data-root", data_root, "--out", out, "--executor", "ray"], tmp_path)
    try:
        t0 = time.time()
        while time.time() - t0 < 300 and proc.poll() is None and not any(out.glob("*/.seed*.partial/checkpoint.pt")):
            time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "stopped by SIGINT" in err and "resume with: autogcl unsupervised" in err
    time.sleep(1)
    assert unit_workers() == []
    assert list(out.glob("MUTAG-autogcl/.seed*.partial"))
    done = autogcl_here(["unsupervised", *UNIT_ARGS, "--data-root", data_root, "--out", out, "--resume",
                         "--cpus-per-unit", "1"], tmp_path)  # serial, in this process: no signal reaches it
    assert done.returncode == 0, done.stderr[-2000:]
    assert results(out) == serial_reference
    assert not list(out.glob("MUTAG-autogcl/.seed*.partial"))


def test_a_killed_ray_driver_is_resumed_with_resume(serial_reference, data_root, tmp_path):
    """kill -9 of the command while its Ray units train: the partial units and their checkpoints
    stay, the run folder's lock is taken over, and --resume gives the uninterrupted results (a
    unit worker still alive after a bounded wait is ended by the test)."""
    if ray.is_initialized():
        ray.shutdown()  # the command starts its own local cluster
    out = tmp_path / "out"
    proc = cli(["unsupervised", *UNIT_ARGS, "--data-root", data_root, "--out", out, "--executor", "ray"], tmp_path)
    try:
        t0 = time.time()
        while time.time() - t0 < 300 and proc.poll() is None and not any(out.glob("*/.seed*.partial/checkpoint.pt")):
            time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    t0 = time.time()
    while unit_workers() and time.time() - t0 < 60:
        time.sleep(0.5)
    for pid in unit_workers():  # bounded: a worker Ray left behind is the test's to end
        os.kill(pid, signal.SIGKILL)
    # the sweep was cut: no summary (a unit worker left running may still have finished its unit)
    assert not (out / "MUTAG-autogcl" / "summary.json").exists()
    done = autogcl_here(["unsupervised", *UNIT_ARGS, "--data-root", data_root, "--out", out, "--resume",
                         "--cpus-per-unit", "1"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "taking over the lock of a run that ended without releasing it" in done.stderr, done.stderr[-2000:]
    assert results(out) == serial_reference


def test_ray_address_that_nothing_answers_is_refused_at_once(tmp_path):
    import socket

    from autogcl.executors import check_reachable

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.time()
    with pytest.raises(ConfigError, match=f"--ray-address 127.0.0.1:{port}: no Ray cluster answers there"):
        check_reachable(f"127.0.0.1:{port}")
    assert time.time() - t0 < 6
    with pytest.raises(ConfigError, match="expected auto or HOST:PORT"):
        check_reachable("headnode")
    check_reachable("auto")
    check_reachable(None)
