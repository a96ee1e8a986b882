"""Bad inputs and damaged files get a clear answer, never a traceback, and nothing unsafe is
ever unpickled. Grouped by what goes wrong; each case checks the message a user sees."""

import gzip
import json
import os
import shutil

import pytest
import torch

import autogcl
from autogcl import units
from autogcl.train import checkpoints
from autogcl.cli import main
from autogcl.errors import DataError


class Exploit:
    """A pickle that runs a shell command when it is loaded without ``weights_only``."""

    marker = None

    def __reduce__(self):
        return (os.system, (f"touch {Exploit.marker}",))


@pytest.fixture
def exploit(tmp_path):
    Exploit.marker = tmp_path / "code-ran"
    yield Exploit
    assert not Exploit.marker.exists(), "a planted pickle ran its code"


def plant(path, payload):
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(payload, path)


# ------------------------------------------------------------------ planted pickles


def test_planted_resume_checkpoint_is_refused_and_names_the_unit(data_root, tmp_path, exploit, capsys):
    out = tmp_path / "runs"
    argv = ["unsupervised", "--dataset", "MUTAG", "--epochs", "2", "--seeds", "1", "--jobs", "1",
            "--data-root", str(data_root), "--out", str(out), "--no-progress"]
    partial = out / "MUTAG-autogcl" / ".seed0.partial"
    plant(partial / "checkpoint.pt", {"modules": exploit(), "optimizers": {}, "rng": {}})
    assert main(argv + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert "MUTAG-autogcl seed 0: its interrupted work is damaged" in err and "--restart-damaged" in err
    assert main(argv + ["--resume", "--restart-damaged"]) == 0  # restarted from the beginning
    assert (out / "MUTAG-autogcl" / "seed0" / "result.json").is_file()


def test_planted_checkpoint_in_every_loader(tmp_path, exploit):
    bad = tmp_path / "bad.pt"
    plant(bad, {"format": "autogcl-model-1", "class": "AutoGCL", "hparams": exploit()})
    with pytest.raises(DataError, match="not a readable autogcl model"):
        autogcl.load(bad)
    from autogcl.models.mol_gin import load_encoder

    with pytest.raises(DataError, match="not a readable checkpoint"):
        load_encoder(bad)  # what --checkpoint reads
    model = torch.nn.Linear(2, 2)
    with pytest.raises(DataError, match="not a readable autogcl checkpoint"):
        checkpoints.load_checkpoint(bad, {"model": model}, torch.optim.Adam(model.parameters()), torch.Generator())


def test_a_planted_encoder_given_to_finetune_is_a_one_line_error(tmp_path, exploit, capsys):
    bad = tmp_path / "encoder.pt"
    plant(bad, {"format": "autogcl-molecule-encoder-1", "state_dict": exploit()})
    assert main(["transfer", "finetune", "--checkpoint", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"autogcl: error: {bad}: not a readable checkpoint (UnpicklingError: " in err
    assert err.count("\n") == 1 and not (tmp_path / "o").exists()


def test_planted_processed_cache_is_rebuilt_without_running_it(data_root, tmp_path, exploit, caplog):
    from autogcl.data import load_tu
    from autogcl.data.datasets import _cache_path, _raw_dir

    ref = load_tu("MUTAG", data_root)
    cache = _cache_path("MUTAG", "deg+odeg100", _raw_dir("MUTAG", [data_root]))
    assert cache.is_file()
    plant(cache, {"data": exploit(), "slices": {}, "meta": {}})
    again = load_tu("MUTAG", data_root)
    assert "is damaged" in caplog.text and torch.equal(again._data.x, ref._data.x)


def test_planted_view_run_model_is_refused(data_root, tmp_path, exploit, capsys):
    unit = tmp_path / "unit"
    unit.mkdir()
    (unit / "config.json").write_text(json.dumps({"dataset": "MUTAG", "method": "autogcl"}))
    plant(unit / "model.pt", {"format": "autogcl-model-1", "class": "AutoGCL", "hparams": exploit()})
    assert main(["visualize", "views", "--run", str(unit), "--data-root", str(data_root)]) == 2
    assert "not a readable autogcl model" in capsys.readouterr().err


# ------------------------------------------------------------------ damaged run files


def test_truncated_checkpoint_names_the_unit(tmp_path):
    unit = units.Unit(dir=tmp_path / "seed0", config={"a": 1}, seed=0, label="X seed 0")
    units.start_work(unit)
    (unit.partial / "checkpoint.pt").write_bytes(b"PK\x03\x04 truncated")

    def fn(u):
        model = torch.nn.Linear(2, 2)
        checkpoints.load_checkpoint(u.partial / "checkpoint.pt", {"model": model},
                             torch.optim.Adam(model.parameters()), torch.Generator())

    with pytest.raises(DataError, match="X seed 0: its interrupted work is damaged .*--restart-damaged"):
        units.run_units([unit], fn, resume=True, desc="x", show_progress=False)


def test_damaged_partial_config_names_the_file_and_restarts_on_request(tmp_path):
    unit = units.Unit(dir=tmp_path / "seed0", config={"a": 1}, seed=0, label="Y seed 0")
    unit.partial.mkdir(parents=True)
    (unit.partial / "config.json").write_text('{"a": 1')  # cut short

    def fn(u):
        units.start_work(u)
        units.publish(u, [], {"ok": True})

    with pytest.raises(DataError, match="config.json: damaged JSON"):
        units.run_units([unit], fn, resume=True, desc="x", show_progress=False)
    (done,) = units.run_units([unit], fn, resume=True, desc="x", show_progress=False, restart_damaged=True)
    assert done["ok"] is True  # (with the code_commit units.publish records)


def test_damaged_finished_files_are_named(tmp_path, capsys):
    unit = units.Unit(dir=tmp_path / "seed0", config={"a": 1}, seed=0)
    unit.dir.mkdir()
    (unit.dir / "result.json").write_text("{}")
    (unit.dir / "config.json").write_text("not json")
    with pytest.raises(DataError, match="seed0/config.json: damaged JSON"):
        units.check_resumable([unit], resume=True)
    (tmp_path / "summary.json").write_text('{"protocol": ')
    assert main(["report", str(tmp_path)]) == 2  # rebuilt from seed0/result.json, which is not a result
    assert "seed0/result.json: unknown protocol None" in capsys.readouterr().err
    (tmp_path / "seed0" / "result.json").unlink()
    assert main(["report", str(tmp_path)]) == 2  # nothing to rebuild it from
    assert "no finished unit (result.json) to make its summary from" in capsys.readouterr().err


def test_report_rebuilds_a_damaged_summary_from_the_units(data_root, tmp_path, caplog, capsys):
    out = tmp_path / "runs"
    assert main(["unsupervised", "--epochs", "1", "--seeds", "2", "--jobs", "1", "--data-root", str(data_root),
                 "--out", str(out), "--no-progress"]) == 0
    summary = out / "MUTAG-autogcl" / "summary.json"
    good = json.loads(summary.read_text())
    summary.write_text(summary.read_text()[:50])  # cut short
    assert main(["report", str(out)]) == 0
    assert "damaged JSON" in caplog.text and "rebuilding it" in caplog.text
    rebuilt = json.loads(summary.read_text())
    assert rebuilt == good and "| MUTAG | autogcl (epochs=1) | 2 |" in capsys.readouterr().out


# ------------------------------------------------------------------ folders


def test_report_on_a_missing_folder_is_an_error_and_creates_nothing(tmp_path, capsys):
    missing = tmp_path / "nope"
    assert main(["report", str(missing)]) == 2
    assert "no such run folder" in capsys.readouterr().err and not missing.exists()
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert "holds no summary.json" in capsys.readouterr().err


def test_out_that_is_a_file_is_refused_before_training(data_root, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for argv in (["unsupervised", "--dataset", "MUTAG", "--epochs", "1", "--seeds", "1"],
                 ["semi", "--dataset", "MUTAG", "--row", "labeled", "--epochs", "1", "--fold-limit", "1"]):
        assert main(argv + ["--data-root", str(data_root), "--out", str(blocker), "--no-progress"]) == 2
        assert "cannot write results into" in capsys.readouterr().err


# ------------------------------------------------------------------ damaged data files


def test_corrupt_gzip_tu_file_names_the_file(data_root, tmp_path, capsys):
    raw = tmp_path / "TU" / "MUTAG" / "raw"
    shutil.copytree(data_root / "TU" / "MUTAG" / "raw", raw)
    a = raw / "MUTAG_A.txt"
    blob = gzip.compress(a.read_bytes())
    (raw / "MUTAG_A.txt.gz").write_bytes(blob[: len(blob) // 2])  # truncated
    a.unlink()
    assert main(["unsupervised", "--dataset", "MUTAG", "--data-root", str(tmp_path), "--out",
                 str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "MUTAG_A.txt.gz: cannot be read, the file is damaged or truncated" in err


def test_corrupt_gzip_csv_names_file_and_line(tmp_path):
    from autogcl.data.molecules import read_labeled_csv

    rows = "smiles,y\n" + "".join(f"{'C' * (1 + i % 7)},{i % 2}\n" for i in range(4000))
    blob = gzip.compress(rows.encode())
    bad = tmp_path / "mols.csv.gz"
    bad.write_bytes(blob[:-40])  # the end of the stream is missing
    with pytest.raises(DataError, match=r"mols.csv.gz:\d+: the file is damaged or truncated"):
        read_labeled_csv(bad, "smiles", ["y"])


# ------------------------------------------------------------------ options


def test_options_that_do_not_apply_are_left_out_of_the_stored_config(caplog):
    from autogcl.protocols.semi import SemiConfig
    from autogcl.protocols.unsupervised import UnsupervisedConfig

    cfg = UnsupervisedConfig(method="autogcl", aug="node_drop", aug_ratio=0.4)
    assert cfg.to_dict() == UnsupervisedConfig(method="autogcl").to_dict()
    assert "--aug='node_drop', --aug-ratio=0.4 do(es) not apply to --method autogcl" in caplog.text
    assert UnsupervisedConfig(method="graphcl", add_mask=True).add_mask is False
    assert SemiConfig(row="labeled", lam=3.0).lam == 1.0 and SemiConfig(row="joint", lam=3.0).lam == 3.0


@pytest.mark.parametrize("argv,message", [
    (["unsupervised", "--epochs", "0"], "--epochs must lie in"),
    (["unsupervised", "--seeds", "0"], "--seeds must lie in"),
    (["unsupervised", "--eval-epochs", "40"], "--eval-epochs [40] must lie in 1..30"),
    (["unsupervised", "--device", "tpu"], "unknown device"),
    (["semi", "--label-rate", "1.5"], "--label-rate must lie in"),
    (["semi", "--row", "jiont"], "unknown row 'jiont'"),
    (["transfer", "finetune", "--label-cols", "a"], "--label-cols and --smiles-col are for --csv files"),
    (["transfer", "pretrain", "--batch-size", "1"], "--batch-size must lie in"),
])
def test_bad_options_are_one_line_errors(argv, message, tmp_path, capsys):
    assert main(argv + ["--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and not (tmp_path / "o").exists()


def test_an_unexpected_error_is_one_line_and_a_log_file(monkeypatch, tmp_path, capsys):
    import autogcl.protocols.report as report

    monkeypatch.setattr(report, "collect", lambda dirs: (_ for _ in ()).throw(KeyError("boom")))
    assert main(["report", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("autogcl: unexpected error: KeyError: 'boom' (full log: ") and "\n" not in err
    log_file = err.split("full log: ")[1].split(")")[0]
    assert "Traceback" in open(log_file).read()


# ------------------------------------------------------------------ labels, tasks, data roots


@pytest.mark.parametrize("labels,line,value", [("1\nnan\n", 2, "nan"), ("1.5\n-1\n", 1, "1.5")])
def test_graph_labels_that_are_not_class_ids(tmp_path, labels, line, value):
    from autogcl.data import load_tu
    from tests.data.test_tu import write_tu

    write_tu(tmp_path, graph_labels=labels)
    with pytest.raises(DataError, match=rf"TOY_graph_labels.txt:{line}: graph label {value} is not a class id"):
        load_tu("TOY", tmp_path)


def test_too_few_graphs_for_the_folds(tmp_path, capsys):
    from tests.data.test_tu import write_tu

    write_tu(tmp_path)  # 2 graphs
    for argv, msg in ((["unsupervised"], "TOY has 2 graphs: the SVM's 10-fold CV needs at least 10"),
                      (["semi", "--row", "labeled"], "TOY has 2 graphs: 10-fold CV needs at least 10")):
        assert main(argv + ["--dataset", "TOY", "--data-root", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
        assert msg in capsys.readouterr().err
    with pytest.raises(DataError, match="needs at least two classes and 10 graphs"):
        autogcl.svm_evaluate(torch.rand(4, 3), torch.tensor([0, 1, 0, 1]))


def test_one_class_dataset_cannot_be_evaluated(tmp_path, capsys):
    from tests.data.test_tu import write_tu

    write_tu(tmp_path, graph_labels="1\n1\n")
    for argv in (["unsupervised"], ["semi", "--row", "labeled"]):
        assert main(argv + ["--dataset", "TOY", "--data-root", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
        assert "TOY has 1 class" in capsys.readouterr().err


def test_attr_token_on_a_dataset_without_attributes(data_root, capsys, tmp_path):
    assert main(["unsupervised", "--feat", "attr+deg", "--data-root", str(data_root), "--out", str(tmp_path)]) == 2
    assert "feature token 'attr': MUTAG has no continuous node attributes" in capsys.readouterr().err


def test_a_named_data_root_without_the_dataset_is_an_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AUTOGCL_CACHE", str(tmp_path / "cache"))  # not in the cache either
    argv = ["unsupervised", "--dataset", "COLLAB", "--data-root", str(tmp_path), "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "COLLAB not found; looked in" in err and str(tmp_path / "TU" / "COLLAB" / "raw") in err
    assert "--download" in err


def test_molecule_tasks_that_cannot_be_scored_are_named(tmp_path, caplog):
    from autogcl.data.moleculenet import load_molecule_csv
    from autogcl.protocols.transfer import unscored_tasks

    rows = ["smiles,a,b,c"] + [f"{'C' * (i % 5 + 1)}O,{i % 2},1,"for i in range(12)]
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
    ds = load_molecule_csv(tmp_path / "m.csv", workers=1, progress=False)
    split = {"train": list(range(8)), "valid": [8, 9], "test": [10, 11]}
    bad = unscored_tasks(ds, split)
    assert bad["train"] == ["b", "c"]  # b: one class, c: no label at all
    assert "2 task(s) have no labels or one class in the train part (b, c)" in caplog.text


def test_a_nan_score_is_not_printed_as_a_result():
    from autogcl.protocols.report import transfer_table

    nan = {"mean": float("nan"), "std": float("nan"), "values": [float("nan")]}
    summary = {"dataset": "x", "tag": "t", "pretrained": False, "n_seeds": 1, "val": nan, "test_max": nan,
               "config": {"epochs": 1}, "pretrain_method": None}
    table = transfer_table([summary])
    assert "not scored (NaN)" in table and "nan ±" not in table


# ------------------------------------------------------------------ odd paths and files, command by command


def odd_files(root):
    """The files a careless user points the commands at."""
    import numpy as np

    def write(rel, text):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)

    write("afile", "x")
    write("unit/config.json", json.dumps({"dataset": "MUTAG", "method": "autogcl"}))
    write("unit/metrics.csv", "epoch,loss\n1,0.5\n2,0.4\n")
    write("noepoch/metrics.csv", "foo,bar\n1,2\n")
    write("badnum/metrics.csv", "epoch,loss\n1,0.5\n2,abc\n")
    write("listrun/config.json", "[1, 2]")
    write("listrun/model.pt", b"")
    write("summaries/a/summary.json", "[]")
    write("mols/dup.csv", "smiles,y,y\nCCO,0,0\nCCN,1,1\n")
    write("mols/header.csv", "smiles,y\n")
    write("precious/notes.txt", "keep me")
    emb = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 2
    for name, arrays in {"emb_ok": {"emb": emb, "y": y}, "emb_noy": {"emb": emb},
                         "emb_short": {"emb": emb, "y": y[:4]}, "emb_nan": {"emb": emb * np.nan, "y": y}}.items():
        (root / name).mkdir()
        np.savez(root / name / "embeddings_epoch1.npz", **arrays)
    write("emb_junk/embeddings_epoch1.npz", b"not a zip at all")


@pytest.mark.parametrize("argv,message", [
    # report
    (["report", ""], "RUN_DIR is an empty string"),
    (["report", "{tmp}/unit/config.json"], ("unit/config.json: not a summary of an autogcl sweep (no known "
                                            "protocol); give a run folder or its summary.json")),
    (["report", "{tmp}/summaries"], "summaries/a: no finished unit (result.json) to make its summary from"),
    (["report", "{run}", "--out", "{tmp}"], "is a folder; name the file to write"),
    (["report", "{run}", "--out", "{tmp}/afile/report.md"], "cannot write the report to {tmp}/afile/report.md "
                                                             "({tmp}/afile is not a folder)"),
    # visualize curves
    (["visualize", "curves", ""], "RUN_DIR is an empty string"),
    (["visualize", "curves", "{tmp}/noepoch"], "noepoch/metrics.csv:1: no 'epoch' column (columns are ['foo', 'bar'])"),
    (["visualize", "curves", "{tmp}/badnum"], "badnum/metrics.csv:3: loss 'abc' is not a number"),
    (["visualize", "curves", "{tmp}/unit", "--labels", "a,b"], "--labels gives 2 label(s) for 1 folder(s)"),
    (["visualize", "curves", "{tmp}/unit", "--phase", "pretrain"], "no metrics.csv with phase 'pretrain' below "
                                                                    "{tmp}/unit"),
    (["visualize", "curves", "{tmp}/unit", "--out", "{tmp}"], "is a folder; name the figure file to write"),
    (["visualize", "curves", "{tmp}/unit", "--out", "{tmp}/afile/c.png"], "(" + "{tmp}/afile is not a folder)"),
    # visualize tsne
    (["visualize", "tsne", ""], "UNIT_DIR is an empty string"),
    (["visualize", "tsne", "{tmp}/nope"], "no such unit folder: {tmp}/nope"),
    (["visualize", "tsne", "{tmp}/emb_ok/embeddings_epoch1.npz"], "not a folder: {tmp}/emb_ok/embeddings_epoch1.npz"),
    (["visualize", "tsne", "{tmp}/emb_noy"], ("emb_noy/embeddings_epoch1.npz: no array 'y' (an embeddings file "
                                              "holds emb and y; it has ['emb'])")),
    (["visualize", "tsne", "{tmp}/emb_junk"], "emb_junk/embeddings_epoch1.npz: not a readable embeddings file"),
    (["visualize", "tsne", "{tmp}/emb_short"], "emb (20, 3) and y (4,) are not a graphs x dims array and one label"),
    (["visualize", "tsne", "{tmp}/emb_nan"], ("emb_nan/embeddings_epoch1.npz: the embeddings hold values that are "
                                              "not finite numbers")),
    (["visualize", "tsne", "{tmp}/emb_ok", "--epochs", "5"], "--epochs 5: not saved in any of the folders (saved: 1)"),
    (["visualize", "tsne", "{tmp}/emb_ok", "--labels", "a,b"], "--labels gives 2 label(s) for 1 folder(s)"),
    (["visualize", "tsne", "{tmp}/emb_ok", "--out", "{tmp}"], "is a folder; name the figure file to write"),
    # visualize views
    (["visualize", "views", "--run", ""], "--run is an empty string"),
    (["visualize", "views", "--run", "{tmp}/nope"], "--run {tmp}/nope: no such folder"),
    (["visualize", "views", "--run", "{tmp}/nope", "--resume"], "--run draws a finished unit's generators"),
    (["visualize", "views", "--run", "{tmp}/listrun"], "listrun/config.json: damaged JSON (a list, not a JSON object)"),
    (["visualize", "views", "--target-acc", "2"], "--target-acc must lie in [0, 1]; got 2.0"),
    (["visualize", "views", "--batch-size", "1"], "--batch-size must lie in [2, inf); got 1"),
    (["visualize", "views", "--lambda", "-1"], "--lambda must lie in [0, inf); got -1.0"),
    (["visualize", "views", "--drop-ratio", "1.5"], "--drop-ratio must lie in [0, 1); got 1.5"),
    (["visualize", "views", "--limit", "0"], "--limit must lie in [1, inf); got 0"),
    (["visualize", "views", "--dataset", "MUTAG", "--out", "{tmp}/afile"], ("cannot write results into {tmp}/afile "
                                                                            "(a file is in the way)")),
    (["visualize", "views", "--dataset", "MUTAG", "--limit", "5", "--data-root", "{data}", "--out", "{tmp}/v"],
     "MUTAG: 5 training graphs are too few to train on and hold out validation graphs from (at least 20"),
    # ablate
    (["ablate", "graphcl-aug", "--augs", "", "--ratios", ""], "--augs and --ratios are both empty: nothing to run"),
    # data roots, names, features
    (["unsupervised", "--data-root", ""], "--data-root is an empty string"),
    (["unsupervised", "--dataset", "../TU/MUTAG", "--data-root", "{data}"], "'../TU/MUTAG' is not a dataset name"),
    (["unsupervised", "--feat", "odeg0", "--data-root", "{data}"], "N of odegN must lie in 1..10000"),
    (["unsupervised", "--feat", "odeg99999999999", "--data-root", "{data}"], "N of odegN must lie in 1..10000"),
    # embeddings asked for at epochs that never come, labels that cannot be drawn
    (["unsupervised", "--dataset", "MUTAG", "--epochs", "1", "--save-embeddings", "5", "--data-root", "{data}"],
     "--save-embeddings 5: embeddings are saved at evaluation epochs only (--eval-epochs 1)"),
    (["semi", "--dataset", "MUTAG", "--row", "labeled", "--epochs", "1", "--save-embeddings", "9", "--data-root",
      "{data}"],
     "--save-embeddings 9: not an epoch of this run (0 = before training .. --epochs 1)"),
    (["semi", "--dataset", "MUTAG", "--row", "labeled", "--label-rate", "0.01", "--data-root", "{data}"],
     "--label-rate 0.01 labels 1 of 188 graphs; training needs at least 2 (use at least 0.0106)"),
    (["semi", "--dataset", "MUTAG", "--row", "labeled", "--label-rate", "0.95", "--data-root", "{data}"],
     "--label-rate 0.95 asks for 178 labeled graphs but the training part of fold 0 has only 151"),
    # run options
    (["semi", "--row", " , "], "--row ' , ' names no row; choose from"),
    (["unsupervised", "--out", ""], "--out is an empty string; name the run folder"),
    (["unsupervised", "--first-seed", "4294967295", "--seeds", "2"], ("seeds go up to 4294967296, above the "
                                                                      "largest seed NumPy takes (4294967295)")),
    (["unsupervised", "--cpus-per-unit", "100000"], "--cpus-per-unit 100000 is more than this machine's"),
    (["unsupervised", "--dataset", "MUTAG", "--data-root", "{data}", "--out", "{tmp}/afile/runs"],
     "(a file is in the way); choose another --out"),
    # transfer
    (["transfer", "finetune", "--checkpoint", ""], "--checkpoint is an empty string; name an encoder.pt"),
    (["transfer", "finetune", "--csv", ""], "--csv is an empty string"),
    (["transfer", "finetune", "--csv", "{tmp}/mols/missing.csv"], "mols/missing.csv: no such file"),
    (["transfer", "finetune", "--csv", "{tmp}/mols"], "mols: a folder, not a CSV file"),
    (["transfer", "finetune", "--csv", "{tmp}/mols/dup.csv"], "dup.csv:1: column(s) ['y'] appear more than once"),
    (["transfer", "finetune", "--csv", "{tmp}/mols/header.csv"], "header.csv: no molecules below the header"),
    (["transfer", "finetune", "--dataset", ","], "--dataset ',' names no MoleculeNet dataset"),
    (["transfer", "finetune", "--csv", "{tmp}/mols/dup.csv", "--tag", "../elsewhere"],
     "--tag '../elsewhere' must be a plain folder name"),
    (["transfer", "finetune", "--checkpoint", "{tmp}/unit"], "unit: a folder, not a checkpoint file"),
    (["transfer", "pretrain", "--out", "{tmp}/afile"], "--out {tmp}/afile is a file; name a folder for the run"),
    (["transfer", "pretrain", "--out", "{tmp}/precious"], ("--out {tmp}/precious holds other files and no "
                                                           "finished pre-training run")),
])
def test_odd_paths_and_files_are_one_line_errors(argv, message, tmp_path, capsys, request):
    odd_files(tmp_path)
    fill = {"tmp": str(tmp_path), "run": str(tmp_path / "unit")}
    if any("{data}" in a for a in argv):
        fill["data"] = str(request.getfixturevalue("data_root"))
    if argv[0] == "report" and "{run}" in argv:
        (tmp_path / "unit" / "summary.json").write_text(json.dumps(
            {"protocol": "semi", "dataset": "MUTAG", "row": "labeled", "n_seeds": 1, "n_folds": 1, "tag": "t",
             "val": {"mean": 70.0, "std": 0.0}, "test_max": {"mean": 71.0, "std": 0.0}}))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    has_out = "--out" in argv
    argv = [a.format(**fill) for a in argv] + ([] if has_out or argv[0] in ("report", "visualize") else
                                               ["--out", str(tmp_path / "o")])
    assert main(argv + (["--no-progress"] if argv[0] in ("unsupervised", "semi", "transfer", "ablate") else [])) == 2
    err = capsys.readouterr().err
    assert message.format(**fill) in err and "Traceback" not in err, err
    assert len([line for line in err.splitlines() if line.startswith("autogcl")]) == 1
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written, nothing lost


def test_a_summary_that_is_not_one_is_rebuilt_and_a_named_file_is_never_rewritten(tmp_path, capsys):
    unit = tmp_path / "sweep" / "seed0"
    unit.mkdir(parents=True)
    (unit / "result.json").write_text("[1]")
    (tmp_path / "sweep" / "summary.json").write_text('{"protocol": "unsupervised"}')  # JSON, but not a summary
    assert main(["report", str(tmp_path / "sweep")]) == 2
    assert "seed0/result.json: damaged JSON (a list, not a JSON object)" in capsys.readouterr().err
    (tmp_path / "notes.json").write_text("{")  # damaged, and not a summary.json: reported, never rebuilt
    assert main(["report", str(tmp_path / "notes.json")]) == 2
    assert "notes.json: damaged JSON" in capsys.readouterr().err
    assert not (tmp_path / "summary.json").exists()


def test_damaged_files_of_a_finished_unit_are_named_on_resume(data_root, tmp_path, capsys):
    unit = tmp_path / "o" / "MUTAG-autogcl" / "seed0"
    unit.mkdir(parents=True)
    (unit / "result.json").write_text("{}")
    argv = ["unsupervised", "--epochs", "1", "--seeds", "1", "--data-root", str(data_root), "--out",
            str(tmp_path / "o"), "--resume", "--no-progress"]
    assert main(argv) == 2  # config.json missing
    assert "seed0/config.json: missing" in capsys.readouterr().err
    (unit / "config.json").write_text('["not", "a", "config"]')
    assert main(argv) == 2
    assert "seed0/config.json: damaged JSON (a list, not a JSON object)" in capsys.readouterr().err


def test_damaged_semi_splits_are_named_on_resume(data_root, tmp_path, capsys):
    splits = tmp_path / "o" / "MUTAG-labeled" / "seed0" / "splits.json"
    splits.parent.mkdir(parents=True)
    splits.write_text(json.dumps({"folds": [{"fold": 0}]}))
    assert main(["semi", "--dataset", "MUTAG", "--row", "labeled", "--epochs", "1", "--fold-limit", "1", "--data-root",
                 str(data_root), "--out", str(tmp_path / "o"), "--resume", "--no-progress"]) == 2
    assert "seed0/splits.json: damaged splits (KeyError: 'train')" in capsys.readouterr().err


def test_a_last_batch_of_one_graph_is_dropped_not_a_crash(data_root, tmp_path):
    # MUTAG fold 0 has 18 labeled graphs: batches of 17 would leave one graph, which BatchNorm cannot train on
    assert main(["semi", "--dataset", "MUTAG", "--row", "labeled", "--epochs", "1", "--fold-limit", "1",
                 "--batch-size", "17", "--data-root", str(data_root), "--out", str(tmp_path), "--no-progress"]) == 0


def test_a_huge_jobs_count_starts_no_more_processes_than_fits(monkeypatch):
    import numpy as np

    from autogcl.eval import svm

    asked = []

    class Serial:
        def __init__(self, n_jobs):
            asked.append(n_jobs)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def __call__(self, jobs):
            return [f(*a, **k) for f, a, k in jobs]

    monkeypatch.setattr(svm, "Parallel", Serial)
    rng = np.random.default_rng(0)
    res = svm.svm_evaluate(rng.normal(size=(40, 4)), np.arange(40) % 2, folds=4, inner_folds=2, n_jobs=100_000)
    assert asked == [4 * 2] and 0 <= res["test_acc"] <= 1  # one process per inner fit (4 outer x 2 inner) at most
