"""One writer per run folder and per checkpoint: a second process stops at once and names the
holder (pid and host); the lock of a killed run is detected and taken over."""

import os
import resource
import signal
import socket
import subprocess
import sys
import time

import pytest

from autogcl import units
from autogcl.locks import RunFolderBusy, exclusive, holder_file, holding_all, lock_file_of

from .common import ENV, small_fit

HOLD = ("import sys, time\nfrom pathlib import Path\nfrom autogcl.locks import exclusive\n"
        "with exclusive(Path(sys.argv[1]), 'x', folder=sys.argv[2] == 'folder'):\n"
        "    print('held', flush=True)\n    time.sleep(120)\n")


def holder(path, kind="folder") -> subprocess.Popen:
    """Another process that holds the lock of ``path`` until it is killed."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), kind], env=ENV, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def toy_units(folder, n=2):
    return [units.Unit(dir=folder / f"seed{i}", config={"i": i}, seed=i, label=f"seed {i}") for i in range(n)]


def publish(unit):
    units.start_work(unit)
    return units.publish(unit, [{"epoch": 1}], {"value": unit.seed})


def truncating_filelock(monkeypatch) -> None:
    """Make :func:`autogcl.locks.exclusive` use a filelock that empties the lock file as it
    tries the lock, as filelock 3.x does (it opens the file with O_TRUNC; 4.x does not)."""
    import autogcl.locks

    real = autogcl.locks.FileLock

    class Truncating:
        def __init__(self, path, **kw):
            self.path, self.inner = path, real(path, **kw)

        def acquire(self, *args, **kw):
            open(self.path, "w").close()
            return self.inner.acquire(*args, **kw)

        def release(self):
            self.inner.release()

        @property
        def _context(self):
            return self.inner._context

    monkeypatch.setattr(autogcl.locks, "FileLock", Truncating)


@pytest.mark.parametrize("truncating", [False, True])
def test_a_second_sweep_on_the_same_folder_stops_at_once_naming_the_holder(tmp_path, monkeypatch, truncating):
    """Each later sweep, a third too, where the tries of the second emptied the lock file
    (``truncating``), names the live holder at once."""
    proc = holder(tmp_path)
    if truncating:
        truncating_filelock(monkeypatch)
    try:
        for _ in range(2):
            t0 = time.monotonic()
            with pytest.raises(RunFolderBusy, match=rf"--out {tmp_path} is in use by pid {proc.pid} on "
                                                    rf"{socket.gethostname()} since .*: "):
                units.run_units(toy_units(tmp_path), publish, resume=False, desc="t", show_progress=False)
            assert time.monotonic() - t0 < 1.5  # at once: exclusive waits 2 s only for a holder not alive here
        assert not any(p.name.startswith("seed") for p in tmp_path.iterdir())  # nothing was touched
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("truncating", [False, True])
def test_the_lock_of_a_killed_run_is_taken_over(tmp_path, caplog, monkeypatch, truncating):
    """``truncating``: a filelock that empties the lock file as it tries the lock (3.x opens it
    with O_TRUNC; 4.x does not): the warning still names the dead run."""
    if truncating:
        truncating_filelock(monkeypatch)
    proc = holder(tmp_path)
    proc.send_signal(signal.SIGKILL)  # kill -9: no clean-up ran; its record stays in the lock file
    proc.wait()
    assert f"pid {proc.pid}" in holder_file(lock_file_of(tmp_path, folder=True)).read_text()
    with caplog.at_level("WARNING", logger="autogcl.locks"):
        results = units.run_units(toy_units(tmp_path), publish, resume=False, desc="t", show_progress=False)
    assert [r["value"] for r in results] == [0, 1]
    assert f"taking over the lock of a run that ended without releasing it (pid {proc.pid}" in caplog.text
    lock = lock_file_of(tmp_path, folder=True)
    assert not lock.exists() and not holder_file(lock).exists()  # a run that ends removes its lock


def _cpu_seconds(cmd) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``cmd``; its result and the CPU seconds (user + system) it took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def test_a_second_writer_stops_at_start_up_before_reading_any_data(data_root, tmp_path, monkeypatch):
    """The lock first (issue 43): a second `autogcl unsupervised` on the --out of a running one
    stops right after parsing, naming the holder, and loads no dataset nor torch. Measured as the
    CPU time of the refused command (start to exit) minus that of python importing the light
    modules it needs to parse and lock (autogcl.cli, the configs, locks): CPU seconds, not wall
    seconds, so that a busy machine does not decide the figure."""
    out, cache = tmp_path / "out", tmp_path / "cache"
    monkeypatch.setenv("AUTOGCL_CACHE", str(cache))  # the session's cache may hold MUTAG already: this one is empty
    proc = holder(out / "mutag-autogcl", "file")  # the first command's lock of its sweep: OUT/.mutag-autogcl.lock
    try:
        done, cpu = _cpu_seconds([sys.executable, "-m", "autogcl", "unsupervised", "--dataset", "mutag", "--epochs",
                                  "2", "--eval-epochs", "2", "--data-root", str(data_root), "--out", str(out),
                                  "--no-progress"])
    finally:
        proc.kill()
        proc.wait()
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"--out {out} (mutag-autogcl) is in use by pid {proc.pid} on {socket.gethostname()}" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (cache / "processed").exists()  # no dataset was read
    assert not (out / "MUTAG-autogcl").exists()
    _, imports = _cpu_seconds([sys.executable, "-c", "import autogcl.cli, autogcl.protocols.configs, autogcl.locks"])
    assert cpu - imports < 2.0, (cpu, imports)


def test_sweeps_of_other_datasets_share_an_out_side_by_side(tmp_path):
    proc = holder(tmp_path / "mutag-autogcl", "file")
    try:
        with holding_all(tmp_path, ["PROTEINS-autogcl"]):  # another sweep of the same --out
            pass
        with pytest.raises(RunFolderBusy, match=rf"\(mutag-autogcl\) is in use by pid {proc.pid}"):
            with holding_all(tmp_path, ["PROTEINS-autogcl", "Mutag-autogcl"]):
                pass
    finally:
        proc.kill()
        proc.wait()
    made = tmp_path / "new"
    with holding_all(made, ["x"]):
        assert made.is_dir()
    assert not made.exists()  # a folder the lock made and nothing filled is removed


def test_a_checkpoint_is_written_by_one_fit_at_a_time(data_root, tmp_path):
    ckpt = tmp_path / "ckpt.pt"
    proc = holder(ckpt, "file")
    try:
        with pytest.raises(RunFolderBusy, match=rf"checkpoint {ckpt} is in use by pid {proc.pid}"):
            small_fit(data_root, ckpt, epochs=1)
        assert not ckpt.exists()
    finally:
        proc.kill()
        proc.wait()
    small_fit(data_root, ckpt, epochs=1)  # the holder is gone: the fit runs
    assert ckpt.is_file() and not lock_file_of(ckpt, folder=False).exists()


def test_a_lock_is_released_on_error_and_held_only_once(tmp_path):
    with pytest.raises(ValueError):
        with exclusive(tmp_path, "x", folder=True):
            raise ValueError("bad")
    assert not lock_file_of(tmp_path, folder=True).exists()
    with exclusive(tmp_path, "first", folder=True):
        with pytest.raises(RunFolderBusy, match=f"pid {os.getpid()}"):  # a second holder, even here
            with exclusive(tmp_path, "second", folder=True, wait=0):
                pass


def test_a_second_run_of_a_one_unit_folder_stops_at_once(tmp_path):
    """Pre-training and the views run have one unit whose folder is the --out: its own lock
    refuses a second run at once when the holder is a live process of this host."""
    unit = units.Unit(dir=tmp_path / "pretrain", config={}, seed=0, label="pretrain autogcl")
    with units.hold_unit(unit):
        code = ("import sys, pathlib\nfrom autogcl import units\n"
                "u = units.Unit(dir=pathlib.Path(sys.argv[1]), config={}, seed=0, label='pretrain autogcl')\n"
                "units.run_one(u, lambda u: None, wait=3600)\n")  # it can only end by refusing at once
        done = subprocess.run([sys.executable, "-c", code, str(unit.dir)], env=ENV, capture_output=True, text=True,
                              timeout=120)
    assert done.returncode == 1
    assert f"pretrain autogcl is being run by pid {os.getpid()} on {socket.gethostname()}" in done.stderr
