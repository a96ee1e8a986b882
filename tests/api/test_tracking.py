"""Experiment tracking: ``fit(log_dir=...)`` and ``--log-dir`` write per-epoch losses,
evaluations and throughput as TensorBoard scalars, read back here from the event files."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data

import autogcl
from autogcl.errors import ConfigError
from autogcl.train.tracking import LOG_DIR_ENV, scalars, tracker_for

pytest.importorskip("tensorboard", reason="the tracking tests read TensorBoard event files (pip install tensorboard)")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def ring(n: int) -> Data:
    i = torch.arange(n)
    e = torch.stack([i, (i + 1) % n])
    return Data(x=torch.rand(n, 3), edge_index=torch.cat([e, e.flip(0)], 1))


GRAPHS = [ring(n) for n in range(3, 11)]


def read(folder) -> dict[str, list[tuple[int, float]]]:
    acc = EventAccumulator(str(folder))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


@pytest.fixture(autouse=True)
def no_shared_log_dir(monkeypatch):
    from autogcl.train.tracking import TRACKING_ENV

    monkeypatch.delenv(LOG_DIR_ENV, raising=False)
    monkeypatch.delenv(TRACKING_ENV, raising=False)


def test_fit_writes_losses_evaluations_and_throughput_per_epoch(tmp_path):
    torch.manual_seed(0)
    model = autogcl.AutoGCL(hidden=4, num_layers=2)
    rows = model.fit(GRAPHS, epochs=3, batch_size=4, progress=False, device="cpu", log_dir=tmp_path / "tb",
                     evaluate=lambda e: {"score": e / 10} if e % 2 == 0 else None)
    got = read(tmp_path / "tb")
    assert {"loss/loss", "loss/cl_loss", "perf/epoch_s", "perf/graphs_per_s", "eval/score"} <= set(got)
    assert [s for s, _ in got["loss/loss"]] == [1, 2, 3]
    for (step, value), row in zip(got["loss/loss"], rows):
        assert value == pytest.approx(row["loss"], rel=1e-6)  # float32 in the event file
    assert got["eval/score"] == [(2, pytest.approx(0.2))]
    for (_, rate), (_, secs) in zip(got["perf/graphs_per_s"], got["perf/epoch_s"]):
        assert rate == pytest.approx(len(GRAPHS) / secs, rel=1e-4)
    # a second fit continues the epochs in the same folder
    model.fit(GRAPHS, epochs=1, batch_size=4, progress=False, device="cpu", log_dir=tmp_path / "tb")
    assert [s for s, _ in read(tmp_path / "tb")["loss/loss"]] == [1, 2, 3, 4]


def test_scalars_of_a_row():
    row = {"phase": "pretrain", "epoch": 3, "loss": 1.5, "sim_loss": float("nan"), "time_s": 2.0, "val_acc": 0.5,
           "note": "text", "flag": True}
    assert scalars(row, graphs=10) == {"pretrain/loss/loss": 1.5, "pretrain/perf/epoch_s": 2.0,
                                       "pretrain/perf/graphs_per_s": 5.0, "pretrain/eval/val_acc": 0.5}


def test_the_shared_log_dir_gives_each_trainer_a_folder(tmp_path, monkeypatch):
    assert tracker_for(None, "x") is None
    monkeypatch.setenv(LOG_DIR_ENV, str(tmp_path))
    tracker = tracker_for(None, "MUTAG-autogcl seed 0")
    tracker.close()
    assert tracker.log_dir == tmp_path / "MUTAG-autogcl_seed_0"


def test_a_missing_tensorboard_is_a_clear_error(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    with pytest.raises(ConfigError, match=r"need the tensorboard package: pip install 'autogcl\[tensorboard\]'"):
        autogcl.GraphCL(hidden=4, num_layers=1).fit(GRAPHS, epochs=1, progress=False, log_dir=tmp_path)


def test_the_command_line_log_dir(data_root, tmp_path, monkeypatch):
    from autogcl.cli import main

    monkeypatch.delenv(LOG_DIR_ENV, raising=False)  # main exports it; the fixture's undo removes it again
    assert main(["unsupervised", "--dataset", "MUTAG", "--epochs", "2", "--seeds", "1", "--jobs", "1",
                 "--data-root", str(data_root), "--out", str(tmp_path / "out"), "--no-progress", "--device", "cpu",
                 "--log-dir", str(tmp_path / "tb")]) == 0
    runs = [p for p in (tmp_path / "tb").iterdir() if p.is_dir()]
    assert len(runs) == 1 and "seed_0" in runs[0].name
    got = read(runs[0])
    assert [s for s, _ in got["loss/loss"]] == [1, 2]
    assert any(tag.startswith("eval/") for tag in got)  # the SVM evaluation of the protocol


def test_semi_supervised_fit_writes_both_phases(tmp_path):
    torch.manual_seed(0)
    graphs = [Data(x=g.x, edge_index=g.edge_index, y=torch.tensor([i % 2])) for i, g in enumerate(GRAPHS)]
    model = autogcl.SemiSupervised(3, 2, hidden=4, num_layers=2, strategy="naive", gen_hidden=4)
    rows = model.fit(graphs, epochs=2, pretrain_epochs=1, batch_size=4, progress=False, device="cpu",
                     log_dir=tmp_path / "tb", evaluate=lambda e: {"val_acc": 0.5})
    got = read(tmp_path / "tb")
    assert [s for s, _ in got["pretrain/loss/loss"]] == [1] and [s for s, _ in got["train/loss/loss"]] == [1, 2]
    train = [r for r in rows if r["phase"] == "train"]
    assert [v for _, v in got["train/loss/loss"]] == [pytest.approx(r["loss"], rel=1e-6) for r in train]
    assert got["train/eval/val_acc"] == [(1, 0.5), (2, 0.5)]


# ------------------------------------------------------------------ molecule pre-training


from .test_pretrain import SMALL as SMALL_PRETRAIN  # noqa: E402  (the corpus fixture: tests/api/conftest.py)


def test_transfer_pretrain_log_dir_writes_loss_and_throughput_per_epoch(corpus, tmp_path, monkeypatch):
    import csv

    from autogcl.cli import main

    monkeypatch.delenv(LOG_DIR_ENV, raising=False)  # main exports it; the fixture's undo removes it again
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in SMALL_PRETRAIN.items()]
    assert main(["transfer", "pretrain", "--corpus", str(corpus), *flags, "--workers", "1", "--no-progress",
                 "--out", str(tmp_path / "run"), "--log-dir", str(tmp_path / "tb")]) == 0
    runs = [p for p in (tmp_path / "tb").iterdir() if p.is_dir()]
    assert [p.name for p in runs] == ["pretrain_autogcl"]
    got = read(runs[0])
    with open(tmp_path / "run" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [s for s, _ in got["loss/loss"]] == [1, 2]
    assert [v for _, v in got["loss/loss"]] == [pytest.approx(float(r["loss"]), rel=1e-6) for r in rows]
    assert [v for _, v in got["perf/molecules_per_s"]] == [pytest.approx(float(r["molecules_per_s"]), rel=1e-6)
                                                           for r in rows]
    trained = [float(r["molecules"]) for r in rows]  # full batches of 16 of each chunk of 40
    assert [v for _, v in got["perf/molecules"]] == trained == [64.0, 64.0]
    for (_, rate), (_, secs), n in zip(got["perf/graphs_per_s"], got["perf/epoch_s"], trained):
        assert rate == pytest.approx(n / secs, rel=1e-4)
    assert not any(tag.startswith("eval/") for tag in got)  # counters and rates are perf/, not evaluations


def test_scalars_put_counters_under_perf():
    row = {"epoch": 1, "molecules": 80, "steps": 5, "molecules_per_s": 40.0, "peak_rss_mb": 900.0, "loss": 2.0}
    assert scalars(row) == {"perf/molecules": 80.0, "perf/steps": 5.0, "perf/molecules_per_s": 40.0,
                            "perf/peak_rss_mb": 900.0, "loss/loss": 2.0}


# ------------------------------------------------------------------ MLflow


def test_an_unknown_tracking_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown tracking 'wandb'; choose from tensorboard, mlflow"):
        autogcl.GraphCL(hidden=4, num_layers=1).fit(GRAPHS, epochs=1, progress=False, log_dir=tmp_path,
                                                    tracking="wandb")


def test_a_missing_mlflow_is_a_clear_error(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "mlflow", None)
    with pytest.raises(ConfigError, match=r"needs the mlflow package: pip install 'autogcl\[mlflow\]'"):
        autogcl.GraphCL(hidden=4, num_layers=1).fit(GRAPHS, epochs=1, progress=False, log_dir=tmp_path,
                                                    tracking="mlflow")


def test_tracking_mlflow_needs_a_log_dir():
    from autogcl.config import RunOptions

    with pytest.raises(ConfigError, match="--tracking mlflow needs --log-dir"):
        RunOptions(tracking="mlflow").export_log_dir()


def test_mlflow_uri_of_a_folder_and_of_a_uri(tmp_path):
    from autogcl.train.tracking import mlflow_uri

    assert mlflow_uri(tmp_path / "ml") == (tmp_path / "ml").resolve().as_uri()
    for uri in ("http://host:5000", "sqlite:///runs/mlflow.db", "file:///tmp/x"):
        assert mlflow_uri(uri) == uri


def _mlflow_store(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow", reason="the MLflow tests read an MLflow store (pip install mlflow-skinny)")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 opens a local file store only so
    return mlflow.tracking.MlflowClient(tracking_uri=(tmp_path / "ml").resolve().as_uri())


def _metrics(client, run) -> dict[str, list[tuple[int, float]]]:
    return {key: [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)]
            for key in run.data.metrics}


def test_fit_logs_the_same_scalars_to_an_mlflow_store(tmp_path, monkeypatch):
    client = _mlflow_store(tmp_path, monkeypatch)
    torch.manual_seed(0)
    model = autogcl.AutoGCL(hidden=4, num_layers=2)
    rows = model.fit(GRAPHS, epochs=3, batch_size=4, progress=False, device="cpu", log_dir=tmp_path / "ml",
                     tracking="mlflow", evaluate=lambda e: {"score": e / 10} if e % 2 == 0 else None)
    (run,) = client.search_runs([client.get_experiment_by_name("autogcl").experiment_id])
    assert run.info.run_name == "AutoGCL" and run.info.status == "FINISHED"
    got = _metrics(client, run)
    assert {"loss/loss", "loss/cl_loss", "perf/epoch_s", "perf/graphs_per_s", "eval/score"} <= set(got)
    assert [s for s, _ in got["loss/loss"]] == [1, 2, 3]
    for (_, value), row in zip(got["loss/loss"], rows):
        assert value == pytest.approx(row["loss"], rel=1e-12)  # MLflow keeps float64
    assert got["eval/score"] == [(2, pytest.approx(0.2))]


def test_transfer_pretrain_tracking_mlflow(corpus, tmp_path, monkeypatch):
    import csv

    from autogcl.cli import main

    client = _mlflow_store(tmp_path, monkeypatch)
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in SMALL_PRETRAIN.items()]
    assert main(["transfer", "pretrain", "--corpus", str(corpus), *flags, "--workers", "1", "--no-progress",
                 "--out", str(tmp_path / "run"), "--log-dir", str(tmp_path / "ml"), "--tracking", "mlflow"]) == 0
    (run,) = client.search_runs([client.get_experiment_by_name("autogcl").experiment_id])
    assert run.info.run_name == "pretrain_autogcl" and run.info.status == "FINISHED"
    with open(tmp_path / "run" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    got = _metrics(client, run)
    assert [s for s, _ in got["loss/loss"]] == [1, 2]
    assert [v for _, v in got["loss/loss"]] == [pytest.approx(float(r["loss"]), rel=1e-9) for r in rows]
    assert [s for s, _ in got["perf/molecules_per_s"]] == [1, 2]


def test_an_mlflow_database_store_without_sqlalchemy_says_to_install_it(tmp_path, monkeypatch):
    """A SQLite store and no SQLAlchemy (mlflow-skinny): the error says what to install (issue 59)."""
    import sys

    pytest.importorskip("mlflow", reason="the MLflow tests read an MLflow store (pip install mlflow-skinny)")
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)  # as if it were not installed
    with pytest.raises(ConfigError, match=r"sqlite:///.*a sqlite database store needs sqlalchemy.*not installed: "
                                          r"pip install sqlalchemy"):
        autogcl.GraphCL(hidden=4, num_layers=1).fit(GRAPHS, epochs=1, progress=False, device="cpu",
                                                    log_dir=f"sqlite:///{tmp_path}/mlflow.db", tracking="mlflow")
