"""Stopping cleanly on SIGTERM and SIGINT.

SLURM and Kubernetes preempt a job with SIGTERM (and SIGKILL some seconds later); Ctrl-C sends
SIGINT. While :func:`handling` is active (the command line, :meth:`autogcl.train.Trainer.fit`),
both signals are caught:

* inside a training loop (:func:`deferring`), the signal is noted and the loop stops before its
  next step (:func:`requested`); the trainer then writes the checkpoint of the last finished
  epoch and raises :class:`autogcl.errors.Preempted`, which names the signal, the epoch and the
  checkpoint;
* elsewhere (reading data, an evaluation between epochs, a second signal), it raises
  :class:`~autogcl.errors.Preempted` at once, as Python raises ``KeyboardInterrupt``.

The command line turns the exception into "stopped by SIGTERM after epoch E; resume with: ..."
and the shell's exit code (143 for SIGTERM, 130 for SIGINT).

A data-parallel run (torchrun) must stop every process at the same step, or the others wait
in a collective forever. Its training loop runs inside :func:`collective`: each process notes
a signal (torchrun forwards its own SIGTERM to every process; a scheduler may signal any of
them), and before every step all processes call :func:`agreed`, which raises
:class:`~autogcl.errors.Preempted` on every process at once when any of them noted one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator

from .errors import Preempted

__all__ = ["SIGNALS", "agreed", "check", "collective", "deferring", "handling", "requested"]

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGTERM, signal.SIGINT)

_pending: int | None = None  # the signal noted while deferring, not yet acted on
_deferring = 0  # nesting depth of deferring()
_agree: Callable[[int], int] | None = None  # set by collective(): the largest signal noted by any process
_installed = False
#: False in processes whose signals belong to someone else: a Ray worker's (Ray stops and
#: retries tasks with them), and the processes of a data-parallel run under torchrun, where one
#: process stopping alone would leave the others waiting in a collective (their training loop
#: handles signals by :func:`collective` instead; a torchrun group of one keeps it: no other
#: process waits for it)
enabled = os.environ.get("WORLD_SIZE", "1") in ("", "1")


def _handler(signum, frame) -> None:
    global _pending
    if _deferring and _pending is None:
        _pending = signum
        log.warning("%s received: stopping before the next training step, keeping the last finished epoch "
                    "(send it again to stop at once)", signal.Signals(signum).name)
        return
    raise Preempted(signum)


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """Catch SIGTERM and SIGINT while the block runs (then the handlers before it are back).
    Only the main thread can set handlers: elsewhere, or nested, or when disabled, a no-op. A
    signal the process was started ignoring (SIGINT of a background job) stays ignored."""
    if not enabled:
        yield
        return
    with _handlers():
        yield


@contextlib.contextmanager
def _handlers() -> Iterator[None]:
    global _installed, _pending
    if _installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        if old[s] is not signal.SIG_IGN:
            signal.signal(s, _handler)
    _installed = True
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        _installed = False
        _pending = None


@contextlib.contextmanager
def deferring() -> Iterator[None]:
    """A training loop: a signal is noted (:func:`requested`) instead of interrupting the step.
    A signal still noted when the outermost block ends normally is raised then, so it is never
    lost."""
    global _deferring
    _deferring += 1
    ok = False
    try:
        yield
        ok = True
    finally:
        _deferring -= 1
        if ok and not _deferring:
            check()


@contextlib.contextmanager
def collective(agree: Callable[[int], int]) -> Iterator[None]:
    """The training loop of one process of a data-parallel run (every process enters it).
    SIGTERM and SIGINT are caught and noted here even where :data:`enabled` is off for
    torchrun's processes; :func:`check` leaves them to :func:`agreed`, which every process
    calls before each step. ``agree(signum or 0)``: the largest value over the processes (an
    all-reduce). A second signal to one process still stops it at once (torchrun then ends
    the others)."""
    global _agree, _deferring
    try:
        with _handlers():
            _agree, _deferring = agree, _deferring + 1
            try:
                yield
            finally:
                _agree, _deferring = None, _deferring - 1
    except Preempted:
        if threading.current_thread() is threading.main_thread():
            # every process is stopping: the launcher's own SIGTERM, sent to the others once
            # the first has exited, must not turn their exit code 143 into a kill
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise


def agreed() -> None:
    """Inside :func:`collective`, on every process at the same step: raise
    :class:`~autogcl.errors.Preempted` on all of them when any noted a signal."""
    global _pending
    if _agree is None:
        return
    signum = _agree(_pending or 0)
    if signum:
        _pending = None
        raise Preempted(signum)


def requested() -> int | None:
    """The signal noted while deferring, if any (a loop stops before its next step)."""
    return _pending


def check() -> None:
    """Raise :class:`~autogcl.errors.Preempted` for a noted signal (and forget it); inside
    :func:`collective`, nothing (a process never stops alone: :func:`agreed` decides)."""
    global _pending
    if _pending is not None and _agree is None:
        signum, _pending = _pending, None
        raise Preempted(signum)
