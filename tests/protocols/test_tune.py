"""autogcl tune: the nested search on Ray Tune (TPE, ASHA) that reads validation folds only.

Small searches on MUTAG (one outer fold, one or two trials of two or three epochs of a
one-layer classifier): started locally, on a running local cluster's address (the command
line), stopped by SIGTERM and resumed, and the selection mutant: the same search with the test
fold's labels flipped chooses the same configuration with the same validation scores."""

import copy
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from autogcl.errors import ConfigError, DataError
from autogcl.protocols.tune import SPACES, TuneConfig, check_space_keys, choose, interrupted, parse_space

from ..conftest import REPO

#: a space small enough for a test: one-layer supervised GIN classifiers, lr and width searched
SPACE = {"classifier": "gin", "hidden": [8, 16], "num_layers": 1, "gen_hidden": 8, "strategy": "supervised",
         "lr": ("loguniform", 1e-3, 3e-2), "epochs": 3}
CLI_SPACE = ["classifier=gin", "hidden=8,16", "num_layers=1", "gen_hidden=8", "strategy=supervised",
             "lr=loguniform:0.001:0.03",
             "epochs=3"]
SMALL = dict(estimator="semi", dataset="MUTAG", max_epochs=3, grace_epochs=1, fold_limit=1, batch_size=32,
             concurrent=1)


# ------------------------------------------------------------------ without Ray
def test_space_changes_from_python_and_the_command_line():
    space = parse_space("semi", CLI_SPACE)
    assert space["hidden"] == [8, 16] and space["num_layers"] == 1 and space["strategy"] == "supervised"
    assert space["lr"] == ("loguniform", 0.001, 0.03) and space["tau"] == SPACES["semi"]["tau"]
    assert parse_space("semi", SPACE) == space
    for bad, match in ((["hidden"], "expected KEY=SPEC"), (["lr=loguniform:0:1"], "loguniform: low > 0"),
                       (["lr=uniform:1"], "a range is uniform:LOW:HIGH"), (["tau=uniform:1:0.5"], "low < high")):
        with pytest.raises(ConfigError, match=match):
            parse_space("semi", bad)
    with pytest.raises(ConfigError, match="unknown estimator 'svm'"):
        TuneConfig(estimator="svm")
    with pytest.raises(ConfigError, match="--grace-epochs 9 is above --max-epochs 3"):
        TuneConfig(max_epochs=3, grace_epochs=9)


def test_every_default_space_fits_its_estimator_and_a_stray_key_is_refused():
    for estimator, space in SPACES.items():
        check_space_keys(estimator, space)
    with pytest.raises(ConfigError, match=r"search space key\(s\) aug, pretrain_epochs: not an argument of AutoGCL"):
        check_space_keys("autogcl", parse_space("autogcl", ["aug=node_drop", "pretrain_epochs=3"]))


def test_choice_follows_validation_and_never_the_test_fold():
    trials = [{"order": 0, "val_best": 0.70, "val": 0.95, "test_max": 0.99},
              {"order": 1, "val_best": 0.80, "val": 0.50, "test_max": 0.55},
              {"order": 2, "val_best": 0.80, "val": 0.10, "test_max": 0.20},  # a tie: the earlier trial wins
              {"order": 3, "val_best": None, "val": 1.0, "test_max": 1.0}]  # failed before its first epoch
    assert choose(trials)["order"] == 1
    assert choose([trials[3]]) is None


def test_a_search_that_ended_early_is_an_interruption_never_a_result():
    assert interrupted([signal.SIGTERM], 1, 3) == signal.SIGTERM
    assert interrupted([], 1, 3) == signal.SIGINT  # Ray Tune's Ctrl-C: trials left unfinished
    assert interrupted([], 3, 3) is None  # every trial ended (finished, stopped by ASHA or failed)


# ------------------------------------------------------------------ with Ray
ray = pytest.importorskip("ray")
pytest.importorskip("ray.tune", reason="ray[tune] is not installed (pip install 'autogcl[tune]')")
pytest.importorskip("optuna", reason="optuna for ray tune is not installed (pip install 'autogcl[tune]')")

from autogcl.protocols.tune import tune  # noqa: E402


def _fold(out, name="MUTAG-semi"):
    from autogcl.atomic import read_json

    return read_json(out / name / "fold0.json")


def test_a_local_search_records_both_selections_of_every_trial(data_root, tmp_path):
    if ray.is_initialized():
        ray.shutdown()
    summary = tune(**SMALL, trials=2, space=SPACE, num_cpus=2, data_root=str(data_root), out=str(tmp_path))
    assert not ray.is_initialized()  # the search started its local cluster and stopped it
    fold = _fold(tmp_path)
    assert len(fold["trials"]) == 2 and fold["failed"] == 0
    for t in fold["trials"]:
        assert t["status"] == "done" and 1 <= t["epochs"] <= 3 and t["config"]["hidden"] in (8, 16)
        assert all(0 <= t[k] <= 1 for k in ("val_best", "val", "test_max")) and t["val"] <= t["test_max"]
    best = choose(fold["trials"])
    assert fold["chosen"]["trial"] == best["trial"] and summary["folds"][0]["chosen"] == fold["chosen"]
    assert summary["val"]["mean"] == pytest.approx(best["val"], abs=1e-12)
    assert summary["test_max"]["mean"] == pytest.approx(best["test_max"], abs=1e-12)
    assert (tmp_path / "MUTAG-semi" / "summary.json").is_file() and (tmp_path / "MUTAG-semi" / "fold0").is_dir()
    with pytest.raises(ConfigError, match="holds a search already; continue it with --resume"):
        tune(**SMALL, trials=2, space=SPACE, num_cpus=2, data_root=str(data_root), out=str(tmp_path))
    with pytest.raises(ConfigError, match="holds a search of other settings"):
        tune(**SMALL, trials=3, space=SPACE, data_root=str(data_root), out=str(tmp_path), resume=True)
    again = tune(**SMALL, trials=2, space=SPACE, data_root=str(data_root), out=str(tmp_path), resume=True)
    assert again["folds"][0]["chosen"] == fold["chosen"] and again["val"] == summary["val"]
    assert not ray.is_initialized()  # a finished search is read back without a cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A local Ray cluster of 2 CPUs (this process's), its address for the command line."""
    if ray.is_initialized():
        ray.shutdown()
    cache = str(tmp_path_factory.getbasetemp() / "cache")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"AUTOGCL_CACHE": cache, "OMP_NUM_THREADS": "1"}})
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def cli(args, log, cwd):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "autogcl", "tune", *map(str, args)], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=log)


def cli_args(data_root, out, address, trials):
    return ["--dataset", "MUTAG", "--trials", trials, "--max-epochs", 3, "--grace-epochs", 1, "--fold-limit", 1,
            "--batch-size", 32, "--concurrent", 1, "--data-root", data_root, "--out", out, "--address", address,
            "--space", *CLI_SPACE]


def test_sigterm_stops_the_search_and_resume_finishes_it(cluster, data_root, tmp_path):
    """The command on a running cluster's address, stopped by SIGTERM after a trial's first epoch;
    the same command with --resume finishes the search, prints its table and leaves the cluster
    running (both runs join the cluster, so one pair of runs covers the command line)."""
    log, out = tmp_path / "err.txt", tmp_path / "out"
    with open(log, "w") as err:
        proc = cli(cli_args(data_root, out, cluster, 2), err, tmp_path)
        try:
            t0 = time.time()
            while time.time() - t0 < 240 and proc.poll() is None and "epoch 1: val" not in log.read_text():
                time.sleep(0.1)
            assert proc.poll() is None, log.read_text()[-3000:]
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    text = log.read_text()
    assert proc.returncode == 128 + signal.SIGTERM, text[-3000:]
    assert "stopped by SIGTERM" in text and "resume with: autogcl tune" in text and "--resume" in text
    assert (out / "MUTAG-semi" / "fold0").is_dir() and not (out / "MUTAG-semi" / "fold0.json").exists()
    with open(log, "w") as err:
        again = cli([*cli_args(data_root, out, cluster, 2), "--resume"], err, tmp_path)
        table, _ = again.communicate(timeout=300)
    text = log.read_text()
    assert again.returncode == 0, text[-3000:]
    assert "tune fold 0: resuming the search" in text
    assert "| fold | chosen configuration |" in table and "| mean ± std |" in table
    assert "tune fold 0: trial" in text and "epoch 1: val" in text and "tune fold 0: chose trial" in text
    assert ray.is_initialized()  # the command joined the cluster and left it running
    fold = _fold(out)
    assert len(fold["trials"]) == 2 and all(t["status"] == "done" for t in fold["trials"])


def test_selection_reads_no_test_fold(cluster, data_root, tmp_path):
    """The mutant: the test fold's labels flipped. Training, validation scores and the choice
    stay the same; only the test numbers move."""
    from autogcl.data import load_tu
    from autogcl.data.splits import semi_splits

    ds = load_tu("MUTAG", data_root)
    y = np.asarray(ds._data.y).reshape(-1)
    splits = semi_splits(y)[:1]
    mutant = copy.copy(ds)
    mutant._data = ds._data.clone()
    mutant._data.y[splits[0].test] = 1 - mutant._data.y[splits[0].test]
    runs = [tune(**SMALL, trials=2, space=SPACE, out=str(tmp_path / name), graphs=g, splits=splits)
            for name, g in (("plain", ds), ("mutant", mutant))]
    plain, flipped = _fold(tmp_path / "plain"), _fold(tmp_path / "mutant")
    assert [t["config"] for t in plain["trials"]] == [t["config"] for t in flipped["trials"]]
    assert [t["val_best"] for t in plain["trials"]] == [t["val_best"] for t in flipped["trials"]]
    assert plain["chosen"]["config"] == flipped["chosen"]["config"]
    # the test fold was read for the report: its numbers moved
    assert [t["test_max"] for t in plain["trials"]] != [t["test_max"] for t in flipped["trials"]]
    assert runs[0]["test_max"]["mean"] != runs[1]["test_max"]["mean"]


def test_a_failing_trial_is_reported_with_its_configuration(cluster, data_root, tmp_path, caplog):
    caplog.set_level("INFO", logger="autogcl.tune")
    with pytest.raises(DataError, match=r"no trial finished an epoch \(1 failed; the first with configuration "
                                        r".*hidden=0.*ConfigError: hidden and num_layers must be at least 1"):
        tune(**SMALL, trials=1, space={**SPACE, "hidden": 0}, data_root=str(data_root), out=str(tmp_path))
    assert "FAILED with configuration" in caplog.text and "hidden=0" in caplog.text


def test_a_graphcl_search_scores_its_embeddings_with_an_svm(cluster, data_root, tmp_path):
    summary = tune(**{**SMALL, "estimator": "graphcl"}, trials=1, space={"hidden": 8, "num_layers": 1, "epochs": 2,
                                                                         "aug": "node_drop"},
                   data_root=str(data_root), out=str(tmp_path))
    (trial,) = _fold(tmp_path, "MUTAG-graphcl")["trials"]
    assert trial["status"] == "done" and trial["epochs"] == 2 and trial["config"]["aug"] == "node_drop"
    assert all(0.3 <= trial[k] <= 1 for k in ("val_best", "val", "test_max"))  # an SVM on MUTAG's embeddings
    assert summary["val"]["mean"] == trial["val"]
