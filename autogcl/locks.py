"""One writer per run folder and per checkpoint: an OS file lock (``filelock``) with the holder's
pid, host, start time and command written into the lock file.

A second process on the same ``--out`` (or the same ``fit(checkpoint=...)`` file) stops at once
with a :class:`RunFolderBusy` naming the holder. The lock is ``flock``-based, so a holder that
dies, ``kill -9`` included, releases it; the next run finds the dead holder's record still in the
file, says that it takes the stale lock over, and goes on. A holder that ends normally removes
the file.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from .errors import ConfigError

__all__ = ["RunFolderBusy", "exclusive", "lock_file_of"]

log = logging.getLogger(__name__)


class RunFolderBusy(ConfigError):
    """Another live process holds the lock of a run folder or checkpoint."""


def lock_file_of(path: Path, folder: bool) -> Path:
    """The lock file of a folder (``<folder>/.autogcl.lock``) or a file (``.<name>.lock`` beside it)."""
    path = Path(path)
    return path / ".autogcl.lock" if folder else path.parent / f".{path.name}.lock"


def _record() -> str:
    cmd = shlex.join(["autogcl", *sys.argv[1:]]) if sys.argv and sys.argv[0].endswith(("autogcl", "__main__.py")) \
        else shlex.join(sys.argv)
    return f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}: {cmd}\n"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def _same_file(fd: int | None, path: Path) -> bool:
    try:
        return fd is not None and os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def exclusive(path: Path, what: str, wait: float = 2.0, folder: bool = False) -> Iterator[Path]:
    """Hold the lock of ``path`` (a file, or a run folder with ``folder``: :func:`lock_file_of`) while
    the block runs. ``wait``: seconds to wait for a holder (a dead run's forked data-loader
    workers may keep its lock a moment). A :class:`RunFolderBusy` naming the holder when it is
    still held then; ``what`` names the thing in that message (``"--out runs/x"``)."""
    lock_path = lock_file_of(path, folder)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait
    while True:
        lock = FileLock(str(lock_path), is_singleton=False)
        try:
            lock.acquire(timeout=max(0.0, deadline - time.monotonic()), poll_interval=0.1)
        except Timeout:
            holder = _read(lock_path) or "another process"
            raise RunFolderBusy(f"{what} is in use by {holder} (lock {lock_path}); let it finish, or stop it "
                                "and rerun with --resume") from None
        fd = getattr(getattr(lock, "_context", None), "lock_file_fd", None)
        if fd is None or _same_file(fd, lock_path):
            break
        lock.release()  # the holder we waited for removed the file as it ended: lock the new one
    stale = _read(lock_path)
    if stale:
        log.warning("%s: taking over the lock of a run that ended without releasing it (%s)", what, stale)
    try:
        with open(lock_path, "w", encoding="utf-8") as f:
            f.write(_record())
        yield lock_path
    finally:
        with contextlib.suppress(OSError):
            lock_path.unlink()  # while still held: a waiter then sees it is gone
        lock.release()
