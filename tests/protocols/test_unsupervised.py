"""End to end: the unsupervised protocol on MUTAG from the offline mirror, few epochs."""

import csv
import json

import pytest

from autogcl.cli import main
from autogcl.data import load_tu
from autogcl.protocols import unsupervised as U


def read_rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_cli_run_writes_result_files(data_root, tmp_path, capsys):
    out = tmp_path / "runs"
    argv = ["unsupervised", "--dataset", "MUTAG", "--epochs", "2", "--eval-epochs", "1,2", "--seeds", "1",
            "--data-root", str(data_root), "--out", str(out), "--no-progress", "--jobs", "1"]
    assert main(argv) == 0
    unit = out / "MUTAG-autogcl" / "seed0"
    cfg = json.loads((unit / "config.json").read_text())
    res = json.loads((unit / "result.json").read_text())
    rows = read_rows(unit / "metrics.csv")
    assert cfg["dataset"] == "MUTAG" and cfg["epochs"] == 2 and cfg["eval_epochs"] == [1, 2]
    assert res["selection"] == "val" and set(res["selections"]) == {"val", "test_max"}
    assert 0.5 < res["selections"]["val"]["acc"] <= 1.0
    assert [r["epoch"] for r in rows] == ["1", "2"]
    assert {"loss", "cl_loss", "sim_loss", "time_s", "svm_val_acc", "svm_test_acc"} <= set(rows[0])
    # both selections, recomputed from the per-epoch scores written beside them (first best on ties)
    val = [float(r["svm_val_acc"]) for r in rows]
    test = [float(r["svm_test_acc"]) for r in rows]
    assert res["selections"]["val"]["epoch"] == 1 + val.index(max(val))
    assert res["selections"]["val"]["acc"] == test[val.index(max(val))] == res["acc"]
    assert res["selections"]["test_max"]["epoch"] == 1 + test.index(max(test))
    assert res["selections"]["test_max"]["acc"] == max(test)
    assert res["evaluations"]["1"]["val_acc"] == val[0] and res["evaluations"]["2"]["test_acc"] == test[1]
    assert (unit / "model.pt").is_file() and not (unit.parent / ".seed0.partial").exists()
    summary = json.loads((out / "MUTAG-autogcl" / "summary.json").read_text())
    assert summary["n_seeds"] == 1
    table = capsys.readouterr().out
    v, m = 100 * res["selections"]["val"]["acc"], 100 * res["selections"]["test_max"]["acc"]
    # the non-default options named; both selections' figures; the paper's beside them
    assert f"| MUTAG | autogcl (epochs=2, eval_epochs=[1, 2]) | 1 | {v:.2f} ± 0.00 | {m:.2f} ± 0.00 | 88.64 ± 1.08 |" in table

    # a second run without --resume refuses to overwrite; with --resume it redoes nothing
    assert main(argv) == 2
    assert "already holds a finished run" in capsys.readouterr().err
    before = (unit / "result.json").stat().st_mtime_ns
    assert main(argv + ["--resume"]) == 0
    assert (unit / "result.json").stat().st_mtime_ns == before
    # same out dir, different config: refused
    assert main(argv[:4] + ["3"] + argv[5:] + ["--resume"]) == 2
    assert "different configuration" in capsys.readouterr().err


@pytest.mark.parametrize("method", ["autogcl", "graphcl"])
def test_interrupted_unit_resumes_to_the_same_result(data_root, tmp_path, monkeypatch, method):
    ds = load_tu("MUTAG", data_root)
    cfg = U.UnsupervisedConfig(dataset="MUTAG", method=method, epochs=4, eval_epochs=[2, 4], svm_folds=3)

    ref = U.make_units(cfg, [0], tmp_path / "ref")[0]
    U.run_unit(ref, ds, show_progress=False, ckpt_every=1)

    unit = U.make_units(cfg, [0], tmp_path / "cut")[0]
    real_build = U.build_model

    def build_then_break(*a, **k):
        model = real_build(*a, **k)
        real_make = model.make_strategy

        def make(*a2, **k2):
            strat = real_make(*a2, **k2)
            real_epoch = strat.train_epoch

            def epoch(loader, e):
                if e == 3:
                    raise KeyboardInterrupt
                return real_epoch(loader, e)
            strat.train_epoch = epoch
            return strat
        model.make_strategy = make
        return model

    monkeypatch.setattr(U, "build_model", build_then_break)
    with pytest.raises(KeyboardInterrupt):
        U.run_unit(unit, ds, show_progress=False, ckpt_every=1)
    assert (unit.partial / "checkpoint.pt").is_file() and not unit.finished
    monkeypatch.setattr(U, "build_model", real_build)

    changed = U.make_units(U.UnsupervisedConfig(dataset="MUTAG", method=method, epochs=4, eval_epochs=[2, 4],
                                                svm_folds=3, lr=0.01), [0], tmp_path / "cut")[0]
    with pytest.raises(U.ConfigError, match="interrupted run with another configuration .*lr"):
        U.run_unit(changed, ds, show_progress=False)

    calls = []
    real_svm = U.svm_evaluate
    monkeypatch.setattr(U, "svm_evaluate", lambda *a, **k: calls.append(1) or real_svm(*a, **k))
    U.run_unit(unit, ds, show_progress=False, ckpt_every=1)
    assert len(calls) == 1  # the epoch-2 evaluation was not redone
    def drop_time(rows):
        return [{k: v for k, v in r.items() if not k.endswith("time_s")} for r in rows]
    assert drop_time(read_rows(unit.dir / "metrics.csv")) == drop_time(read_rows(ref.dir / "metrics.csv"))
    assert unit.result()["selections"] == ref.result()["selections"]


def test_unknown_dataset_is_a_clear_cli_error(tmp_path, capsys):
    assert main(["unsupervised", "--dataset", "NOPE", "--data-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown dataset 'NOPE'" in err and "MUTAG" in err


def test_bad_options_are_clear_errors(data_root, tmp_path, capsys):
    base = ["unsupervised", "--data-root", str(data_root), "--out", str(tmp_path)]
    assert main(base + ["--feat", "deg+bogus"]) == 2
    assert "unknown token 'bogus'" in capsys.readouterr().err
    assert main(base + ["--epochs", "5", "--eval-epochs", "7"]) == 2
    assert "must lie in 1..5" in capsys.readouterr().err


def test_help_everywhere(capsys):
    for argv in (["--help"], ["unsupervised", "--help"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
    assert "--select" in capsys.readouterr().out


@pytest.mark.parametrize("method", ["autogcl", "graphcl"])
def test_the_command_is_the_estimator_fitted_per_seed(data_root, tmp_path, method):
    """``autogcl unsupervised`` gives, epoch by epoch, the numbers of the estimator calls that
    docs/api.md shows (the seed's generator, the model built after seeding, the SVM at the
    evaluation epochs): losses to float tolerance, the same selections."""
    import autogcl

    out = tmp_path / "out"
    assert main(["unsupervised", "--dataset", "MUTAG", "--method", method, "--seeds", "1", "--epochs", "2",
                 "--jobs", "1", "--data-root", str(data_root), "--out", str(out), "--no-progress",
                 "--device", "cpu"]) == 0
    (metrics,) = out.glob("*/seed0/metrics.csv")
    cli_rows = list(csv.DictReader(metrics.open()))
    cli = json.loads((metrics.parent / "result.json").read_text())

    ds = load_tu("MUTAG", data_root)
    gen = autogcl.seed_everything(0)
    model = (autogcl.AutoGCL if method == "autogcl" else autogcl.GraphCL)(ds.num_features)
    embeddings = {}
    rows = model.fit(ds, epochs=2, seed=gen, device="cpu", progress=False,
                     evaluate=lambda e: embeddings.update({e: model.embed(ds)}) if e == 2 else None)
    est = autogcl.svm_protocol(embeddings, ds.y, seed=0)
    # rel=1e-9 is below float32's resolution: the command runs in this process on its threads,
    # the same operations as the estimator calls (bit-exact by construction); 1e-9 only absorbs
    # the CSV's text form
    assert [r["loss"] for r in rows] == pytest.approx([float(r["loss"]) for r in cli_rows], rel=1e-9)
    for name in ("val", "test_max"):
        assert est["selections"][name]["epoch"] == cli["selections"][name]["epoch"]
        assert est["selections"][name]["acc"] == pytest.approx(cli["selections"][name]["acc"], abs=1e-12)
