"""Preemption of a data-parallel run's training loop (autogcl.preempt.collective), with the
processes' agreement stood in for by a function: a process never stops alone, every process
stops when any was signalled, and a stopped process ignores the launcher's later SIGTERM.
The 2-process run under torchrun is tests/train/test_distributed.py."""

import os
import signal

import pytest

from autogcl import preempt
from autogcl.errors import Preempted


@pytest.fixture
def sigterm_back():
    """The test process's SIGTERM handler, put back after the test."""
    old = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, old)


def test_a_signalled_process_stops_only_when_the_processes_agree(sigterm_back):
    asked = []

    def agree(mine):  # this process's signal (or 0) in, the largest over the processes out
        asked.append(mine)
        return mine

    with pytest.raises(Preempted) as info, preempt.collective(agree):
        preempt.agreed()  # nothing noted: every process goes on
        os.kill(os.getpid(), signal.SIGTERM)
        preempt.check()  # the single-process check between steps leaves it to the agreement
        preempt.agreed()
        pytest.fail("the agreed stop did not raise")
    assert asked == [0, signal.SIGTERM] and info.value.exit_code == 143
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN  # stopping: torchrun's own SIGTERM is no kill
    assert preempt.requested() is None


def test_every_process_stops_when_another_was_signalled(sigterm_back):
    with pytest.raises(Preempted) as info, preempt.collective(lambda mine: max(mine, signal.SIGTERM)):
        preempt.agreed()
    assert info.value.signal_name == "SIGTERM"


def test_a_loop_that_ends_keeps_the_handlers_before_it(sigterm_back):
    before = signal.getsignal(signal.SIGTERM)
    with preempt.collective(lambda mine: 0):
        assert signal.getsignal(signal.SIGTERM) is not before
        preempt.agreed()
    assert signal.getsignal(signal.SIGTERM) is before
    preempt.agreed()  # outside a collective loop: nothing to agree on
