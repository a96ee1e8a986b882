"""Helpers of the fault tests: a small real training run on MUTAG (the unsupervised protocol's
model, strategy and loader), with a hook that sends a signal or raises inside a chosen step."""

from __future__ import annotations

import os
from collections.abc import Mapping
import subprocess
import sys

import torch

from autogcl import seeding
from autogcl.data import load_tu
from autogcl.data.batching import GraphLoader, GraphStore
from autogcl.protocols.configs import UnsupervisedConfig
from autogcl.protocols.unsupervised import build_strategy
from autogcl.train import Trainer

class _Env(Mapping):
    """The environment of a child process, read when the child starts (not at import), so it
    carries the test's private cache (``AUTOGCL_CACHE``, set per test by ``conftest.py``)."""

    def _now(self) -> dict:
        return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}

    def __getitem__(self, key):
        return self._now()[key]

    def __iter__(self):
        return iter(self._now())

    def __len__(self):
        return len(self._now())


ENV = _Env()


def small_fit(data_root, checkpoint=None, epochs=4, at=None, action=None, ckpt_every=10, seed=0, made=None,
              evaluate=None):
    """Train the AutoGCL GIN on MUTAG for ``epochs`` (batch 64, width 16); ``action()`` runs
    inside the step ``at = (epoch, batch)`` (MUTAG has 3 batches: 0, 1, 2). Returns
    ``(trainer, rows)``; the trainer is also appended to ``made`` before it fits."""
    torch.set_num_threads(1)
    ds = load_tu("MUTAG", data_root)
    cfg = UnsupervisedConfig(dataset="MUTAG", epochs=epochs, hidden=16, batch_size=64)
    gen = seeding.seed_everything(seed)
    strategy = build_strategy(cfg, ds.num_features)
    loader = GraphLoader(GraphStore.from_dataset(ds), batch_size=cfg.batch_size, shuffle=True, generator=gen)
    if at is not None:
        real = strategy.step

        def step(batch, epoch, i):
            if (epoch, i) == at:
                action()
            return real(batch, epoch, i)
        strategy.step = step
    trainer = Trainer(strategy, device="cpu", checkpoint=checkpoint, loader_gen=gen, ckpt_every=ckpt_every,
                      show_progress=False)
    if made is not None:
        made.append(trainer)
    return trainer, trainer.fit(loader, epochs, evaluate=evaluate)


def weights(trainer) -> dict:
    return {k: v.clone() for k, v in trainer.strategy.model.state_dict().items()}


def same_weights(a: dict, b: dict) -> bool:
    # bit equality: the fits compared run in one process on the same torch threads (small_fit
    # sets one) and a resumed fit replays the unbroken one's operations: bit-exact by construction
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def untimed(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.endswith("time_s")} for r in rows]


def cli(args, cwd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autogcl", *map(str, args)], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=600, **kw)


def autogcl_here(args, cwd) -> subprocess.CompletedProcess:
    """The command ``autogcl ARGS`` from ``cwd`` by the command line's ``main`` in this process, on
    one torch thread as a child with ENV (``OMP_NUM_THREADS=1``): a run compared with a child's
    makes the same operations on the same thread count, so the two are bit-equal, without an
    interpreter start (and torch's, PyG's and scikit-learn's imports: ~9 s on CI's machine) for a
    run that no signal reaches. ``.returncode`` and ``.stderr`` (what it printed and logged there)
    as ``subprocess.run``'s."""
    import contextlib
    import io
    import logging

    from autogcl.cli import main

    threads, here, err = torch.get_num_threads(), os.getcwd(), io.StringIO()
    handler = logging.StreamHandler(err)
    torch.set_num_threads(1)
    logging.getLogger().addHandler(handler)
    try:
        os.chdir(cwd)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = main(list(map(str, args)))
    finally:
        os.chdir(here)
        logging.getLogger().removeHandler(handler)
        torch.set_num_threads(threads)
    return subprocess.CompletedProcess(["autogcl", *map(str, args)], rc, "", err.getvalue())
