"""kill -9 in the middle of every protocol, then --resume: nothing finished is lost and the
results are those of an uninterrupted run (same thread count). Each protocol's command runs
in a subprocess that is killed with SIGKILL once it has written its first checkpoint; the
unbroken runs and the resumes run in this process, by the command line's main. The
unsupervised command and molecule pre-training are also stopped by SIGTERM (how SLURM and
Kubernetes preempt a job) and continued by the resume command they print: against the same
unbroken run, made once."""

import csv
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.common import ENV  # read as each child starts: the test's environment, its hidden GPU too
from tests.faults.common import autogcl_here, untimed


def cli(args, cwd):
    """The unbroken runs and the resumes, which no signal reaches, run in this process
    (``autogcl_here``, on one thread as the children): only the runs that are killed or stopped
    need a process of their own."""
    return autogcl_here(args, cwd)


def kill_after(args, cwd, marker: str, root: Path, timeout: float = 300.0) -> bool:
    """Start the command, SIGKILL it as soon as a file matching ``marker`` exists below
    ``root``; whether it was killed before it finished."""
    proc = subprocess.Popen([sys.executable, "-m", "autogcl", *map(str, args)], cwd=cwd, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.time()
    try:
        while proc.poll() is None and time.time() - t0 < timeout:
            if any(root.glob(marker)):
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return True
            time.sleep(0.05)
        return False
    finally:
        if proc.poll() is None:
            proc.kill()


def rows(path: Path) -> list[dict]:
    with open(path) as f:
        return [{k: v for k, v in r.items() if not k.endswith("time_s") and "rss" not in k and "per_s" not in k}
                for r in csv.DictReader(f)]


def check(args, tmp_path, marker, unit_glob, data_root):
    ref_out, cut_out = tmp_path / "ref", tmp_path / "cut"
    done = cli(args + ["--out", ref_out], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    killed = kill_after(args + ["--out", cut_out], tmp_path, marker, cut_out)
    assert killed, "the run finished before a checkpoint was seen: nothing was interrupted"
    resumed = cli(args + ["--out", cut_out, "--resume"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    ref_units = sorted(ref_out.glob(unit_glob))
    cut_units = sorted(cut_out.glob(unit_glob))
    assert ref_units and [u.relative_to(ref_out) for u in ref_units] == [u.relative_to(cut_out) for u in cut_units]
    for a, b in zip(ref_units, cut_units):  # exact: one thread (ENV) each, the resumed run replays the unbroken one
        assert rows(a / "metrics.csv") == rows(b / "metrics.csv")
        ra, rb = (json.loads((u / "result.json").read_text()) for u in (a, b))
        assert ra.get("selections") == rb.get("selections")
        assert not list(b.parent.glob(f".{b.name}.partial"))


def test_unsupervised_killed_or_stopped_by_sigterm_mid_training(data_root, tmp_path):
    """kill -9 then --resume; and SIGTERM, whose printed resume command continues the run: both
    end with the unbroken run's numbers (``ref``, which ``check`` makes)."""
    args = ["unsupervised", "--dataset", "MUTAG", "--epochs", "4", "--eval-epochs", "2,4", "--seeds", "1",
            "--jobs", "1", "--data-root", data_root, "--no-progress"]
    check(args, tmp_path, "*/.seed0.partial/checkpoint.pt", "MUTAG-autogcl/seed*", data_root)

    out = tmp_path / "term"
    proc = subprocess.Popen([sys.executable, "-m", "autogcl", *map(str, args), "--out", str(out)], cwd=tmp_path,
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ckpt = out / "MUTAG-autogcl" / ".seed0.partial" / "checkpoint.pt"
        t0 = time.time()
        while proc.poll() is None and not ckpt.is_file() and time.time() - t0 < 300:
            time.sleep(0.01)
        assert proc.poll() is None, "the run ended before its first checkpoint"
        proc.send_signal(signal.SIGTERM)  # after epoch 2's checkpoint: in epoch 3
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err[-2000:]
    m = re.search(r"autogcl: stopped by SIGTERM after epoch (\d+); resume with: (autogcl .*)\n"
                  r"autogcl: \(MUTAG-autogcl seed 0; checkpoint (\S+)\)", err)
    assert m, err[-2000:]
    assert int(m[1]) >= 2 and os.path.samefile(m[3], ckpt)
    import torch

    assert torch.load(ckpt, weights_only=True)["epoch"] == int(m[1])
    command = shlex.split(m[2])
    assert command[-1] == "--resume"
    done = cli(command[1:], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    a, b = (tmp_path / d / "MUTAG-autogcl" / "seed0" for d in ("ref", "term"))

    def read(u):
        with open(u / "metrics.csv") as f:
            return untimed(list(csv.DictReader(f)))
    assert read(a) == read(b)
    assert json.loads((a / "result.json").read_text())["selections"] == \
        json.loads((b / "result.json").read_text())["selections"]


def test_semi_fold_killed_in_pretraining(data_root, tmp_path):
    args = ["semi", "--dataset", "MUTAG", "--row", "naive", "--epochs", "3", "--pretrain-epochs", "4",
            "--fold-limit", "2", "--data-root", data_root, "--no-progress"]
    check(args, tmp_path, "*/seed0/.fold0.partial/checkpoint-pretrain.pt", "MUTAG-naive/seed0/fold*", data_root)


@pytest.fixture
def smiles(data_root, tmp_path):
    lines = (data_root / "moleculenet" / "bbbp.csv").read_text().splitlines()
    path = tmp_path / "mols.csv"
    path.write_text("\n".join(lines[:1] + lines[1:121] + lines[-120:]) + "\n")
    return path


def test_pretraining_killed_between_chunks_or_stopped_by_sigterm(smiles, tmp_path, data_root):
    """Pre-training checkpoints after every chunk: kill -9 after the first, then --resume; and
    SIGTERM in a later chunk, which writes the checkpoint of its last finished step, then the
    printed command: both end with the encoder of the unbroken run."""
    args = ["transfer", "pretrain", "--corpus", smiles, "--smiles-col", "smiles", "--chunk-size", "60",
            "--epochs", "2", "--batch-size", "16", "--workers", "1", "--no-progress"]
    ref, cut = tmp_path / "ref" / "pre", tmp_path / "cut" / "pre"
    assert cli(args + ["--out", ref], cwd=tmp_path).returncode == 0
    assert kill_after(args + ["--out", cut], tmp_path, ".pre.partial/checkpoint.pt", tmp_path / "cut")
    resumed = cli(args + ["--out", cut, "--resume"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert rows(ref / "metrics.csv") == rows(cut / "metrics.csv")
    import torch

    a = torch.load(ref / "encoder.pt", weights_only=True)["state_dict"]
    b = torch.load(cut / "encoder.pt", weights_only=True)["state_dict"]
    # every command on one thread (ENV) and the resumed run replays the unbroken one: bit-exact
    assert all(torch.equal(a[k], b[k]) for k in a)

    out = tmp_path / "term" / "pre"
    ckpt = tmp_path / "term" / ".pre.partial" / "checkpoint.pt"
    proc = subprocess.Popen([sys.executable, "-m", "autogcl", *map(str, args), "--out", str(out)], cwd=tmp_path,
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.time()
        while proc.poll() is None and time.time() - t0 < 300:
            try:
                if torch.load(ckpt, weights_only=True)["pos"] >= 1:  # a chunk has finished
                    break
            except (FileNotFoundError, RuntimeError, EOFError):
                pass
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before its first chunk checkpoint"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err[-2000:]
    m = re.search(r"stopped by SIGTERM after epoch \d+; resume with: (autogcl .*)\n"
                  r"autogcl: \(pretrain autogcl, (?:at|after step \d+ of) chunk \d+ of epoch \d+; checkpoint \S+\)", err)
    assert m, err[-2000:]
    done = cli(shlex.split(m[1])[1:], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    c = torch.load(out / "encoder.pt", weights_only=True)["state_dict"]
    # every command runs with OMP_NUM_THREADS=1 (ENV) and the resumed one replays the unbroken
    # one's operations: bit-exact by construction
    assert a.keys() == c.keys() and all(torch.equal(a[k], c[k]) for k in a)


def test_finetuning_killed_mid_seed(data_root, tmp_path):
    """Fine-tuning checkpoints every 10 epochs: seed 0 of 11 is killed at its epoch-10 checkpoint,
    seed 1 has not started; the resume finishes both. 100 molecules (bbbp's first and last 50)
    whose scaffold split scores both validation and test, so the best-validation state carried
    in the checkpoint is exercised."""
    lines = (data_root / "moleculenet" / "bbbp.csv").read_text().splitlines()
    smiles = tmp_path / "mols.csv"
    smiles.write_text("\n".join(lines[:1] + lines[1:51] + lines[-50:]) + "\n")
    args = ["transfer", "finetune", "--csv", smiles, "--label-cols", "p_np", "--epochs", "11", "--seeds", "2",
            "--workers", "1", "--no-progress"]
    check(args, tmp_path, "no_pretrain/mols/.seed0.partial/checkpoint.pt", "no_pretrain/mols/seed*", data_root)
    for seed in (0, 1):  # each seed scored on both parts (a part with one class has no ROC-AUC)
        assert all(r["val_tasks"] == r["test_tasks"] == "1" for r in rows(tmp_path / "cut" / "no_pretrain" / "mols" /
                                                                          f"seed{seed}" / "metrics.csv"))


def test_views_killed_in_the_joint_phase(data_root, mnist_root, tmp_path, capsys):
    """Killed after the first joint epoch: the resumed run reads both phases' checkpoints."""
    args = ["visualize", "views", "--data-root", data_root, "--limit", "60", "--max-epochs", "3",
            "--target-acc", "1", "--examples", "2", "--no-progress"]
    ref, cut = tmp_path / "ref", tmp_path / "cut"
    done = cli(args + ["--out", ref], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert kill_after(args + ["--out", cut], tmp_path, ".cut.partial/checkpoint.pt", tmp_path)
    assert not cut.exists()  # nothing published before the run finished
    resumed = cli(args + ["--out", cut, "--resume"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    ra, rb = (json.loads((d / "views.json").read_text()) for d in (ref, cut))
    drop = ("wall_s", "time_s")
    assert [{k: v for k, v in r.items() if k not in drop} for r in ra["history"]] == \
        [{k: v for k, v in r.items() if k not in drop} for r in rb["history"]]
    assert ra["kept_shares"] == rb["kept_shares"] and len(ra["history"]) >= 3
    walls = [r["wall_s"] for r in rb["history"]]  # training time over both processes, never restarting
    assert walls == sorted(walls) and rb["wall_s"] == walls[-1]
    assert ra["figures"] == [str(ref / "views.png"), str(ref / "views.svg")]
    import torch

    a, b = (torch.load(d / "model.pt", weights_only=True) for d in (ref, cut))
    assert all(torch.equal(a[m][k], b[m][k]) for m in a for k in a[m])
    assert not list(tmp_path.glob(".cut.partial")) and not list(cut.glob("*.pt.*"))
    # the refusals, by the command line's main in this process (no training, so no second process needed)
    from autogcl.cli import main

    capsys.readouterr()
    assert main(list(map(str, args + ["--out", cut]))) == 2  # a finished run is never overwritten silently
    assert "already holds a finished run" in capsys.readouterr().err
    (cut / "result.json").unlink()  # a folder as an earlier autogcl left it: refused, named
    assert main(list(map(str, args + ["--out", cut, "--resume"]))) == 2
    assert "views run of an earlier autogcl" in capsys.readouterr().err
