"""Preemption: SIGTERM (how SLURM and Kubernetes stop a job) and SIGINT (Ctrl-C) in the middle
of an epoch stop training before the next step, keep a checkpoint of the last finished epoch,
say how to continue, and the continued run gives the numbers of an unbroken one."""

import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from autogcl.errors import Preempted

from .common import ENV, same_weights, small_fit, untimed, weights


def kill_self(sig):
    return lambda: os.kill(os.getpid(), sig)


@pytest.fixture
def handled():
    """``handled(sig)``: ``sig`` gets Python's default handling for the test. A suite started in
    the background of a non-interactive shell inherits SIGINT ignored, and a fit leaves an ignored
    signal ignored (as ``nohup`` asks; tested below), so a test of a handled signal sets it first."""
    old = {}

    def set_default(sig):
        old.setdefault(sig, signal.getsignal(sig))
        signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)

    yield set_default
    for sig, h in old.items():
        signal.signal(sig, h)


def test_an_ignored_signal_stays_ignored(data_root):
    """SIGINT ignored by whoever started the process (a background job): a fit is not stopped
    by it, and ends with the numbers of an undisturbed fit."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ref, ref_rows = small_fit(data_root, epochs=3)
        model, rows = small_fit(data_root, epochs=3, at=(2, 1), action=kill_self(signal.SIGINT))
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, old)
    assert untimed(rows) == untimed(ref_rows) and same_weights(weights(model), weights(ref))


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_mid_epoch_keeps_the_last_epoch_and_resume_matches_an_unbroken_fit(data_root, tmp_path, sig, code,
                                                                                  handled):
    handled(sig)
    ref, ref_rows = small_fit(data_root)
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(Preempted) as info:  # the signal arrives inside epoch 3's second step
        small_fit(data_root, ckpt, at=(3, 1), action=kill_self(sig))
    stop = info.value
    assert (stop.epoch, stop.checkpoint, stop.exit_code) == (2, ckpt, code)
    assert str(stop) == f"stopped by {signal.Signals(sig).name} after epoch 2 (train; checkpoint {ckpt})"
    assert torch.load(ckpt, weights_only=True)["epoch"] == 2  # written at the stop (ckpt_every=10)
    assert signal.getsignal(sig) is not None and not str(signal.getsignal(sig)).startswith("<function _handler")
    resumed, rows = small_fit(data_root, ckpt)
    assert untimed(rows) == untimed(ref_rows)
    assert same_weights(weights(resumed), weights(ref))


def test_a_fit_without_checkpoint_is_put_back_to_its_last_finished_epoch(data_root):
    two, _ = small_fit(data_root, epochs=2)
    made = []
    with pytest.raises(Preempted, match="after epoch 2.*no checkpoint was asked for") as info:
        small_fit(data_root, epochs=4, at=(3, 1), action=kill_self(signal.SIGTERM), made=made)
    assert info.value.checkpoint is None
    assert same_weights(weights(made[0]), weights(two))  # epoch 2, not the half-trained epoch 3


def test_a_signal_between_steps_of_the_last_epoch_is_not_lost(data_root, tmp_path):
    """A signal in the last step of the last epoch: the fit ends, saves, and still stops."""
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(Preempted, match="after epoch 2"):
        small_fit(data_root, ckpt, epochs=2, at=(2, 2), action=kill_self(signal.SIGTERM))
    assert torch.load(ckpt, weights_only=True)["epoch"] == 2


# SIGTERM to the unsupervised command mid-training and to molecule pre-training, then the printed
# resume command: tests/test_kill_resume.py, beside kill -9 of the same commands (one unbroken run
# for both)


def test_sigterm_outside_training_stops_at_once_with_the_resume_command(tmp_path):
    """Outside a training loop (reading data, between units) SIGTERM raises at once."""
    from autogcl.preempt import handling

    with pytest.raises(Preempted, match="stopped by SIGTERM") as info:
        with handling():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # interrupted by the handler
    assert info.value.exit_code == 143 and info.value.epoch is None


def test_the_processes_of_a_torchrun_job_keep_their_default_signal_handling():
    code = ("import signal\nfrom autogcl import preempt\nwith preempt.handling():\n"
            "    print(preempt.enabled, signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)\n")
    for world, expected in (("2", "False True"), ("1", "True False")):
        done = subprocess.run([sys.executable, "-c", code], env={**ENV, "WORLD_SIZE": world}, capture_output=True,
                              text=True, timeout=120)
        assert done.stdout.strip() == expected, done.stderr[-2000:]


def test_the_estimators_fit_stops_with_its_checkpoint_and_a_second_fit_continues(data_root, tmp_path):
    """The public estimator: SIGTERM during ``AutoGCL.fit`` (here while its evaluation hook runs)
    raises Preempted with the checkpoint; the same call on a new estimator continues from it and
    ends with the embeddings of an unbroken fit."""
    import autogcl
    from autogcl.data import load_tu

    graphs = list(load_tu("MUTAG", data_root))[:64]

    def model():
        autogcl.seed_everything(0)
        return autogcl.AutoGCL(hidden=16, num_layers=2)

    ref = model()
    ref.fit(graphs, epochs=3, batch_size=32, device="cpu", seed=1, progress=False)
    ckpt = tmp_path / "fit.ckpt"
    stopped = model()
    with pytest.raises(Preempted) as info:
        stopped.fit(graphs, epochs=3, batch_size=32, device="cpu", seed=1, progress=False, checkpoint=ckpt,
                    evaluate=lambda e: os.kill(os.getpid(), signal.SIGTERM) if e == 1 else None)
    assert (info.value.epoch, info.value.checkpoint, info.value.exit_code) == (1, ckpt, 143)
    again = model()
    rows = again.fit(graphs, epochs=3, batch_size=32, device="cpu", seed=1, progress=False, checkpoint=ckpt)
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    assert untimed(rows) == untimed(ref.history)
    assert torch.equal(again.embed(graphs), ref.embed(graphs))  # one process, the same operations: bit-exact
