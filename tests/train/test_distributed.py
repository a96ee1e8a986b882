"""Data-parallel pre-training (torch.distributed, gloo on this machine's CPUs): one step on 2
processes x B molecules computes the loss and gradients of one process on the 2B molecules;
``torchrun -m autogcl transfer pretrain`` trains and writes the encoder; a run whose process is
killed with SIGKILL resumes with the numbers of an unbroken run. Every process group is made
by the test and torn down by it (bounded waits)."""

from __future__ import annotations

import gc
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from autogcl.paths import child_pythonpath
from tests.conftest import REPO

SMILES = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "C1CCNCC1", "CCN(CC)CC", "O=C(O)c1ccccc1",
          "CC(C)Cc1ccc(C(C)C(=O)O)cc1", "C[C@H](N)C(=O)O"]


def _straight_through_argmax(logits, tau=1.0, hard=True):
    """Gumbel-softmax without the noise: the generators' views depend on their scores only, so
    that a process draws for its molecules what one process draws for them."""
    soft = logits.softmax(-1)
    return F.one_hot(soft.argmax(-1), soft.shape[-1]).to(soft.dtype) + soft - soft.detach()


def _strategy(method="autogcl"):
    """The pre-training strategy of ``method`` at width 8, in float64; GraphCL's augmentation is
    the identity, so that a process draws for its molecules what one process draws for them."""
    from autogcl.api.pretrain import MoleculePretrainer

    torch.manual_seed(0)
    options = {"gen_hidden": 8} if method == "autogcl" else {"aug": "none"}
    strat = MoleculePretrainer(method, dim=8, batch_size=len(SMILES), **options).build_strategy()
    for m in strat.modules().values():
        m.double().train()
    return strat


def _batch(rows):
    from torch_geometric.data import Batch

    from autogcl.data.molecules import smiles_to_graph

    return Batch.from_data_list([smiles_to_graph(SMILES[i]) for i in rows])


def _loss_and_grads(strat, batch, forward):
    for m in strat.modules().values():
        for p in m.parameters():
            p.grad = None
    terms = forward(batch, [1, 2])
    terms["loss"].backward()
    grads = {f"{k}.{n}": (p.grad.clone() if p.grad is not None else torch.zeros_like(p))
             for k, m in strat.modules().items() for n, p in m.named_parameters()}
    return float(terms["loss"]), grads


def _worker(rank, world, init_file, out_file, method, job):
    """One process of a 2-process gloo group: the wrapped strategy of ``method`` does ``job``
    (``_grads_job`` or ``_steps_job``) on its half of the molecules; rank 0 saves what it returns."""
    import autogcl.augment.learnable as learnable
    from autogcl.train import distributed

    learnable.F.gumbel_softmax = _straight_through_argmax
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        ctx = distributed.DistContext(rank, world, rank, torch.device("cpu"), "gloo")
        strat = distributed.wrap(_strategy(method), ctx)  # after the optimizer was built, as pretrain does
        half = len(SMILES) // world
        got = job(strat, ctx, lambda rows: [r for j, r in enumerate(rows) if rank * half <= j < (rank + 1) * half])
        if rank == 0:
            torch.save(got, out_file)
        # Teardown in order: both processes are past every collective, then the DDP wrappers
        # (which hold the group) are freed, so that the group is destroyed here and not by
        # interpreter finalisation, where gloo's threads can abort the process (SIGABRT,
        # "terminate called without an active exception"; seen under a loaded CI machine).
        ctx.barrier()
        del strat, got
    finally:
        gc.collect()
        torch.distributed.destroy_process_group()
        gc.collect()


def _grads_job(strat, ctx, share):
    loss, grads = _loss_and_grads(strat, _batch(share(range(len(SMILES)))), strat.forward_module)
    return {"losses": ctx.all_gather_object(loss), "grads": grads}


def _spawn(tmp_path, *args, world=2, timeout=120):
    ctx = torch.multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(r, world, str(tmp_path / "init"), *args)) for r in range(world)]
    for p in procs:
        p.start()
    try:
        for p in procs:
            p.join(timeout)
            assert p.exitcode == 0, "a distributed worker failed"
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()


def test_two_processes_of_b_compute_one_process_of_2b(tmp_path, monkeypatch, method="autogcl"):
    import autogcl.augment.learnable as learnable

    monkeypatch.setattr(learnable.F, "gumbel_softmax", _straight_through_argmax)
    ref = _strategy(method)
    ref_loss, ref_grads = _loss_and_grads(ref, _batch(range(len(SMILES))), ref.losses)

    out = tmp_path / "dist.pt"
    _spawn(tmp_path, str(out), method, _grads_job)
    got = torch.load(out, weights_only=True)
    # the losses of the two processes average to the one-process loss, and DDP's averaged
    # gradients are the one-process gradients (float64: equal up to rounding)
    assert sum(got["losses"]) / 2 == pytest.approx(ref_loss, rel=1e-10)
    assert got["grads"].keys() == ref_grads.keys()
    moved = 0
    for name, g in ref_grads.items():
        assert torch.allclose(got["grads"][name], g, rtol=1e-7, atol=1e-10), name
        moved += int(g.abs().sum() > 0)
    assert moved > len(ref_grads) // 2, "most parameters must get a gradient for the comparison to mean anything"


STEPS = 3


def _params(strat) -> dict:
    return {f"{k}.{n}": p.detach().clone() for k, m in strat.modules().items() for n, p in m.named_parameters()}


def _train_steps(strat, rows_of_step):
    """``STEPS`` optimizer steps (``strat.step``: the training loop's), step ``i`` on the
    molecules ``rows_of_step(i)``."""
    for i in range(STEPS):
        strat.step(_batch(rows_of_step(i)), 1, i)


def _rows(i):
    """The global batch of step ``i``: every molecule, in a step-dependent order."""
    return [(j + 3 * i) % len(SMILES) for j in range(len(SMILES))]


def _steps_job(strat, ctx, share):
    from autogcl.train.distributed import same_everywhere

    _train_steps(strat, lambda i: share(_rows(i)))
    params = _params(strat)
    return {"params": params, "same": all(same_everywhere(v, ctx) for v in params.values()),
            "buffers": {f"{k}.{n}": b.clone() for k, m in strat.modules().items() for n, b in m.named_buffers()}}


@pytest.mark.parametrize("method", ["autogcl", "graphcl"])
def test_k_steps_on_two_processes_train_every_parameter_as_one_process(tmp_path, monkeypatch, method):
    """Parameter values (not gradients) after STEPS Adam steps: 2 processes of 4 molecules
    against 1 process of the same 8, float64. Every parameter tensor moves, BatchNorm
    included, and ends within 1e-9 of the one-process value; the BatchNorm running statistics
    (updated per view, from the synced statistics) agree too."""
    import autogcl.augment.learnable as learnable

    monkeypatch.setattr(learnable.F, "gumbel_softmax", _straight_through_argmax)
    ref = _strategy(method)
    ref.view_gen = torch.Generator().manual_seed(0)  # wrap()'s view draws (seed 0)
    before = _params(ref)
    _train_steps(ref, _rows)
    after = _params(ref)

    out = tmp_path / "dist.pt"
    _spawn(tmp_path, str(out), method, _steps_job)
    got = torch.load(out, weights_only=True)
    assert got["same"], "the processes hold different weights"
    assert got["params"].keys() == after.keys()
    bn = [k for k in after if ".bns." in k]
    assert bn, "the encoder has BatchNorm layers"
    for name, value in after.items():
        assert not torch.equal(value, before[name]), f"{name} did not move on one process"
        assert not torch.equal(got["params"][name], before[name]), f"{name} did not move on two processes"
        assert torch.allclose(got["params"][name], value, rtol=0, atol=1e-9), name
    ref_buffers = {f"{k}.{n}": b for k, m in ref.modules().items() for n, b in m.named_buffers()}
    for name, value in ref_buffers.items():
        assert torch.allclose(got["buffers"][name].to(value.dtype), value, rtol=0, atol=1e-9), name


def test_the_nccl_module_path_keeps_the_optimizers_parameters_and_takes_segments(tmp_path):
    """What an NCCL run does to the modules, on the CPU: the conversion is the gloo one (no
    torch SyncBatchNorm, whose forward has no ``segments``), in place, with the parameter
    objects the optimizer holds; a plain BatchNorm1d becomes a synced SegmentBatchNorm sharing
    its tensors; the molecule GIN's forward with two segments runs synced (a 1-process group:
    the numbers of the unsynced layer, within 1e-12 in float64)."""
    from torch import nn

    from autogcl.data.batching import pair_batches
    from autogcl.models.norm import SegmentBatchNorm
    from autogcl.train.distributed import DistContext, sync_batchnorm

    strat = _strategy()
    held = {id(p) for g in strat.opt.param_groups for p in g["params"]}
    ctx = DistContext(0, 1, 0, torch.device("cpu"), "nccl")
    plain = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    weight, mean = plain[1].weight, plain[1].running_mean
    sync_batchnorm(plain, ctx)
    assert isinstance(plain[1], SegmentBatchNorm) and plain[1].synced
    assert plain[1].weight is weight and plain[1].running_mean is mean
    batch = _batch(range(4)), _batch(range(4, 8))
    model = strat.modules()["model"]
    expected = model.encoder(pair_batches(*batch))
    for mod in strat.modules().values():
        sync_batchnorm(mod, ctx)
    bns = [m for mod in strat.modules().values() for m in mod.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    assert bns and all(type(m) is SegmentBatchNorm and m.synced for m in bns)
    assert {id(p) for mod in strat.modules().values() for p in mod.parameters()} <= held
    torch.distributed.init_process_group("gloo", init_method=f"file://{tmp_path / 'init'}", rank=0, world_size=1)
    try:
        got = model.encoder(pair_batches(*batch))
    finally:
        torch.distributed.destroy_process_group()
    assert torch.allclose(got, expected, rtol=0, atol=1e-12)


def test_a_batch_that_does_not_split_evenly_is_refused():
    from autogcl.errors import ConfigError
    from autogcl.train.distributed import DistContext, check_batch

    ctx = DistContext(0, 3, 0, torch.device("cpu"), "gloo")
    check_batch(258, ctx)
    with pytest.raises(ConfigError, match="--batch-size 256 is the global batch of 3 processes"):
        check_batch(256, ctx)


# --------------------------------------------------------------------------- torchrun


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, data_root):
    import gzip

    path = tmp_path_factory.mktemp("corpus") / "moses2000.csv"
    with gzip.open(data_root / "pretrain" / "moses_train.csv.gz", "rt") as f:
        lines = [next(f) for _ in range(2001)]
    path.write_text("".join(lines))
    return path


def torchrun(args, env, timeout=300, nproc=2):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc),
           "-m", "autogcl", "transfer", "pretrain", *args]
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def _env(tmp_path):
    return {**os.environ, "OMP_NUM_THREADS": "1", "AUTOGCL_CACHE": str(tmp_path / "cache"),
            "PYTHONPATH": child_pythonpath(REPO)}


def _finish(proc, timeout=300):
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    return proc.returncode, out


def test_torchrun_with_one_process_takes_the_distributed_path(tmp_path, corpus):
    """``torchrun --nproc-per-node 1`` is how one GPU runs the NCCL path (docs/distributed.md):
    it must join a process group of one (here gloo) and not fall back to a plain run, as it did
    on an H100 (no process group, world size read as "not launched")."""
    import json

    out = tmp_path / "O"
    rc, log = _finish(torchrun(["--corpus", str(corpus), "--max-molecules", "1000", "--chunk-size", "1000",
                                "--epochs", "1", "--device", "cpu", "--no-progress", "--out", str(out)],
                               _env(tmp_path), nproc=1))
    assert rc == 0, log[-3000:]
    assert "distributed run: 1 processes (gloo), this is rank 0 on cpu" in log
    result = json.loads((out / "result.json").read_text())
    assert result["world_size"] == 1 and result["steps"] == 3  # 3 full batches of 256 in 1000 molecules


def _worker_pids(launcher: int) -> dict[int, int]:
    """LOCAL_RANK -> pid of the worker processes the torchrun process ``launcher`` started."""
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            env = (d / "environ").read_bytes().split(b"\0") if ppid == launcher else []
        except (OSError, ValueError, IndexError):
            continue
        ranks = [e for e in env if e.startswith(b"LOCAL_RANK=")]
        if ranks:
            found[int(ranks[0].split(b"=")[1])] = int(d.name)
    return found


#: the options of docs/distributed.md's CPU command (its --corpus C and --out O aside): 2 epochs of
#: 6 chunks of 200 molecules, global batches of 32 (16 a process), a small encoder
MOLECULES, CHUNK, EPOCHS, BATCH = 1200, 200, 2, 32
ARGS = ["--max-molecules", str(MOLECULES), "--chunk-size", str(CHUNK), "--epochs", str(EPOCHS), "--batch-size",
        str(BATCH), "--dim", "16", "--gen-hidden", "8", "--device", "cpu", "--no-progress"]


def _documented_command() -> list[str]:
    """The words of docs/distributed.md's CPU command (``OMP_NUM_THREADS=1 torchrun ...``)."""
    import shlex

    text = (REPO / "docs" / "distributed.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```bash\n(.*?)```", text, re.S) if "OMP_NUM_THREADS=1 torchrun" in b)
    return shlex.split(block.replace("\\\n", " "))


@pytest.fixture(scope="module")
def unbroken(tmp_path_factory, corpus):
    """An unbroken 2-process run of ARGS: its encoder's state, result.json and output."""
    import json

    tmp = tmp_path_factory.mktemp("unbroken")
    rc, log = _finish(torchrun(["--corpus", str(corpus), *ARGS, "--out", str(tmp / "O")], _env(tmp)))
    assert rc == 0, log[-3000:]
    return {"state": torch.load(tmp / "O" / "encoder.pt", weights_only=True)["state_dict"],
            "result": json.loads((tmp / "O" / "result.json").read_text()), "log": log}


def test_torchrun_pretrains_as_documented(unbroken):
    """docs/distributed.md's CPU command is the run the resume tests compare with: it trains on
    two processes and writes the encoder, only rank 0 reports, and every BatchNorm is trained."""
    words = _documented_command()
    assert words[:7] == ["OMP_NUM_THREADS=1", "torchrun", "--standalone", "--nproc_per_node", "2", "-m", "autogcl"]
    assert words[7:] == ["transfer", "pretrain", "--corpus", "C", *ARGS, "--out", "O"], \
        "docs/distributed.md's CPU command is not the one this test runs (ARGS)"
    result, log = unbroken["result"], unbroken["log"]
    assert result["world_size"] == 2 and result["runtime"]["world_size"] == 2
    # full global batches only: CHUNK // BATCH steps in each of the chunks of every epoch
    steps = EPOCHS * (MOLECULES // CHUNK) * (CHUNK // BATCH)
    assert result["steps"] == steps and result["molecules_seen"] == steps * BATCH
    assert log.count("pre-trained autogcl") == 1, "only rank 0 reports"
    # every BatchNorm of the written encoder was trained (issue 41: they stayed at 1 and 0)
    state = unbroken["state"]
    bn = sorted(k.rsplit(".", 1)[0] for k in state if ".bns." in k and k.endswith(".weight"))
    assert len(bn) == 5
    for layer in bn:
        assert not torch.equal(state[f"{layer}.weight"], torch.ones_like(state[f"{layer}.weight"])), layer
        assert not torch.equal(state[f"{layer}.bias"], torch.zeros_like(state[f"{layer}.bias"])), layer


def _interrupted(tmp_path, corpus, sig, at=(1, 2), resume=False):
    """A 2-process run of ARGS (``--resume`` of the run folder if ``resume``) whose rank 1 gets
    ``sig`` once the checkpoint reaches chunk ``at[1]`` of epoch ``at[0]``; ``(exit code of
    torchrun, its output, run folder)``."""
    out = tmp_path / "broken"
    ckpt = out.parent / f".{out.name}.partial" / "checkpoint.pt"
    proc = torchrun(["--corpus", str(corpus), *ARGS, "--out", str(out), *(["--resume"] if resume else [])],
                    _env(tmp_path))
    deadline, signalled = time.time() + 240, None
    while time.time() < deadline and proc.poll() is None:
        if ckpt.is_file():
            try:
                state = torch.load(ckpt, weights_only=True)
            except Exception:  # being replaced: read it again
                state = None
            if state is not None and (state["epoch"], state["pos"]) >= at:
                pids = _worker_pids(proc.pid)
                if 1 in pids:
                    os.kill(pids[1], sig)
                    signalled = pids[1]
                    break
        time.sleep(0.05)
    rc, log = _finish(proc)
    assert signalled is not None, "the run ended before a process could be signalled mid-way:\n" + log[-2000:]
    assert rc != 0 and not (out / "encoder.pt").is_file()
    return rc, log, out


def test_sigterm_to_one_process_stops_every_process_at_one_step_and_a_killed_resume_resumes(tmp_path, corpus,
                                                                                             unbroken):
    """SIGTERM to rank 1 alone: both ranks agree to stop before the same step, each exits 143
    with the resume line (torchrun's summary lists both exit codes), rank 0 writes the checkpoint
    of that step. The resumed run's rank 1 is then killed (SIGKILL) in epoch 2, and the run
    resumed again ends with the unbroken run's numbers, bit for bit."""
    _, log, out = _interrupted(tmp_path, corpus, signal.SIGTERM)
    assert log.count("autogcl: stopped by SIGTERM") == 2, log[-3000:]
    assert log.count("resume with: autogcl transfer pretrain") == 2
    codes = re.findall(r"exitcode\s+:\s*(-?\d+)", log)  # the summary lines, one per rank
    assert sorted(codes) == ["143", "143"], log[-3000:]
    _, log, _ = _interrupted(tmp_path, corpus, signal.SIGKILL, at=(2, 2), resume=True)
    assert "resuming at epoch" in log, log[-3000:]
    rc, log = _finish(torchrun(["--corpus", str(corpus), *ARGS, "--out", str(out), "--resume"], _env(tmp_path)))
    assert rc == 0, log[-3000:]
    assert "resuming at epoch 2" in log, log[-3000:]
    b, ref = torch.load(out / "encoder.pt", weights_only=True)["state_dict"], unbroken["state"]
    # the same 2-process job (one thread each, _env) replayed from its checkpoints: bit-exact
    assert ref.keys() == b.keys() and all(torch.equal(ref[k], b[k]) for k in ref)


def test_the_command_leaves_its_process_group(tmp_path, corpus, monkeypatch):
    """A torchrun command ends by leaving its process group (also when every process refused the
    run together), and takes ``--deterministic`` into the group: without the first, NCCL warns that
    ``destroy_process_group()`` was not called (the log of the NCCL epoch on an H100). Here a
    launched process of one, in this process, on gloo."""
    import socket

    import torch.distributed as dist

    from autogcl.cli import main
    from autogcl.train.distributed import current

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for var, value in (("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("MASTER_ADDR", "127.0.0.1"),
                       ("MASTER_PORT", str(port)), ("TORCHELASTIC_RUN_ID", "test")):  # as torchrun sets them
        monkeypatch.setenv(var, value)
    monkeypatch.setenv("AUTOGCL_CACHE", str(tmp_path / "cache"))
    import json

    from autogcl.train.distributed import shutdown

    import contextlib

    import autogcl.train.pretrain as chunked

    asked, real = [], chunked.deterministic_kernels

    @contextlib.contextmanager
    def spy(on=True):
        asked.append(on)
        with real(on):
            yield

    monkeypatch.setattr(chunked, "deterministic_kernels", spy)
    try:  # --deterministic reaches the group's trainer too (its engine is rebuilt on the process's device)
        assert main(["transfer", "pretrain", "--corpus", str(corpus), "--max-molecules", "300", "--chunk-size",
                     "300", "--epochs", "1", "--device", "cpu", "--no-progress", "--workers", "1", "--deterministic",
                     "--out", str(tmp_path / "O")]) == 0
        runtime = json.loads((tmp_path / "O" / "result.json").read_text())["runtime"]
        assert runtime["world_size"] == 1 and runtime["deterministic"] is True and asked == [True]  # in a group
        assert not dist.is_initialized() and current() is None
        # --resume of the finished run with another configuration: refused, by every process together
        assert main(["transfer", "pretrain", "--corpus", str(corpus), "--max-molecules", "300", "--chunk-size",
                     "300", "--epochs", "2", "--device", "cpu", "--no-progress", "--workers", "1", "--deterministic",
                     "--resume", "--out", str(tmp_path / "O")]) != 0
        assert not dist.is_initialized() and current() is None
    finally:
        shutdown()  # a failed check leaves no group to this worker's later tests


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without a CUDA GPU")
def test_a_launched_process_asked_for_cuda_uses_cuda_or_says_it_cannot(monkeypatch):
    """The command line passes an :class:`autogcl.devices.Engine`, not a string. ``init`` read
    its ``str()``, which never starts with "cuda": ``torchrun ... --device cuda`` on an H100 joined
    a gloo group on the CPU and trained there (566 molecules/s) without a word. It must read the
    engine's device: on a machine without a GPU that is a clear error before any process group."""
    from autogcl.devices import Engine
    from autogcl.errors import ConfigError
    from autogcl.train import distributed

    monkeypatch.setattr(distributed, "_CURRENT", None)
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "test")  # as torchrun sets it, a group of one
    for var, value in (("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0")):
        monkeypatch.setenv(var, value)
    assert distributed.launched()
    for device in (Engine("cuda"), Engine("cuda", "bf16"), "cuda", "cuda:0"):
        with pytest.raises(ConfigError, match="sees no CUDA GPU"):
            distributed.init(device)
    assert distributed._CURRENT is None and not torch.distributed.is_initialized()
