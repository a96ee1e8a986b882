"""One writer per run folder, per checkpoint and per unit: OS file locks with the holder written
into the lock file.

:func:`exclusive` (``filelock``) holds a run folder or a checkpoint file: the holder's pid,
host, start time and command are written into the lock file.

A second process on the same ``--out`` (or the same ``fit(checkpoint=...)`` file) stops at once
with a :class:`RunFolderBusy` naming the holder. The lock is ``flock``-based, so a holder that
dies, ``kill -9`` included, releases it; the next run finds the dead holder's record still in the
file, says that it takes the stale lock over, and goes on. A holder that ends normally removes
the file.

:func:`holding` holds one unit of a sweep (``.<unit>.lock`` beside its folder, ``flock``) while
it runs, so that two workers of one executor never race over a unit's checkpoint.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import shlex
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from .errors import ConfigError
from .paths import check_writable

__all__ = ["RunFolderBusy", "exclusive", "holding", "holding_all", "lock_file_of"]

log = logging.getLogger(__name__)
#: errno values of storage that refuses file locks (a unit then runs unlocked)
_NO_LOCKS = {errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL}


class RunFolderBusy(ConfigError):
    """Another live process holds the lock of a run folder or checkpoint."""


def lock_file_of(path: Path, folder: bool) -> Path:
    """The lock file of a folder (``<folder>/.autogcl.lock``) or a file (``.<name>.lock`` beside it)."""
    path = Path(path)
    return path / ".autogcl.lock" if folder else path.parent / f".{path.name}.lock"


def holder_file(lock_path: Path) -> Path:
    """Where the holder of the lock file ``lock_path`` (of :func:`exclusive`) writes who it is:
    a file beside it (``.autogcl.lock``: ``.autogcl@holder.lock``; no sweep key holds ``@``), since
    filelock 3.x empties the lock file itself as any contender tries the lock (it opens it with
    O_TRUNC)."""
    return lock_path.with_name(lock_path.stem + "@holder.lock")


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
    the block runs. ``wait``: seconds to wait for a holder that is not a live process of this host
    (a dead run's forked data-loader workers may keep its lock a moment; a run on another host).
    A :class:`RunFolderBusy` naming the holder at once when it is a live process of this host,
    else when it still holds the lock after ``wait``; ``what`` names the thing in that message (``"--out runs/x"``)."""
    lock_path = lock_file_of(path, folder)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait
    who = holder_file(lock_path)
    while True:
        lock = FileLock(str(lock_path), is_singleton=False)
        try:
            try:
                lock.acquire(timeout=0)
            except Timeout:  # held: at once when a live process of this host holds it, else wait for it
                if _alive(_read(who)):
                    raise
                lock.acquire(timeout=max(0.0, deadline - time.monotonic()), poll_interval=0.1)
        except Timeout:
            holder = _read(who) or "another process"
            raise RunFolderBusy(f"{what} is in use by {holder} (lock {lock_path}); let it finish, or stop it "
                                "and rerun with --resume") from None
        fd = getattr(getattr(lock, "_context", None), "lock_file_fd", None)
        if fd is None or _same_file(fd, lock_path):
            break
        lock.release()  # the holder we waited for removed the file as it ended: lock the new one
    stale = _read(who)  # a holder that ended cleanly removed it; a killed one left it
    if stale:
        log.warning("%s: taking over the lock of a run that ended without releasing it (%s)", what, stale)
    try:
        with open(who, "w", encoding="utf-8") as f:
            f.write(_record())
        yield lock_path
    finally:
        with contextlib.suppress(OSError):
            who.unlink()
        with contextlib.suppress(OSError):
            lock_path.unlink()  # while still held: a waiter then sees it is gone
        lock.release()


@contextlib.contextmanager
def holding(lock: Path, what: str, wait: float = 30.0) -> Iterator[None]:
    """Hold the unit lock file ``lock`` while the block runs (and remove it after); a
    :class:`ConfigError` naming the holder at once when it is a running process of this host,
    else when the lock is still held after ``wait`` seconds. ``what`` names the unit in messages.
    The lock is an OS file lock (``flock``), so a holder that dies, ``kill -9`` included,
    releases it: a killed run never leaves a stale lock (the wait covers forked children, such
    as data-loader workers, that outlive their parent by a few seconds). On NFS the server keeps
    a lost node's lock for its lease (about 90 s on NFSv4), hence the Ray executor's longer wait.
    Without ``fcntl`` (Windows), or on storage that refuses file locks (NFSv3 without its lock
    daemon, Lustre without ``flock``), the unit runs unlocked, with a warning."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    lock = Path(lock)
    lock.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait
    while True:  # until we hold the lock of the file that is at ``lock`` now
        f = open(lock, "a+")  # noqa: SIM115 (closed below, after the block)
        locked = _acquire(f, lock, what, deadline, fcntl)
        if not locked or _same_file(f.fileno(), lock):
            break
        f.close()  # the holder we waited for removed it when its unit ended: lock the new one
    try:
        if locked:
            f.seek(0)
            f.truncate()
            f.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
            f.flush()
        yield
    finally:
        lock.unlink(missing_ok=True)  # while still held: a waiter then sees it is gone
        f.close()


def _acquire(f, lock: Path, what: str, deadline: float, fcntl) -> bool:
    """Lock ``f`` (True), or False on storage that refuses locks; a :class:`ConfigError` naming the
    holder at ``deadline``."""
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno in _NO_LOCKS:
                log.warning("%s: %s cannot be locked (%s); running without protection against a second "
                            "run of the same folder", what, lock, exc.strerror)
                return False
            if not isinstance(exc, BlockingIOError):
                f.close()
                raise
            if time.monotonic() >= deadline or _live_holder(f):
                f.seek(0)
                holder = f.read().strip() or "another process"
                f.close()
                raise ConfigError(f"{what} is being run by {holder} (lock {lock}); "
                                  "let it finish, or stop it and rerun with --resume") from None
            time.sleep(0.2)


def _live_holder(f) -> bool:
    """Whether the lock file ``f`` names a running process of this host (:func:`_alive`)."""
    f.seek(0)
    return _alive(f.read())


def _alive(record: str) -> bool:
    """Whether a lock file's ``record`` (``pid N on HOST ...``) names a process of this host that
    is running: it holds the lock for real, so there is no point in waiting (a dead holder's
    forked children may still hold it a few seconds)."""
    m = re.match(r"pid (\d+) on (\S+)", record)
    if not m or m[2] != socket.gethostname() or int(m[1]) == os.getpid():
        return False
    try:
        os.kill(int(m[1]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


@contextlib.contextmanager
def holding_all(out: Path, keys: list[str], wait: float = 2.0) -> Iterator[None]:
    """Hold, in ``out``, the lock of each sweep named in ``keys`` (``OUT/.<key>.lock``, the key
    case-folded: ``mutag-autogcl`` and ``MUTAG-autogcl`` are one sweep) while the block runs: what
    a command takes right after parsing, before it reads any data, so that a second writer of
    the same sweeps stops at once, naming the holder (:class:`RunFolderBusy`). Sweeps of other
    keys may share the folder side by side. A folder this made, and left empty, is removed."""
    out = Path(out)
    check_writable(out)  # a file in the way, no permission, read-only storage: named, nothing made
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with contextlib.ExitStack() as stack:
            # one order: two commands never wait on each other; a key is a file name, never a path
            for key in sorted({re.sub(r"[^\w.+-]", "_", k.lower()) for k in keys}):
                stack.enter_context(exclusive(out / key, f"--out {out} ({key})", wait=wait))
            yield
    finally:
        if made:
            with contextlib.suppress(OSError):
                out.rmdir()  # only if empty
