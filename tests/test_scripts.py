"""The analysis scripts under scripts/ on a real (tiny) run."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from autogcl.cli import main

ROOT = Path(__file__).resolve().parents[1]


def load_script(path):
    """The script ``scripts/PATH.py`` (e.g. ``studies/compare_runs``) as a module."""
    name = path.rsplit("/", 1)[-1]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{path}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_semi_windows_selects_within_each_window(data_root, tmp_path, capsys, monkeypatch):
    out = tmp_path / "semi"
    assert main(["semi", "--dataset", "MUTAG", "--row", "labeled", "--epochs", "3", "--fold-limit", "2",
                 "--data-root", str(data_root), "--out", str(out), "--no-progress", "--device", "cpu"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("AUTOGCL_DATA", str(data_root))
    sw = load_script("studies/semi_windows")
    assert sw.main([str(out / "MUTAG-labeled"), "--epochs", "1,3,5", "--labels", "ours"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ours |")]
    assert [line.split(" | ")[1] for line in lines] == ["1", "3"]  # no fold ran 5 epochs
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    rows = [sw.window(sw.fold_rows(f), 3) for f in sorted(out.glob("MUTAG-labeled/seed0/fold*"))]
    assert cells[1][4].startswith(f"{sum(r['test_max'] for r in rows) / 2:.2f} ±")
    one = [sw.window(sw.fold_rows(f), 1) for f in sorted(out.glob("MUTAG-labeled/seed0/fold*"))]
    assert all(w["val"] == w["test_max"] == w["last"] for w in one)  # one epoch: every selection is it
    per_fold, common = (float(c.split(" ±")[0]) for c in cells[1][4:6])
    assert common <= per_fold
    assert sw.main([str(tmp_path / "nothing")]) == 2
    assert "no finished fold" in capsys.readouterr().err


def test_compare_runs_pairs_sweeps_seed_by_seed(tmp_path, capsys):
    import json

    def write(folder, tag, val, test_max, seeds=(0, 1, 2)):
        (folder / tag).mkdir(parents=True)
        sel = {k: {"mean": sum(v) / len(v), "std": 0.5, "values": v} for k, v in (("val", val), ("test_max", test_max))}
        (folder / tag / "summary.json").write_text(json.dumps({
            "protocol": "unsupervised", "dataset": tag.split("-")[0], "method": "autogcl", "tag": tag,
            "n_seeds": len(seeds), "seeds": list(seeds), "config": {}, **sel}))

    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "MUTAG-autogcl", [80.0, 82.0, 84.0], [81.0, 83.0, 85.0])
    write(b, "MUTAG-autogcl", [81.0, 81.0, 86.0], [81.0, 84.0, 86.0])
    write(a, "PROTEINS-autogcl", [70.0, 71.0, 72.0], [70.0, 71.0, 72.0])
    write(b, "PROTEINS-autogcl", [70.0, 71.0], [70.0, 71.0], seeds=(0, 1))  # another seed set
    write(b, "NCI1-autogcl", [70.0], [70.0], seeds=(0,))  # on one side only: left out
    cr = load_script("studies/compare_runs")
    assert cr.main([str(a), str(b), "--labels", "paper,released"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "val released - paper" in lines[0] and len(lines) == 4  # one paired sweep: nothing to pool or check
    write(a, "IMDB-autogcl", [70.0, 70.0, 70.0], [70.0, 70.0, 70.0])
    write(b, "IMDB-autogcl", [73.0, 70.0, 70.0], [70.0, 70.0, 70.0])
    assert cr.main([str(a), str(b)]) == 0
    out = capsys.readouterr().out.splitlines()
    pooled = [c.strip() for c in next(x for x in out if x.startswith("| all sweeps")).strip("|").split("|")]
    # six differences +1, -1, +2, +3, 0, 0: mean +0.83, sample std 1.47, 3 ahead
    assert pooled[:2] == ["all sweeps, pooled", "6"] and pooled[4:6] == ["+0.83 ± 1.47", "3/6"]
    # the checks below the table: median +0.5; Wilcoxon on the four non-zero differences; one
    # sweep's median (+1, 0) favours B, the other neither: sign test p = 1
    from scipy.stats import wilcoxon

    val = next(x for x in out if x.startswith("val: "))
    assert val == (f"val: pooled median B - A +0.50 over 6 pairs, Wilcoxon signed-rank p "
                   f"{wilcoxon([1.0, -1.0, 2.0, 3.0]).pvalue:.3f}; sweeps whose median favours B 1/2 (A 0), sign test p 1.000")
    # test_max: differences 0, +1, +1 and 0, 0, 0: pooled median 0, IMDB's median 0 favours neither side
    assert next(x for x in out if x.startswith("test_max: ")).endswith("+0.00 over 6 pairs, Wilcoxon signed-rank p "
                                                                     f"{wilcoxon([1.0, 1.0]).pvalue:.3f}; sweeps whose "
                                                                     "median favours B 1/2 (A 0), sign test p 1.000")
    assert cr.main([str(a), str(b), "--labels", "paper,released"]) == 0
    lines = capsys.readouterr().out.splitlines()[:5]
    mutag = [c.strip() for c in lines[3].strip("|").split("|")]
    # differences +1, -1, +2: mean +0.67, sample std 1.53, released ahead on 2 of 3
    assert mutag[:2] == ["MUTAG-autogcl", "3"] and mutag[4:6] == ["+0.67 ± 1.53", "2/3"]
    assert mutag[9:11] == ["+0.67 ± 0.58", "2/3 (1 tied)"]  # test_max: 0, +1, +1
    assert float(mutag[6]) > 0.05
    assert lines[4].startswith("| PROTEINS-autogcl | unpaired | - |")
    assert cr.main([str(a), str(tmp_path / "nothing")]) == 2
    assert "no such run folder" in capsys.readouterr().err


def test_selection_rules_reproduce_the_protocol_and_read_only_validation(data_root, tmp_path, capsys):
    import json

    import numpy as np

    out = tmp_path / "semi"
    assert main(["semi", "--dataset", "MUTAG", "--row", "labeled", "--epochs", "4", "--fold-limit", "2",
                 "--data-root", str(data_root), "--out", str(out), "--no-progress", "--device", "cpu"]) == 0
    capsys.readouterr()
    sr = load_script("studies/selection_rules")
    assert sr.main([str(out)]) == 0
    row = [c.strip() for c in capsys.readouterr().out.splitlines()[2].strip("|").split("|")]
    summary = json.loads((out / "MUTAG-labeled" / "summary.json").read_text())
    for rule, column in (("val", 2), ("test_max", 7)):  # the protocol's own figures, to the digit
        assert row[column] == f"{summary[rule]['mean']:.2f} ± {summary[rule]['std']:.2f}"
    # hand-made curves: ties, smoothing and NaN epochs
    v = np.array([0.5, 0.8, 0.6, 0.8, 0.9, 0.1, np.nan])
    t = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    assert np.allclose(sr.smooth(v, 3)[:3], [0.65, 0.633333, 0.733333]) and np.isnan(sr.smooth(v, 1)[-1])
    assert np.allclose(sr.smooth(v[:2], 5), [0.65, 0.65])  # a curve shorter than the window
    picked = sr.pick(v, t)
    assert picked["val"] == 0.5 and picked["last"] == 0.7 and picked["test_max"] == 0.7
    tie = sr.pick(np.array([0.5, 0.9, 0.9, 0.1]), t[:4])
    assert (tie["val"], tie["val_late"]) == (0.2, 0.3)
    assert sr.main([str(tmp_path / "none")]) == 2 and "no such run folder" in capsys.readouterr().err
    bad = tmp_path / "bad" / "T" / "d" / "seed0"
    bad.mkdir(parents=True)
    (bad / "result.json").write_text("{}")
    (bad / "metrics.csv").write_text("epoch,val_auc,test_auc\n1,0.5,0.6\n2,0.7,abc\n")
    assert sr.main([str(tmp_path / "bad")]) == 2
    assert f"{bad / 'metrics.csv'}:3: test_auc 'abc' is not a number" in capsys.readouterr().err


def test_mnist_background_drops_exactly_the_strokes(data_root, capsys):
    import pytest
    import torch
    from torch_geometric.data import Data

    mb = load_script("studies/mnist_background")
    g = Data(x=torch.tensor([[0.9, 0.1, 0.1], [0.2, 0.5, 0.5], [0.5, 0.3, 0.7]]),
             edge_index=torch.tensor([[0, 1], [1, 0]]))
    view = mb.background_view(g)
    assert view.node_weight.tolist() == [0.0, 1.0, 0.0] and not hasattr(g, "node_weight")  # a copy
    if not (data_root / "MNIST" / "raw").is_dir():
        pytest.skip("MNIST raw files not in the data root")
    assert mb.main(["--data-root", str(data_root), "--limit", "40", "--epochs", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("| whole", "| background"))]
    assert len(rows) == 2 and all(0 <= float(r.split("|")[2].strip(" %")) <= 100 for r in rows)


def test_compare_runs_draws_the_paired_differences(tmp_path, capsys):
    import json

    for side, vals in (("a", [[80.0, 82.0, 84.0], [70.0, 70.0]]), ("b", [[81.0, 81.0, 86.0], [73.0, 70.0]])):
        for tag, v in zip(("MUTAG-autogcl", "IMDB-autogcl"), vals):
            (tmp_path / side / tag).mkdir(parents=True)
            (tmp_path / side / tag / "summary.json").write_text(json.dumps({
                "protocol": "unsupervised", "dataset": tag.split("-")[0], "method": "autogcl", "tag": tag,
                "seeds": list(range(len(v))), "n_seeds": len(v), "config": {},
                **{k: {"mean": sum(v) / len(v), "std": 0.0, "values": v} for k in ("val", "test_max")}}))
    cr = load_script("studies/compare_runs")
    runs_a, runs_b = cr.sweeps(tmp_path / "a"), cr.sweeps(tmp_path / "b")
    diffs = {tag: d.tolist() for tag, d in cr.differences(runs_a, runs_b)}
    assert diffs == {"IMDB-autogcl": [3.0, 0.0], "MUTAG-autogcl": [1.0, -1.0, 2.0]}
    assert cr.main([str(tmp_path / "a"), str(tmp_path / "b"), "--plot", str(tmp_path / "fig" / "d.png")]) == 0
    assert (tmp_path / "fig" / "d.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (tmp_path / "fig" / "d.svg").read_text()
    assert f"wrote {tmp_path / 'fig' / 'd.png'}" in capsys.readouterr().out


def _autogcl_here(argv, stdout, stderr):
    """``subprocess.call`` for transfer_sizes.py's commands, by autogcl's ``main`` in this process
    (tests.faults.common.autogcl_here, one thread): the command the child would run, without an
    interpreter start (~9 s on CI's machine) for each of the test's ten commands; what it prints
    goes to the command's log. test_transfer_sizes_times_a_real_autogcl_process runs the child itself."""
    import os
    import sys

    from tests.faults.common import autogcl_here

    assert argv[:3] == [sys.executable, "-m", "autogcl"] and stderr == -2  # subprocess.STDOUT
    done = autogcl_here(argv[3:], os.getcwd())
    stdout.write(done.stderr)
    return done.returncode


def test_transfer_sizes_times_a_real_autogcl_process(tmp_path, monkeypatch):
    """``timed`` starts ``python -m autogcl`` and records its times, exit code and command line
    (``OMP_NUM_THREADS`` too) in commands.tsv, below one header; the child's output goes to the log."""
    ts = load_script("studies/transfer_sizes")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    log, results = tmp_path / "a.log", tmp_path / "results"
    assert ts.timed(["--help"], log, results) == 0
    assert ts.timed(["no-such-command"], log, results) == 2
    lines = (results / "commands.tsv").read_text().splitlines()
    assert lines[0] == "started\tfinished\twall_s\texit\tcommand" and len(lines) == 3
    assert [ln.split("\t")[3:] for ln in lines[1:]] == [["0", "OMP_NUM_THREADS=1 autogcl --help"],
                                                        ["2", "OMP_NUM_THREADS=1 autogcl no-such-command"]]
    text = log.read_text()
    assert "usage: autogcl" in text and "invalid choice: 'no-such-command'" in text


def test_transfer_sizes_runs_each_setting_once_and_reports_the_curve(data_root, tmp_path, capsys, monkeypatch):
    import json
    import subprocess
    from types import SimpleNamespace

    import pytest

    ts = load_script("studies/transfer_sizes")
    monkeypatch.setattr(ts, "subprocess", SimpleNamespace(call=_autogcl_here, STDOUT=subprocess.STDOUT))
    assert ts.parse_setting("50000x2") == ("moses50000x2", 50000, 2)
    assert ts.parse_setting("fullx1") == ("mosesfullx1", None, 1) and ts.parse_setting("none")[1:] == (None, None)
    for bad in ("50000", "nonex2", "x2", "fullx", "0x2", "050000x2", "50000x0"):
        with pytest.raises(SystemExit, match="give none, NxE or fullxE"):
            ts.parse_setting(bad)
    b, se, n = ts.slope([(1e3, 61.0), (1e4, 63.0), (1e5, 65.0), (float("nan"), 70.0)])  # exactly +2 per decade
    assert abs(b - 2.0) < 1e-9 and se < 1e-6 and n == 3 and ts.slope([(1e3, 60.0), (1e4, 61.0)]) is None
    assert ts.slope([(1e4, 60.0), (1e4, 61.0), (1e4, 62.0)]) is None  # one amount: no slope

    corpus = tmp_path / "corpus.smi"
    corpus.write_text("\n".join(["CCO", "c1ccccc1O", "CC(=O)Nc1ccccc1", "CCN(CC)CC", "OCC(O)CO"] * 6) + "\n")
    lines = (data_root / "moleculenet" / "bbbp.csv").read_text().splitlines()
    csv = tmp_path / "tiny.csv"
    csv.write_text("\n".join(lines[:1] + lines[1:61] + lines[-60:]) + "\n")
    results, out = tmp_path / "results", tmp_path / "runs"
    args = ["--results", str(results), "run", "--pretrain", "none", "fullx1", "--datasets", "tiny",
            "--seeds", "1", "--epochs", "1", "--out", str(out),
            f"--pretrain-opts=--corpus {corpus} --batch-size 8 --chunk-size 20 --workers 1",
            f"--finetune-opts=--csv {csv} --label-cols p_np --workers 1 --device cpu"]
    assert ts.main(args) == 0
    tsv = (results / "commands.tsv").read_text().splitlines()[1:]  # below the header
    assert len(tsv) == 3 and all(line.split("\t")[3] == "0" for line in tsv)  # no_pretrain, pre-training, its fine-tuning
    assert "autogcl transfer pretrain --epochs 1" in tsv[1] and "--max-molecules" not in tsv[1]  # full: the whole corpus
    pre = json.loads((results / "summaries/sizes/pretrain/mosesfullx1/result.json").read_text())
    assert pre["molecules_seen"] == 24 and pre["corpus"]["molecules"] == 30
    s = json.loads((results / "summaries/sizes/transfer/mosesfullx1/tiny/summary.json").read_text())
    assert s["pretrain"] == {"epochs": 1, "molecules_seen": 24, "corpus_molecules": 30}
    # published as every committed cell: summaries and records with their provenance, units beside them
    records = {f: f.read_text() for f in sorted(results.rglob("provenance.json"))}
    units = list((results / "units/sizes/transfer").rglob("result.json"))
    assert len(units) == 2 and all((u.parent / "provenance.json").is_file() for u in units)  # none, fullx1: a seed each
    assert {str(f.parent.relative_to(results)) for f in records if "summaries" in f.parts} == {
        "summaries/sizes/transfer/no_pretrain/tiny", "summaries/sizes/transfer/mosesfullx1/tiny",
        "summaries/sizes/pretrain/mosesfullx1"}
    assert all(json.loads(t)["commit"] for t in records.values())
    done = {f: f.stat().st_mtime_ns for f in out.rglob("result.json")}
    assert ts.main(args) == 0  # everything finished: autogcl is asked again and keeps it all
    assert {f: f.read_text() for f in sorted(results.rglob("provenance.json"))} == records  # published already
    assert {f: f.stat().st_mtime_ns for f in out.rglob("result.json")} == done and len(done) == 3
    again = (results / "commands.tsv").read_text().splitlines()[4:]
    assert len(again) == 3 and all(line.split("\t")[3] == "0" for line in again)
    assert ts.main(args[:-1] + [args[-1] + " --lr 0.01"]) == 1  # another configuration: refused, nothing lost
    assert {f: f.stat().st_mtime_ns for f in out.rglob("result.json")} == done
    capsys.readouterr()
    assert ts.main(["--results", str(results), "report"]) == 0
    table = (results / "transfer_sizes.md").read_text()
    rows = [r for r in table.splitlines() if r.startswith("| tiny |")]
    assert [r.split(" | ")[1] for r in rows] == ["no_pretrain", "mosesfullx1"]  # by molecules seen
    assert rows[1].split(" | ")[2:5] == ["30", "1", "24"] and "fewer than three pre-trained points" in table
    # the study's losses, read from the encoder's record; its path from the run folder's runs/ on
    assert "- mosesfullx1: `runs/pretrain/mosesfullx1/encoder.pt` (--sim-loss none --cl-variant simclr)" in table
    assert (results / "transfer_sizes.png").read_bytes()[:4] == b"\x89PNG"
    assert "Against" not in table  # no sweep of the shipped encoder here
    assert ts.main(["--results", str(results), "report", "--reference", "no_pretrain"]) == 0
    assert "Against no_pretrain" in (table := (results / "transfer_sizes.md").read_text())
    assert "- mosesfullx1: val " in table and " (tiny), mean " in table and "(1 dataset)" in table

    # a study sharing the units of a committed cell run with the same command restores them (the
    # seeds it asks for), keeps them and publishes them with the commit their record names
    unit = results / "units/sizes/transfer/no_pretrain/tiny/seed0"
    (unit / "provenance.json").write_text(json.dumps({"commit": "aaa1111", "dirty": False, "device": "cpu"}))
    shared_results = tmp_path / "shared_results"
    assert ts.main(["--results", str(shared_results), "run", "--pretrain", "none", "--datasets", "tiny", "--seeds", "1",
                    "--epochs", "1", "--out", str(tmp_path / "shared"), "--units-from",
                    str(results / "summaries/sizes/transfer"), args[-1]]) == 0
    assert (tmp_path / "shared/transfer/no_pretrain/tiny/seed0/result.json").read_bytes() == \
        (unit / "result.json").read_bytes()  # kept, not run again
    assert json.loads((shared_results / "units/sizes/transfer/no_pretrain/tiny/seed0/provenance.json").read_text())[
        "commit"] == "aaa1111"
    assert json.loads((shared_results / "summaries/sizes/transfer/no_pretrain/tiny/provenance.json").read_text())[
        "unit_commits"] == {"aaa1111": 1}

    # an encoder made before stands for its setting once its record says it is what the
    # study's own pre-training would have made (setting, options, corpus)
    enc = out / "pretrain" / "mosesfullx1" / "encoder.pt"
    pre_opts = args[-2]
    reuse = ["--results", str(results), "run", "--pretrain", "fullx1", "--encoder", f"fullx1={enc}", "--datasets",
             "tiny", "--seeds", "1", "--epochs", "1", "--out", str(tmp_path / "reuse"), pre_opts, args[-1]]
    before = len((results / "commands.tsv").read_text().splitlines())
    assert ts.main(reuse) == 0
    added = (results / "commands.tsv").read_text().splitlines()[before:]
    assert len(added) == 1 and "transfer finetune" in added[0] and f"--checkpoint {enc}" in added[0]
    assert not (tmp_path / "reuse" / "pretrain").exists()
    other = tmp_path / "elsewhere" / corpus.name  # same name and size, other molecules: told by its digest
    other.parent.mkdir()
    other.write_text(corpus.read_text().replace("CCO\n", "CCN\n"))
    for spec, pretrain, opts, msg in (
            (f"50000x2={enc}", "50000x2", pre_opts, "says the whole corpus molecules x 1 epochs, not 50000x2"),
            (f"fullx2={enc}", "fullx2", pre_opts, "says the whole corpus molecules x 1 epochs, not fullx2"),
            (f"fullx1={enc}", "fullx1", pre_opts + " --batch-size 16", r"other options than the study's "
             r"\(batch_size: 8 != 16\)"),
            (f"fullx1={enc}", "fullx1", pre_opts.replace(str(corpus), str(other)), "not on the study's corpus"),
            (f"50000x2={enc}", "fullx1", pre_opts, "50000x2 is not a pre-trained setting of --pretrain"),
            (f"abc={enc}", "fullx1", pre_opts, "the setting must be NxE or fullxE"),
            ("fullx1", "fullx1", pre_opts, "give SETTING=PATH"),
            (f"fullx1={tmp_path / 'nope.pt'}", "fullx1", pre_opts, "no such checkpoint")):
        with pytest.raises(SystemExit, match=msg):
            ts.main(reuse[:3] + ["--pretrain", pretrain, "--encoder", spec] + reuse[7:-2] + [opts, reuse[-1]])
    with pytest.raises(SystemExit, match="fullx1 is given twice"):
        ts.main(reuse[:7] + ["--encoder", f"fullx1={enc}"] + reuse[7:])
    assert ts.shown(str(ts.ROOT / "pretrained" / "x.pt")) == "pretrained/x.pt"
    assert ts.shown(str(enc)) == "runs/pretrain/mosesfullx1/encoder.pt" and ts.shown("/tmp/e.pt") == "/tmp/e.pt"
    # a run of another checkout (a worktree of background jobs) shows no machine's folders
    assert ts.shown("/work/bg/runs/sizes_h/pretrain/x/encoder.pt") == "runs/sizes_h/pretrain/x/encoder.pt"
    assert ts.shown("/elsewhere/docs/results/e.pt") == "docs/results/e.pt" and ts.shown("runs/x.pt") == "runs/x.pt"


def test_transfer_sizes_checks_the_shipped_encoders_losses_and_all(data_root):
    """The earlier shipped encoder stands for the study's 200k x 2 setting (its record read in today's
    terms: the paper's losses), the current one for whole corpus x 1 and not for 200k x 2; the
    released losses are another pre-training, refused for it."""
    import pytest

    from autogcl.data.datasets import fingerprint
    from autogcl.models.mol_gin import load_encoder
    from autogcl.protocols.pretrain import resolve_corpus

    ts = load_script("studies/transfer_sizes")
    corpus = resolve_corpus("", data_root)
    made = ts.recorded_config(load_encoder(ts.ROOT / "pretrained" / "autogcl-moses-fullx1.pt")[2])
    if made.get("corpus_fingerprint") != fingerprint([corpus])[0]:  # e.g. a GPU call's 20,000-molecule slice
        pytest.skip(f"the data root's MOSES corpus {corpus} is not the one the shipped encoders were pre-trained on")
    held = ts.study_config(200000, 2, "")
    assert (held["cl_variant"], held["sim_loss"]) == ("simclr", "none")
    named = ts.study_config(200000, 2, "--sim-loss mse --cl-variant released")
    assert (named["cl_variant"], named["sim_loss"]) == ("released", "mse")
    shipped = ts.ROOT / "pretrained" / "autogcl-moses200k.pt"
    given = ts.given_encoders([f"200000x2={shipped}"], [ts.parse_setting("200000x2")], "", data_root)
    assert given == {"moses200000x2": shipped.resolve()}
    full = ts.ROOT / "pretrained" / "autogcl-moses-fullx1.pt"  # the shipped one is the study's whole-corpus x 1
    assert ts.given_encoders([f"fullx1={full}"], [ts.parse_setting("fullx1")], "", data_root) == \
        {"mosesfullx1": full.resolve()}
    with pytest.raises(SystemExit):  # and not a 200k x 2 encoder
        ts.given_encoders([f"200000x2={full}"], [ts.parse_setting("200000x2")], "", data_root)
    with pytest.raises(SystemExit, match=r"other options than the study's \(cl_variant: 'simclr' != 'released'"):
        ts.given_encoders([f"200000x2={shipped}"], [ts.parse_setting("200000x2")],
                          "--sim-loss mse --cl-variant released", data_root)
    assert ts.losses_of(Path("/nonexistent"), "moses200000x2", str(shipped)) == "--sim-loss none --cl-variant simclr"
    assert ts.losses_of(Path("/nonexistent"), "x", "/nonexistent.pt") == "losses not recorded"
    # newer units record a shipped encoder by its name: its record is read through the name
    assert ts.losses_of(Path("/nonexistent"), "moses200000x2", "autogcl-moses200k") == \
        "--sim-loss none --cl-variant simclr"


def test_transfer_sizes_draws_corpus_and_epoch_sweeps_apart():
    """More molecules and more epochs on the same molecules are two lines of the figure: the
    corpus line takes each corpus size's fewest epochs; the epoch line starts from that point."""
    ts = load_script("studies/transfer_sizes")

    def row(n, e):
        return {"pretrained": True, "tag": f"moses{n}x{e}",
                "pretrain": {"corpus_molecules": n, "epochs": e, "molecules_seen": n * e}}

    rows = [row(50000, 8), row(1584663, 1), row(50000, 2), row(200000, 2), {"pretrained": False, "tag": "none"},
            {"pretrained": True, "tag": "unrecorded", "pretrain": {}}]
    corpus, epochs = ts.sweeps(rows)
    assert [s["tag"] for s in corpus] == ["moses50000x2", "moses200000x2", "moses1584663x1"]
    assert [[s["tag"] for s in line] for line in epochs] == [["moses50000x2", "moses50000x8"]]
    assert [ts.label(s) for s in corpus] == ["50k x 2", "200k x 2", "1.58M x 1"]


def test_transfer_sizes_compares_every_sweep_with_the_reference_over_the_same_seeds():
    """The ship rule's numbers in the report (``pooled`` over one group): each sweep's mean
    difference from the reference over the seeds both hold, per dataset; over the same seeds that
    is the difference of the means; a sweep without a reference is left out."""
    ts = load_script("studies/transfer_sizes")

    def s(val, test, seeds=(0, 1, 2)):  # every seed scores the same, so the means are val and test
        return {"seeds": list(seeds), "val": {"values": [val] * len(seeds)},
                "test_max": {"values": [test] * len(seeds)}}

    sums = {("a", "ref"): s(70.0, 80.0), ("a", "big"): s(72.5, 79.0), ("b", "ref"): s(60.0, 65.0),
            ("b", "big"): s(59.0, 66.0), ("b", "few"): s(90.0, 90.0, seeds=(0,)), ("c", "big"): s(99.0, 99.0)}
    out = ts.pooled([sums], "ref")
    assert [(r[0], r[1], r[2], r[4]) for r in out["big"]] == [("a", 3, 2.5, -1.0), ("b", 3, -1.0, 1.0)]
    assert [(r[0], r[1], r[2], r[4]) for r in out["few"]] == [("b", 1, 30.0, 25.0)]  # its one seed paired
    assert ts.pooled([sums], "nothing") == {}


def test_transfer_sizes_pools_seed_pairs_within_each_group_only():
    """Pooled differences pair a seed with the same seed of the reference inside one group (one
    device), never across groups; a seed the reference lacks is left out; the standard error is
    the pairs' sample spread over sqrt(pairs), NaN for one pair."""
    ts = load_script("studies/transfer_sizes")

    def s(seeds, val, test):
        return {"seeds": list(seeds), "val": {"values": list(val)}, "test_max": {"values": list(test)}}

    cpu = {("a", "ref"): s([0, 1], [70.0, 72.0], [80.0, 80.0]), ("a", "big"): s([0, 1, 2], [71.0, 75.0, 99.0],
                                                                                 [81.0, 79.0, 99.0])}
    gpu = {("a", "ref"): s([0], [60.0], [70.0]), ("a", "big"): s([0], [66.0], [70.0]),
           ("b", "ref"): s([0], [50.0], [50.0]), ("b", "big"): s([0], [49.0], [52.0])}
    out = ts.pooled([cpu, gpu], "ref")
    (a, b) = out["big"]
    assert a[:2] == ("a", 3) and b[:2] == ("b", 1)
    assert a[2] == pytest.approx((1.0 + 3.0 + 6.0) / 3)  # seed 2 has no reference on the CPU
    assert a[3] == pytest.approx(np.std([1.0, 3.0, 6.0], ddof=1) / np.sqrt(3))
    assert a[4] == pytest.approx(0.0) and a[5] == pytest.approx(np.std([1.0, -1.0, 0.0], ddof=1) / np.sqrt(3))
    assert b[2:5:2] == (-1.0, 2.0) and np.isnan(b[3]) and np.isnan(b[5])
    assert ts.pooled([cpu], "nothing") == {}
    nan = {("a", "ref"): s([0, 1], [70.0, 72.0], [80.0, 80.0]), ("a", "big"): s([0, 1], [float("nan"), 73.0],
                                                                                [81.0, 81.0])}
    assert ts.pooled([nan], "ref")["big"] == [("a", 1, 1.0, pytest.approx(float("nan"), nan_ok=True), 1.0,
                                               pytest.approx(float("nan"), nan_ok=True))]
    with pytest.raises(ValueError, match="big on a: 2 seeds but 1 val"):
        ts.pooled([{("a", "ref"): cpu[("a", "ref")], ("a", "big"): s([0, 1], [1.0], [1.0, 2.0])}], "ref")


def test_transfer_sizes_pool_writes_the_table_and_refuses_nothing_to_pair(tmp_path, capsys):
    """``pool`` over two results folders (one given twice, counted once) writes the Markdown table
    with a mean row; a reference that no folder holds is an error, not an empty table."""
    import json

    ts = load_script("studies/transfer_sizes")

    def put(folder, ds, tag, seeds, val, test):
        f = tmp_path / folder / "summaries" / "sizes" / "transfer" / tag / ds / "summary.json"
        f.parent.mkdir(parents=True)
        f.write_text(json.dumps({"seeds": seeds, "val": {"values": val}, "test_max": {"values": test}}))

    put("cpu", "a", "ref", [0, 1], [70.0, 72.0], [80.0, 80.0])
    put("cpu", "a", "big", [0, 1], [71.0, 75.0], [81.0, 79.0])
    put("gpu", "a", "ref", [0], [60.0], [70.0])
    put("gpu", "a", "big", [0], [66.0], [70.0])
    out = tmp_path / "pooled.md"
    cpu, gpu = str(tmp_path / "cpu"), str(tmp_path / "gpu")
    assert ts.main(["pool", cpu, gpu, cpu, "--reference", "ref", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| big | a | 3 | +3.33 ± 1.45 | +0.00 ± 0.58 |" in text
    assert "| big | mean of the 1 datasets | 3 | +3.33 | +0.00 |" in text
    with pytest.raises(SystemExit, match="no sweep to pair with other"):
        ts.main(["pool", cpu, "--reference", "other"])
    assert "no other sweep" in capsys.readouterr().err


def test_gpu_window_on_the_cpu_with_a_tiny_budget(data_root, tmp_path):
    """scripts/gpu/gpu_window.sh run, on the CPU, one MUTAG cell, a budget too small for a whole unit:
    it exits cleanly, stops the running unit at the budget, returns the log and one archive of
    what finished (here, at most the units that made it), and a second call resumes the same plan."""
    import os
    import subprocess
    import sys
    import tarfile

    root, out = tmp_path / "root", tmp_path / "out"
    root.mkdir()
    env = {**os.environ, "OUT": str(out), "ROOT": str(root), "DATA": str(data_root), "DEVICE": "cpu",
           "COMPUTE": "all", "BUDGET": "12", "GRACE": "20", "JOBS": "1", "ONLY": "unsupervised / MUTAG / autogcl",
           "UNIT_SECONDS": "5", "PYTHON": sys.executable, "WHEELS": "0", "WINDOW": str(tmp_path / "window")}
    script = str(ROOT / "scripts" / "gpu" / "gpu_window.sh")
    done = subprocess.run(["bash", script, "run"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    log = (out / "window.log").read_text()
    assert "plan: unsupervised / MUTAG / autogcl seed 0" in log
    assert "start unsupervised / MUTAG / autogcl seed 0" in log
    assert "stopped at the budget" in log or "done: unsupervised / MUTAG / autogcl seed 0" in log
    with tarfile.open(out / "window.tar.gz") as tar:
        names = tar.getnames()
    units = [n for n in names if n.endswith("result.json")]
    assert all(n.startswith("docs/results/units/unsupervised/MUTAG-autogcl/seed") for n in units)
    assert all((root / n).is_file() for n in units)  # published in the repository as well
    assert "runs/reproduce/logs/001.log" in names

    # the same call again, with no time: it plans what is left and starts nothing; the stopped
    # unit's folder (and checkpoint, if it wrote one) stays for a later window
    env["BUDGET"] = "0"
    again = subprocess.run(["bash", script, "run"], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    log = (out / "window.log").read_text()
    assert "start " not in log and ("not started" in log or "every listed cell is done" in log)


def test_gpu_checks_prepares_what_the_device_call_reads(data_root, tmp_path):
    """scripts/gpu/gpu_checks.sh prepare writes the folder a lent GPU's call carries: the baseline's
    code, a small corpus (the header and CORPUS_LINES molecules), a featurised chunk that the
    benchmark reads, and the window's data (gpu_window.sh prepare); run without OUT refuses."""
    import gzip
    import json
    import os
    import subprocess
    import sys

    lacking = [d for d in ("TU/MUTAG", "TU/PROTEINS", "TU/NCI1", "moleculenet", "pretrain/moses_train.csv.gz")
               if not (data_root / d).exists()]
    if lacking:  # a data root that lacks what prepare copies
        pytest.skip(f"the data root lacks {', '.join(lacking)}, which prepare copies")
    gpu = tmp_path / "gpu"
    # PACK_SETS empty: packing COLLAB reads its 59 MB (tests/test_scripts.py tests tu_pack.py and
    # the run stage's unpacking on a hand-built set)
    env = {**os.environ, "GPU_DIR": str(gpu), "BASE": "HEAD", "CHUNK": "50", "CORPUS_LINES": "100", "WHEELS": "0",
           "PACK_SETS": "", "TU_SETS": "MUTAG",  # a small set, which a GPU call's data root holds too
           "SOURCE_DATA": str(data_root), "PYTHON": sys.executable, "AUTOGCL_CACHE": str(tmp_path / "cache")}
    env.pop("OUT", None)
    script = str(ROOT / "scripts" / "gpu" / "gpu_checks.sh")
    done = subprocess.run(["bash", script, "prepare"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (gpu / "base" / "autogcl" / "__init__.py").is_file()
    with gzip.open(gpu / "window" / "data" / "pretrain" / "moses_train.csv.gz", "rt") as f:
        lines = f.read().splitlines()
    assert lines[0] == "SMILES" and len(lines) == 101
    assert (gpu / "window" / "data" / "moleculenet").is_dir()
    assert (gpu / "window" / "data" / "TU" / "MUTAG" / "raw").is_dir()  # TU_SETS, copied as they are
    assert not (gpu / "window" / "packed").exists()  # PACK_SETS empty
    assert not list((gpu / "window" / "data" / "moleculenet").glob("muv.*"))  # never fits a window: left out
    for name in ("MUTAG", "PROTEINS", "NCI1"):  # what the suite stage's tests read, carried by its own call
        assert (gpu / "suite" / "data" / "TU" / name / "raw").is_dir()
    # that call's folder is whole (a fresh machine too): the corpus and MoleculeNet, without
    # ToxCast and MNIST, which would take it over 64 MiB
    assert (gpu / "suite" / "data" / "pretrain" / "moses_train.csv.gz").is_file()
    assert (gpu / "suite" / "data" / "moleculenet" / "bbbp.csv").is_file()
    assert not list((gpu / "suite" / "data" / "moleculenet").glob("toxcast*"))
    assert not (gpu / "suite" / "data" / "MNIST").exists()
    assert "the run call carries" in done.stdout and "64 MiB" in done.stdout
    again = subprocess.run(["bash", script, "prepare"], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]  # over its own copies
    from tests.test_benchmarks import _script

    chunk = _script("engine")._chunk({"chunk_file": str(gpu / "chunk10k.pt.gz")})
    assert 40 <= len(chunk) <= 50 and chunk[0].x.shape[1] == 2  # the first 50 MOSES molecules that parse
    refused = subprocess.run(["bash", script, "run"], env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "set OUT" in refused.stderr
    env.pop("AUTOGCL_COMMIT", None)
    refused = subprocess.run(["bash", script, "run"], env={**env, "OUT": str(tmp_path / "out")}, capture_output=True,
                             text=True, timeout=60)  # the units it publishes must name their commit
    assert refused.returncode != 0 and "set AUTOGCL_COMMIT" in refused.stderr
    # the suite stage, on a few tests, reading the prepared data: its record comes back under OUT
    suite = subprocess.run(["bash", script, "suite"], capture_output=True, text=True, timeout=300,
                           env={**env, "OUT": str(tmp_path / "out"), "AUTOGCL_COMMIT": "abc123", "WORKERS": "1",
                                "SUITE_TESTS": f"{ROOT / 'tests' / 'data' / 'test_tu.py'} "  # TU and a molecule set, read there
                                               f"{ROOT / 'tests' / 'data' / 'test_moleculenet.py'}::test_bbbp_from_the_mirror",
                                "TAG": "cpu"})
    assert suite.returncode == 0, suite.stdout[-2000:] + suite.stderr[-2000:]
    record = json.loads((tmp_path / "out" / "suite" / "cpu-suite.json").read_text())
    assert record["passed"] > 0 and record["failed"] == record["errors"] == record["skipped"] == 0
    assert record["commit"] == "abc123" and "cut" not in record


def test_ray_gpu_calls_the_sweeps_equal_only_when_every_unit_is(tmp_path):
    """scripts/gpu/ray_gpu.py compares the serial and the Ray sweep unit by unit: any difference
    in any evaluation, or a unit missing from either, makes them unequal; the ray stage of
    gpu_checks.sh refuses to start without the packed Ray."""
    import os
    import subprocess

    rg = load_script("gpu/ray_gpu")

    def unit(acc):
        return {"evaluations": {"3": {"folds": [{"C": 1.0, "val_acc": acc, "test_acc": acc}]}},
                "selections": {"val": {"acc": acc, "epoch": 3}}, "device": "cuda:0", "threads": 1}

    serial = {"seed0": unit(0.9), "seed1": unit(0.8)}
    same = rg.compare(serial, {"seed0": unit(0.9), "seed1": unit(0.8)})
    assert same["equal"] and [r["ray_val_acc"] for r in same["rows"]] == [0.9, 0.8]
    differ = rg.compare(serial, {"seed0": unit(0.9), "seed1": unit(0.8 + 1e-12)})
    assert not differ["equal"] and [r["equal"] for r in differ["rows"]] == [True, False]
    assert not rg.compare(serial, {"seed0": unit(0.9)})["equal"]  # a unit the Ray sweep lacks
    assert not rg.compare({}, {})["equal"]  # nothing ran: nothing shown equal
    env = {**os.environ, "GPU_DIR": str(tmp_path / "gpu"), "OUT": str(tmp_path / "out"), "AUTOGCL_COMMIT": "abc123"}
    refused = subprocess.run(["bash", str(ROOT / "scripts" / "gpu" / "gpu_checks.sh"), "ray"], env=env,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "ray.tar.xz: run prepare here" in refused.stderr


def test_gpu_pretrain_goes_on_in_the_next_call_from_the_step_it_stopped_at(data_root, tmp_path):
    """scripts/gpu/gpu_pretrain.sh on the CPU, one thread: a call whose run is stopped by SIGTERM (the
    call's deadline) inside a chunk returns the encoder of its last finished epoch, if any; the
    next call (the machine still warm: the same run folder) goes on from that step and ends with
    the encoder of one unbroken run of the call's command, bit for bit; unpack copies a call's
    files out."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    import torch

    if not (data_root / "pretrain" / "moses_train.csv.gz").is_file():
        pytest.skip("the data root lacks pretrain/moses_train.csv.gz")
    script = str(ROOT / "scripts" / "gpu" / "gpu_pretrain.sh")
    # the full-size encoder on 400 molecules in chunks of 100: seconds of training, time to stop it in one
    env = {**os.environ, "SOURCE_DATA": str(data_root), "CORPUS_LINES": "400", "EPOCHS": "2", "DEVICE": "cpu",
           "WORKERS": "1", "OMP_NUM_THREADS": "1", "AUTOGCL_COMMIT": "abc123", "NAME": "tiny", "WHEELS": "0",
           "PYTHON": sys.executable, "GPU_DIR": str(tmp_path / "gpu"), "CORPUS_FILE": str(tmp_path / "c" / "m.csv"),
           "AUTOGCL_CACHE": str(tmp_path / "cache"), "PRETRAIN_ARGS": "--batch-size 16 --chunk-size 100"}

    def stage(*args, **more):
        return subprocess.run(["bash", script, *args], env={**env, **more}, capture_output=True, text=True,
                              timeout=300)

    done = stage("prepare")
    assert done.returncode == 0 and "64 MiB a call" in done.stdout, done.stderr[-2000:]

    # the call whose deadline comes in the middle: SIGTERM to its training process once a chunk is done
    runs = tmp_path / "runs"
    ckpt = runs / ".tiny.partial" / "checkpoint.pt"
    call = subprocess.Popen(["bash", script, "run"], env={**env, "OUT": str(tmp_path / "out-a"), "RUNS": str(runs)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0, stopped = time.time(), False
    while call.poll() is None and time.time() - t0 < 240 and not stopped:
        try:
            if torch.load(ckpt, weights_only=True)["pos"] >= 1:
                for d in Path("/proc").iterdir():
                    try:
                        cmd = (d / "cmdline").read_bytes().split(b"\0") if d.name.isdigit() else []
                    except OSError:
                        continue
                    if b"autogcl" in cmd and str(runs).encode() in b" ".join(cmd):
                        os.kill(int(d.name), signal.SIGTERM)
                        stopped = True
        except (FileNotFoundError, RuntimeError, EOFError, KeyError):
            pass
        time.sleep(0.02)
    out, err = call.communicate(timeout=120)
    assert stopped and call.returncode == 0, out[-2000:] + err[-2000:]
    assert "exited 143" in out and "stopped" in out and not (tmp_path / "out-a" / "result.json").exists()

    done = stage("run", OUT=str(tmp_path / "out-b"), RUNS=str(runs))
    assert done.returncode == 0 and "finished" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert "resuming at epoch" in (tmp_path / "out-b" / "pretrain.log").read_text()
    again = torch.load(tmp_path / "out-b" / "encoder.pt", weights_only=True)["state_dict"]
    # the unbroken run: the call's command on the corpus it unpacked, in this process (one thread,
    # autogcl_here), no interpreter start; the same configuration as the call's run
    from tests.faults.common import autogcl_here

    made = autogcl_here(["transfer", "pretrain", "--corpus", env["CORPUS_FILE"], "--epochs", env["EPOCHS"], "--device",
                         env["DEVICE"], "--workers", env["WORKERS"], "--out", tmp_path / "ref", "--no-progress",
                         *env["PRETRAIN_ARGS"].split()], tmp_path)
    assert made.returncode == 0, made.stderr[-2000:]
    config = [json.loads((d / "result.json").read_text())["config"] for d in (tmp_path / "ref", tmp_path / "out-b")]
    assert config[0] == config[1], "the unbroken run is not the call's command (scripts/gpu/gpu_pretrain.sh)"
    ref = torch.load(tmp_path / "ref" / "encoder.pt", weights_only=True)["state_dict"]
    # one thread, the same operations, the checkpoint of the stopped step replayed: bit-exact
    assert ref.keys() == again.keys() and all(torch.equal(ref[k], again[k]) for k in ref)

    done = stage("unpack", str(tmp_path / "out-b"), RUNS=str(tmp_path / "kept"))
    assert done.returncode == 0 and (tmp_path / "kept" / "pretrain" / "tiny" / "result.json").is_file()
    refused = stage("run", OUT=str(tmp_path / "out-c"), GPU_DIR=str(tmp_path / "none"))
    assert refused.returncode == 1 and "run prepare here" in refused.stderr


def test_suite_record_counts_every_outcome_and_names_failures(tmp_path):
    """scripts/suite/suite_record.py runs pytest with a JUnit report and keeps, per outcome, the count,
    and every failure, error and skip by test id with its message, and its slowest tests with their
    seconds; the block of docs/reliability.md shows the counts and names the failed tests."""
    import json
    import os
    import subprocess
    import sys

    tests = tmp_path / "t"
    tests.mkdir()
    (tests / "test_mixed.py").write_text(
        "import time\nimport pytest\n"
        "def test_ok():\n    time.sleep(0.5)\n    assert 1 + 1 == 2\n"
        "def test_bad():\n    assert 0.1 + 0.2 == 0.3, 'bits differ'\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('no fixture')\n"
        "def test_error(broken):\n    pass\n"
        "def test_skip():\n    pytest.skip('no GPU here')\n"
        "def test_env():\n    import os\n    assert os.environ['SUITE_PROBE'] == 'set'\n")
    out = tmp_path / "records"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "suite" / "suite_record.py"), "--tag", "probe", "--out",
                           str(out), "--env", "SUITE_PROBE=set", "--", str(tests), "-p", "no:cacheprovider"],
                          capture_output=True, text=True, timeout=240, env={**os.environ, "AUTOGCL_COMMIT": "abc123"})
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]  # pytest's exit status: tests failed
    d = json.loads((out / "probe.json").read_text())
    assert (d["passed"], d["failed"], d["errors"], d["skipped"]) == (2, 1, 1, 1)
    assert d["env"] == {"SUITE_PROBE": "set"} and d["commit"] == "abc123" and d["exit_code"] == 1
    assert {f["test"].split("::")[-1]: f["kind"] for f in d["failures"]} == {"test_bad": "failure", "test_error": "error"}
    assert "bits differ" in next(f["message"] for f in d["failures"] if f["test"].endswith("test_bad"))
    assert [s["reason"] for s in d["skips"]] == ["no GPU here"] and "cut" not in d
    assert not list(out.glob(".*junit*"))  # the JUnit file is read, then removed
    # every test (fewer than SLOWEST) named with its seconds, slowest first: test_ok sleeps 0.5 s
    assert sorted(s["test"].split("::")[-1] for s in d["slowest"]) == ["test_bad", "test_env", "test_error",
                                                                        "test_ok", "test_skip"]
    assert d["slowest"][0]["test"].endswith("test_ok") and d["slowest"][0]["s"] >= 0.5
    assert [s["s"] for s in d["slowest"]] == sorted((s["s"] for s in d["slowest"]), reverse=True)
    import torch

    # the capability ATen dispatches to: this process's under the same ATEN_CPU_CAPABILITY, a probe under another
    assert d["machine"]["aten_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert load_script("suite/suite_record").capability({**os.environ, "ATEN_CPU_CAPABILITY": "default"}) == "DEFAULT"

    sys.path.insert(0, str(ROOT / "scripts" / "docs"))  # docsgen
    from docsgen.tables import SUITE, suite_block

    assert suite_block(tmp_path).startswith("not run")
    (tmp_path / SUITE).mkdir(parents=True)
    (tmp_path / SUITE / "probe.json").write_text(json.dumps(d))
    block = suite_block(tmp_path)
    assert "| 2 | 1 | 1 | 1 | 1 |" in block and "`SUITE_PROBE=set`" in block
    assert "test_bad` (failure): " in block and "test_error` (error)" in block
    # the slowest tests of the newest record, slowest first
    older = {**d, "date": "2000-01-01 00:00 UTC", "slowest": [{"test": "tests.old::test_old", "s": 99.0}]}
    (tmp_path / SUITE / "older.json").write_text(json.dumps(older))
    listed = suite_block(tmp_path).split("slowest tests of the newest record (`probe.json`")[1].splitlines()[1:]
    assert [line.split("::")[-1].split("`")[0] for line in listed] == [s["test"].split("::")[-1] for s in d["slowest"]]
    assert listed[0].endswith(f": {d['slowest'][0]['s']:.1f} s") and "test_old" not in suite_block(tmp_path)


def test_suite_record_marks_a_stopped_run_as_cut(tmp_path):
    """A suite stopped at its time limit (a bounded device call) is recorded as cut, with the
    counts of the tests that ran, never as a pass."""
    import json
    import signal
    import subprocess
    import sys
    import time

    tests = tmp_path / "t"
    tests.mkdir()
    (tests / "test_slow.py").write_text("import time\ndef test_a():\n    pass\ndef test_b():\n    time.sleep(300)\n")
    t0 = time.monotonic()
    # started with SIGINT ignored, as in an xdist worker: the record still stops pytest by SIGINT
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "suite" / "suite_record.py"), "--tag", "cut", "--out",
                           str(tmp_path / "r"), "--timeout-s", "6", "--", str(tests), "-p", "no:cacheprovider"],
                          capture_output=True, text=True, timeout=200,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert time.monotonic() - t0 < 150  # stopped, not waited for
    d = json.loads((tmp_path / "r" / "cut.json").read_text())
    assert "SIGINT after 6 s" in d["cut"] and d["exit_code"] != 0 and done.returncode != 0
    # test_a finished and counts; test_b, stopped, is neither a pass nor a failure
    assert (d["passed"], d["failed"], d["errors"], d["skipped"]) == (1, 0, 0, 0), d


def test_suite_record_keeps_the_outcomes_of_a_run_that_hangs_as_it_exits(tmp_path):
    """A suite whose tests all ran but whose session then hangs (on a lent H100 the xdist workers
    hung in joblib's exit handler, so pytest wrote no JUnit file) is recorded as cut, with every
    test's outcome from the per-test log (scripts/suite/suite_outcomes.py), failures and skips named."""
    import json
    import subprocess
    import sys

    tests = tmp_path / "t"
    tests.mkdir()
    (tests / "conftest.py").write_text(
        "import time\nimport pytest\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_sessionfinish(session, exitstatus):\n    time.sleep(300)  # hangs before the JUnit file\n")
    (tests / "test_x.py").write_text(
        "import pytest\n"
        "def test_ok():\n    pass\n"
        "def test_bad():\n    assert 1 == 2, 'one is not two'\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('no fixture')\n"
        "def test_error(broken):\n    pass\n"
        "def test_skip():\n    pytest.skip('no GPU here')\n")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "suite" / "suite_record.py"), "--tag", "hang", "--out",
                           str(tmp_path / "r"), "--timeout-s", "8", "--", str(tests), "-p", "no:cacheprovider"],
                          capture_output=True, text=True, timeout=200)
    assert done.returncode != 0
    d = json.loads((tmp_path / "r" / "hang.json").read_text())
    assert (d["passed"], d["failed"], d["errors"], d["skipped"]) == (1, 1, 1, 1), d
    assert "SIGINT after 8 s" in d["cut"] and "per-test log" in d["counts_from"]
    assert {f["test"].split("::")[-1]: f["kind"] for f in d["failures"]} == {"test_bad": "failure", "test_error": "error"}
    assert "one is not two" in next(f["message"] for f in d["failures"] if f["kind"] == "failure")
    # the test id is relative to pytest's root folder, which depends on where the checkout lies
    assert [(s["test"].rsplit("/", 1)[-1], s["reason"]) for s in d["skips"]] == [("test_x.py::test_skip", "no GPU here")]
    assert not list((tmp_path / "r").glob(".*"))  # neither the JUnit file nor the per-test log stays
    assert sorted(s["test"].rsplit("::", 1)[-1] for s in d["slowest"]) == ["test_bad", "test_error", "test_ok",
                                                                           "test_skip"]


def test_suite_record_reads_the_outcomes_log_as_junit_does(tmp_path):
    """A test counts once: a failed call stays a failure when its teardown errs too, a passed call
    whose teardown errs is an error, a setup skip is a skip; a line cut while written is left out."""
    import json

    sr = load_script("suite/suite_record")
    rows = [{"test": "a", "when": "call", "outcome": "passed", "s": 0.5},
            {"test": "b", "when": "call", "outcome": "failed", "message": "boom", "s": 2.0},
            {"test": "b", "when": "teardown", "outcome": "failed", "message": "later", "s": 0.25},
            {"test": "c", "when": "call", "outcome": "passed"},
            {"test": "c", "when": "teardown", "outcome": "failed", "message": "leak"},
            {"test": "d", "when": "setup", "outcome": "skipped", "message": "no data"}]
    log = tmp_path / "o.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"test": "e", "wh')
    d = sr.read_outcomes(log)
    assert (d["passed"], d["failed"], d["errors"], d["skipped"]) == (1, 1, 1, 1)
    assert d["failures"] == [{"test": "b", "kind": "failure", "message": "boom"},
                             {"test": "c", "kind": "error", "message": "leak"}]
    assert d["skips"] == [{"test": "d", "reason": "no data"}]
    assert sr.slowest(d["seconds"], 2) == [{"test": "b", "s": 2.25}, {"test": "a", "s": 0.5}]  # b's phases summed


def test_suite_record_amends_a_cut_record_from_the_progress_characters(tmp_path):
    """The last resort for a run that left no per-test report: the counts of pytest -q's progress
    lines, said to come from them; a record that has counts is left as it is."""
    import json

    sr = load_script("suite/suite_record")
    log = tmp_path / "suite.log"
    log.write_text("bringing up nodes...\n\n" + "." * 70 + "s. [ 50%]\n" + "..F.E.sx.X" + " " * 6
                   + "[100%]Exception ignored in: <module 'threading'>\n  ...\nTraceback (most recent call last):\n")
    record = tmp_path / "h100.json"
    record.write_text(json.dumps({"tag": "h100", "passed": None, "cut": "stopped by SIGINT after 270 s"}))
    d = sr.amend(record, log)
    assert (d["passed"], d["failed"], d["errors"], d["skipped"]) == (71 + 6, 1, 1, 3)
    assert "progress characters in suite.log" in d["counts_from"]
    assert json.loads(record.read_text()) == d
    assert sr.amend(record, tmp_path / "missing.log") == d  # counted already: the log is not read


def _tu(folder, name, graphs, labels):
    """Raw TU files of ``graphs`` (lists of 0-based local edges, both directions) in ``folder``/raw."""
    raw = folder / "raw"
    raw.mkdir(parents=True)
    rows, ind, first = [], [], 0
    for g, (n, edges) in enumerate(graphs):
        ind += [g + 1] * n
        rows += sorted((first + a + 1, first + b + 1) for a, b in edges)
        first += n
    (raw / f"{name}_A.txt").write_text("".join(f"{a}, {b}\n" for a, b in rows))
    (raw / f"{name}_graph_indicator.txt").write_text("".join(f"{i}\n" for i in ind))
    (raw / f"{name}_graph_labels.txt").write_text("".join(f"{y}\n" for y in labels))
    return raw


def test_tu_pack_gives_the_edge_file_back_byte_for_byte(tmp_path):
    """scripts/gpu/tu_pack.py: a graph with a self-loop, one with an isolated node and a node id of
    several digits, one with no edge; unpacking writes the same text and copies the other files,
    and the dataset it gives reads as the original does."""
    from autogcl.data.tu import read_tu_raw

    tp = load_script("gpu/tu_pack")
    tri = [(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (2, 0), (1, 1)]
    big = [(0, 11), (11, 0), (3, 11), (11, 3), (5, 6), (6, 5)]
    raw = _tu(tmp_path / "src" / "TOY", "TOY", [(3, tri), (12, big), (2, [])], [0, 1, 0])
    info = tp.pack(tmp_path / "src" / "TOY", tmp_path / "pk" / "TOY")
    assert info["edges"] == 13 and info["graphs"] == 3
    assert sorted(p.name for p in (tmp_path / "pk" / "TOY").iterdir()) == [
        "TOY_A.npz", "TOY_graph_indicator.txt", "TOY_graph_labels.txt"]
    out = tp.unpack(tmp_path / "pk" / "TOY", tmp_path / "dst" / "TOY")
    assert out.read_bytes() == (raw / "TOY_A.txt").read_bytes()
    for name in ("TOY_graph_indicator.txt", "TOY_graph_labels.txt"):
        assert (tmp_path / "dst" / "TOY" / "raw" / name).read_bytes() == (raw / name).read_bytes()
    a, b = read_tu_raw(raw, "TOY"), read_tu_raw(tmp_path / "dst" / "TOY" / "raw", "TOY")
    assert np.array_equal(a.edge_index, b.edge_index) and np.array_equal(a.graph_indicator, b.graph_indicator)


def test_tu_pack_refuses_what_it_could_not_give_back(tmp_path):
    """Rows out of order, an edge without its reverse, and a damaged pack each get a clear error
    naming the file and line or the digest; a failed unpack leaves no edge file."""
    from autogcl.errors import DataError

    tp = load_script("gpu/tu_pack")
    raw = _tu(tmp_path / "s1" / "T", "T", [(3, [(0, 1), (1, 0), (1, 2), (2, 1)])], [0])
    text = (raw / "T_A.txt").read_text().splitlines()
    (raw / "T_A.txt").write_text("\n".join([text[1], text[0]] + text[2:]) + "\n")
    with pytest.raises(DataError, match=r"T_A\.txt:2: edges are not sorted"):
        tp.pack(tmp_path / "s1" / "T", tmp_path / "p1" / "T")
    _tu(tmp_path / "s2" / "T", "T", [(3, [(0, 1), (1, 0), (1, 2)])], [0])
    with pytest.raises(DataError, match=r"edge 2, 3 has no reverse 3, 2"):
        tp.pack(tmp_path / "s2" / "T", tmp_path / "p2" / "T")
    raw = _tu(tmp_path / "s5" / "T", "T", [(2, [(0, 1), (1, 0)]), (2, [])], [0, 1])
    (raw / "T_A.txt").write_text("1, 3\n")  # the reader's own check, named by file and line
    with pytest.raises(DataError, match=r"T_A\.txt:1: edge joins graphs 1 and 2"):
        tp.pack(tmp_path / "s5" / "T", tmp_path / "p5" / "T")
    _tu(tmp_path / "s3" / "T", "T", [(3, [(0, 1), (1, 0)])], [0])
    tp.pack(tmp_path / "s3" / "T", tmp_path / "p3" / "T")
    z = dict(np.load(tmp_path / "p3" / "T" / "T_A.npz"))
    z["sha256"] = np.array("0" * 64)
    np.savez_compressed(tmp_path / "p3" / "T" / "T_A.npz", **z)
    with pytest.raises(DataError, match="differs from the packed one"):
        tp.unpack(tmp_path / "p3" / "T", tmp_path / "d3" / "T")
    assert not list((tmp_path / "d3" / "T" / "raw").glob("*_A.txt*")) and not list(
        (tmp_path / "d3" / "T" / "raw").glob(".*"))
    assert tp.main(["pack", str(tmp_path / "s2" / "T"), str(tmp_path / "p4" / "T")]) == 1


def test_gpu_window_packs_every_file_of_a_folder_published_in_the_window(tmp_path):
    """A unit that finished before the window (a window stopped by a signal) is published in the
    next one with its files' own times; the archive holds all of it, not only the files written
    since the window started (its provenance), and nothing of the folders the window left alone."""
    import os
    import subprocess
    import tarfile

    root, out = tmp_path / "root", tmp_path / "out"
    out.mkdir()
    old, new = root / "docs/results/units/x/seed0", root / "docs/results/units/x/seed1"
    untouched = root / "docs/results/units/x/seed2"
    for d in (old, new, untouched):
        d.mkdir(parents=True)
        (d / "result.json").write_text("{}")
        (d / "metrics.csv").write_text("epoch\n")
    logs = root / "runs/reproduce/logs"
    logs.mkdir(parents=True)
    (logs / "001.log").write_text("log")
    for f in [*old.iterdir(), *untouched.iterdir()]:
        os.utime(f, (1_000_000, 1_000_000))  # finished long before the window
    stamp = root / "runs/reproduce/.window-start"
    stamp.write_text("")
    os.utime(stamp, (2_000_000, 2_000_000))
    (old / "provenance.json").write_text("{}")  # what publishing writes now
    env = {**os.environ, "ROOT": str(root), "OUT": str(out), "STAMP": str(stamp)}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu" / "gpu_window.sh"), "pack"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    with tarfile.open(out / "window.tar.gz") as tar:
        names = sorted(tar.getnames())
    assert names == sorted([f"docs/results/units/x/seed0/{n}" for n in ("metrics.csv", "provenance.json", "result.json")]
                           + [f"docs/results/units/x/seed1/{n}" for n in ("metrics.csv", "result.json")]
                           + ["runs/reproduce/logs/001.log"])


def test_gpu_window_unpacks_a_packed_set_and_runs_its_rows(tmp_path):
    """gpu_window.sh run with a set packed by tu_pack.py (here a hand-built COLLAB): it writes the
    set's text into the data folder, checked, and plans COLLAB's semi and unsupervised rows, not
    the transfer cells (no RDKit wheel travelled); no time, so nothing starts."""
    import os
    import subprocess
    import sys

    tp = load_script("gpu/tu_pack")
    src = tmp_path / "src" / "COLLAB"
    raw = _tu(src, "COLLAB", [(3, [(0, 1), (1, 0), (1, 2), (2, 1)]), (2, [(0, 1), (1, 0)])], [0, 1])
    window = tmp_path / "window"
    tp.pack(src, window / "packed" / "COLLAB")
    root, out, data = tmp_path / "root", tmp_path / "out", tmp_path / "data"
    root.mkdir()
    data.mkdir()
    env = {**os.environ, "OUT": str(out), "ROOT": str(root), "DATA": str(data), "WINDOW": str(window),
           "DEVICE": "cpu", "BUDGET": "0", "PYTHON": sys.executable}
    env.pop("ONLY", None)
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu" / "gpu_window.sh"), "run"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (data / "TU" / "COLLAB" / "raw" / "COLLAB_A.txt").read_bytes() == (raw / "COLLAB_A.txt").read_bytes()
    log = (out / "window.log").read_text()
    assert "plan: semi / COLLAB / joint" in log and "plan: unsupervised / COLLAB / graphcl" in log
    assert "transfer /" not in log and "REDDIT-BINARY" not in log and "start " not in log


def test_setup_gives_uv_pips_index_settings_each_once():
    """scripts/uv_options.py turns ``pip config list`` (pip.conf and PIP_* variables) into uv's
    options: every index, link folder and constraint file, a value of several items split, each
    (option, item) once whichever section named it, and every other setting left out."""
    uo = load_script("uv_options")
    listing = "\n".join([
        ":env:.find-links='/opt/wheels'",
        ":env:.default-timeout='180'",
        "global.cert='/etc/ssl/certs/ca-certificates.crt'",
        "global.constraint='/etc/xdg/pip/constraints.txt'",
        "global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'",
        "global.find-links='/opt/wheels'",
        "install.index-url='https://mirror.example/simple'",
    ])
    assert uo.uv_options(listing) == [
        "--find-links", "/opt/wheels", "--constraint", "/etc/xdg/pip/constraints.txt",
        "--extra-index-url", "file:///opt/pypi/simple", "--extra-index-url", "file:///opt/pypi-more/simple",
        "--index-url", "https://mirror.example/simple"]
    assert uo.uv_options("") == [] and uo.uv_options("global.timeout='60'") == []
