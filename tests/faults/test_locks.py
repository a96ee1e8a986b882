"""One writer per run folder and per checkpoint: a second process stops at once and names the
holder (pid and host); the lock of a killed run is detected and taken over."""

import os
import signal
import socket
import subprocess
import sys

import pytest

from autogcl import units
from autogcl.locks import RunFolderBusy, exclusive, lock_file_of

from .common import ENV, cli, small_fit

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


def test_a_second_sweep_on_the_same_folder_stops_at_once_naming_the_holder(tmp_path):
    proc = holder(tmp_path)
    try:
        with pytest.raises(RunFolderBusy, match=rf"--out {tmp_path} is in use by pid {proc.pid} on "
                                                rf"{socket.gethostname()} since .*: "):
            units.run_units(toy_units(tmp_path), publish, resume=False, desc="t", show_progress=False)
        assert not any(p.name.startswith("seed") for p in tmp_path.iterdir())  # nothing was touched
    finally:
        proc.kill()
        proc.wait()


def test_the_lock_of_a_killed_run_is_taken_over(tmp_path, caplog):
    proc = holder(tmp_path)
    proc.send_signal(signal.SIGKILL)  # kill -9: no clean-up ran; its record stays in the lock file
    proc.wait()
    assert f"pid {proc.pid}" in lock_file_of(tmp_path, folder=True).read_text()
    with caplog.at_level("WARNING", logger="autogcl.locks"):
        results = units.run_units(toy_units(tmp_path), publish, resume=False, desc="t", show_progress=False)
    assert [r["value"] for r in results] == [0, 1]
    assert f"taking over the lock of a run that ended without releasing it (pid {proc.pid}" in caplog.text
    assert not lock_file_of(tmp_path, folder=True).exists()  # a run that ends removes its lock


def test_the_same_command_twice_on_one_out_refuses_the_second(data_root, tmp_path):
    out = tmp_path / "out"
    proc = holder(out / "MUTAG-autogcl")  # the folder of the first command's units
    try:
        done = cli(["unsupervised", "--dataset", "MUTAG", "--epochs", "2", "--eval-epochs", "2", "--seeds", "2",
                    "--data-root", data_root, "--out", out, "--no-progress"], tmp_path)
    finally:
        proc.kill()
        proc.wait()
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"is in use by pid {proc.pid} on {socket.gethostname()}" in done.stderr
    assert "Traceback" not in done.stderr


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
