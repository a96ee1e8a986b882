"""A full disk (ENOSPC) or a file-size limit (EFBIG) during a checkpoint or result write: the
previous file is kept as it was, no temporary file is left, and the error names the file and
the reason (on the command line: one line, no traceback)."""

import errno
import json
import os
import resource
import signal
import subprocess
import sys

import pytest
import torch

from autogcl import atomic
from autogcl.errors import StorageError

from .common import ENV, cli, small_fit


def fill_disk(monkeypatch):
    """From now on every atomic write fails when it flushes its data, as on a full disk."""
    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(atomic.os, "fsync", no_space)


def test_a_result_that_cannot_be_written_keeps_the_previous_one(tmp_path, monkeypatch):
    path = tmp_path / "result.json"
    atomic.atomic_write_json(path, {"acc": 0.5})
    fill_disk(monkeypatch)
    with pytest.raises(StorageError, match=rf"cannot write {path} \(No space left on device\); the previous file "
                                           "is kept as it was") as info:
        atomic.atomic_write_json(path, {"acc": 0.9})
    assert info.value.errno == errno.ENOSPC and info.value.filename == path
    assert json.loads(path.read_text()) == {"acc": 0.5}
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
    with pytest.raises(StorageError, match=r"new.csv \(No space left on device\); nothing was written"):
        atomic.atomic_write_csv(tmp_path / "new.csv", [{"a": 1}])
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_a_checkpoint_that_cannot_be_written_keeps_the_previous_one(data_root, tmp_path, monkeypatch):
    ckpt = tmp_path / "ckpt.pt"
    small_fit(data_root, ckpt, epochs=2, ckpt_every=1)
    before = ckpt.read_bytes()
    fill_disk(monkeypatch)
    with pytest.raises(StorageError, match=rf"cannot write {ckpt} \(No space left on device\); the previous file"):
        small_fit(data_root, ckpt, epochs=3, ckpt_every=1)
    assert ckpt.read_bytes() == before and torch.load(ckpt, weights_only=True)["epoch"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]


LIMITED = """
import resource, signal, sys
from pathlib import Path
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing us
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from tests.faults.common import small_fit
from autogcl.errors import StorageError
try:
    small_fit(Path(sys.argv[1]), Path(sys.argv[3]), epochs=3, ckpt_every=1)
except StorageError as exc:
    print(exc, flush=True)
    sys.exit(3)
"""


def test_a_file_size_limit_in_another_process_keeps_the_checkpoint(data_root, tmp_path):
    """The real thing: RLIMIT_FSIZE below the checkpoint's size makes the kernel refuse the write
    (EFBIG) in the middle of the file."""
    ckpt = tmp_path / "ckpt.pt"
    small_fit(data_root, ckpt, epochs=2, ckpt_every=1)
    before = ckpt.read_bytes()
    done = subprocess.run([sys.executable, "-c", LIMITED, str(data_root), str(len(before) // 2), str(ckpt)],
                          cwd=os.getcwd(), env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr[-2000:]
    assert f"cannot write {ckpt} (File too large); the previous file is kept as it was" in done.stdout
    assert ckpt.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]


def test_the_command_under_a_file_size_limit_names_the_file(data_root, tmp_path):
    args = ["unsupervised", "--dataset", "MUTAG", "--epochs", "2", "--eval-epochs", "2", "--seeds", "1",
            "--jobs", "1", "--data-root", data_root, "--no-progress"]
    ok = cli(args + ["--out", tmp_path / "ref"], tmp_path)  # also fills the processed-data cache
    assert ok.returncode == 0, ok.stderr[-2000:]

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))  # below a checkpoint's size
    done = cli(args + ["--out", tmp_path / "cut"], tmp_path, preexec_fn=limit)
    assert done.returncode == 2, done.stderr[-2000:]
    ckpt = tmp_path / "cut" / "MUTAG-autogcl" / ".seed0.partial" / "checkpoint.pt"
    assert f"autogcl: error: cannot write {ckpt} (File too large); nothing was written" in done.stderr
    assert "Traceback" not in done.stderr
    assert not list((tmp_path / "cut").rglob("*.tmp"))
