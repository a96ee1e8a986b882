"""Progress where no bar is shown (cluster logs, nohup): ``logging`` lines per epoch (loss, time,
throughput, time left), at most one per LOG_SECONDS, one per evaluation, one per finished unit."""

import logging

import pytest

from autogcl import units
from autogcl.train import loop

from .common import small_fit

EPOCH_LINE = r"train: epoch {e}/4, loss \d+\.\d{{4}}, \d+\.\d\d s, \d+ graphs/s, ETA \d+s"


def lines(caplog, logger):
    return [r.getMessage() for r in caplog.records if r.name == logger and r.levelno == logging.INFO]


def test_a_log_line_per_epoch_with_loss_time_throughput_and_eta(data_root, caplog, monkeypatch):
    import re

    monkeypatch.setattr(loop, "LOG_SECONDS", 0.0)
    with caplog.at_level(logging.INFO, logger="autogcl.train.loop"):
        small_fit(data_root, epochs=4, evaluate=lambda e: {"val_acc": 0.5 + e / 100} if e % 2 == 0 else None)
    got = lines(caplog, "autogcl.train.loop")
    epochs = [m for m in got if ": epoch " in m]
    assert len(epochs) == 4
    for e, m in enumerate(epochs, 1):
        assert re.fullmatch(EPOCH_LINE.format(e=e), m), m
    assert [m for m in got if "evaluation" in m] == ["train: evaluation after epoch 2: val_acc 0.52",
                                                      "train: evaluation after epoch 4: val_acc 0.54"]


def test_quick_epochs_log_the_first_and_the_last_only(data_root, caplog, monkeypatch):
    monkeypatch.setattr(loop, "LOG_SECONDS", 3600.0)
    with caplog.at_level(logging.INFO, logger="autogcl.train.loop"):
        small_fit(data_root, epochs=4)
    assert [m.split(",")[0] for m in lines(caplog, "autogcl.train.loop")] == ["train: epoch 1/4", "train: epoch 4/4"]


@pytest.mark.parametrize("progress", [True, False])
def test_a_sweep_logs_each_finished_unit_when_no_bar_is_shown(tmp_path, caplog, progress):
    us = [units.Unit(dir=tmp_path / f"seed{i}", config={}, seed=i, label=f"seed {i}") for i in range(3)]

    def fn(u):
        units.start_work(u)
        return units.publish(u, [], {"v": u.seed})
    with caplog.at_level(logging.INFO, logger="autogcl.units"):
        units.run_units(us, fn, resume=False, desc="MUTAG seeds", show_progress=progress)
    got = [m for m in lines(caplog, "autogcl.units") if "finished" in m]
    if progress:  # the bar says it
        assert got == []
    else:
        assert [m.split(" (")[0] for m in got] == [f"MUTAG seeds: seed {i} finished" for i in range(3)]
        assert got[-1].startswith("MUTAG seeds: seed 2 finished (3 of 3 seeds done, about 0 s left)")
