"""Contrastive pre-training over a corpus too large for memory, read chunk by chunk.

:class:`ChunkedTrainer` runs a strategy's epochs over chunks (each a dataset loaded on
demand) in a seeded random order, and checkpoints after every chunk (weights, optimizers,
RNG states, the position in the epoch), so an interrupted run continues where it stopped
with the numbers of an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import logging
import math
import resource
import time
from collections.abc import Callable
from pathlib import Path

import torch

from .. import preempt
from . import checkpoints
from ..data.batching import GraphLoader, pad_batch
from ..devices import deterministic_kernels
from ..errors import Preempted
from .loop import FitPlan, Strategy
from .tracking import tracker_for

log = logging.getLogger(__name__)


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _counted(loader, count: dict, limit: int | None, world_size: int = 1):
    """Yield the loader's batches (at most ``limit``), counting steps and molecules (of every
    process: each trains on an equal share of every batch)."""
    for batch in loader:
        if limit is not None and count["steps"] >= limit:
            return
        preempt.agreed()  # a data-parallel run: every process stops at the same step, or none
        count["steps"] += 1
        count["molecules"] += int(batch.num_graphs) * world_size
        yield batch


def chunk_drop_last(n: int, batch_size: int) -> bool:
    """Whether a chunk of ``n`` molecules drops its short last batch: always when it has a
    full one, and when the last would hold a single molecule (nothing to contrast, and
    BatchNorm needs 2 nodes)."""
    return n > batch_size or n % batch_size == 1


def chunk_plan(sizes, batch_size: int):
    """The :class:`autogcl.train.loop.FitPlan` of an epoch over chunks of ``sizes`` molecules."""
    sizes = [int(n) for n in sizes]
    steps = sum(n // batch_size if chunk_drop_last(n, batch_size) else math.ceil(n / batch_size) for n in sizes)
    return FitPlan(sum(sizes), batch_size, steps)


class ChunkedTrainer:
    """Fit ``strategy`` for ``epochs`` over ``num_chunks`` chunks (``load_chunk(i)`` gives
    chunk ``i`` as a dataset), checkpointing to ``checkpoint`` after every chunk and epoch.

    ``dist``: the :class:`autogcl.train.distributed.DistContext` of a data-parallel run (the
    strategy already wrapped by :func:`autogcl.train.distributed.wrap`): every process reads
    the same chunks in the same order and trains on its share of each batch; rank 0 writes
    the checkpoints, which hold every process's random state, so a run whose processes were
    killed resumes with the numbers of an unbroken one.

    ``pad``: every batch padded to a multiple of that many atoms (:func:`autogcl.data.batching.pad_batch`).

    ``tracker``: where every epoch's row goes (:mod:`autogcl.train.tracking`: loss terms,
    epoch time, molecules/s; rank 0 only); ``None``: ``--log-dir``'s, if the run has one."""

    def __init__(self, strategy: Strategy, num_chunks: int, load_chunk: Callable[[int], object],
                 batch_size: int, checkpoint: Path, loader_gen: torch.Generator, device=None,
                 show_progress: bool | None = None, desc: str = "pretrain", dist=None, tracker=None,
                 pad: int | None = None):
        self.strategy, self.num_chunks, self.load_chunk = strategy, num_chunks, load_chunk
        self.pad = pad
        self.batch_size, self.checkpoint, self.loader_gen = batch_size, Path(checkpoint), loader_gen
        if device is not None:
            strategy.to(device)
        self.dist = dist
        main = dist is None or dist.is_main
        self.show_progress, self.desc = (show_progress if main else False), desc
        self.tracker = tracker

    def _restore_process_state(self, state: dict) -> None:
        """This process's own random state, and the shared view draws, from a checkpoint."""
        view_gen = getattr(self.strategy, "view_gen", None)
        if view_gen is not None and state.get("view_gen") is not None:
            view_gen.set_state(state["view_gen"])
        ranks = state.get("rank_rng")
        if self.dist is not None and ranks:
            if len(ranks) != self.dist.world_size:
                log.warning("the checkpoint was written by %d processes, this run has %d: each process's random "
                            "draws start afresh (the numbers will differ from an unbroken run)", len(ranks),
                            self.dist.world_size)
                return
            own = ranks[self.dist.rank]
            torch.set_rng_state(own["torch"])
            if own.get("cuda") and torch.cuda.is_available():
                torch.cuda.set_rng_state(own["cuda"], self.dist.device)

    def _process_state(self) -> dict:
        """What a checkpoint adds for a data-parallel run (a collective: every process calls it)."""
        extra = {}
        view_gen = getattr(self.strategy, "view_gen", None)
        if view_gen is not None:
            extra["view_gen"] = view_gen.get_state()
        if self.dist is not None:
            cuda = torch.cuda.get_rng_state(self.dist.device) if self.dist.device.type == "cuda" else None
            extra["rank_rng"] = self.dist.all_gather_object({"torch": torch.get_rng_state(), "cuda": cuda})
        return extra

    def _add(self, acc: dict, stats: dict, steps: int, molecules: int, time_s: float) -> int:
        """Add what ``steps`` steps over ``molecules`` molecules did (mean loss ``stats``) to the
        epoch's ``acc``; the steps."""
        acc["molecules"] += molecules
        acc["steps"] += steps
        acc["time_s"] += time_s
        for k in self.strategy.terms:
            if k in stats and stats[k] == stats[k]:
                acc["sums"][k] = acc["sums"].get(k, 0.0) + stats[k] * molecules
        return steps

    def fit(self, epochs: int, max_steps: int | None = None,
            on_epoch: Callable[[list[dict]], None] | None = None) -> tuple[list[dict], bool]:
        """``(rows, stopped_early)``: a row per finished epoch (molecules, steps, time,
        throughput, mean loss terms, peak memory). ``max_steps`` stops after that many
        optimizer steps in total; ``on_epoch(rows)`` runs after every epoch (e.g. to write
        the encoder). SIGTERM or SIGINT (:mod:`autogcl.preempt`) stops it before the next step
        with a :class:`autogcl.errors.Preempted`, writing the checkpoint of the last finished
        step (the chunk's batch order and the steps of it done: a resumed run skips those and
        trains none again); in a data-parallel run, every process at the same step when any
        of them was signalled. A second signal, which stops a step half done, keeps the
        checkpoint of the last finished chunk."""
        with contextlib.ExitStack() as guard:
            guard.enter_context(deterministic_kernels(self.strategy.deterministic))
            if self.dist is None:
                guard.enter_context(preempt.handling())
                guard.enter_context(preempt.deferring())
            else:  # every process stops at the same step (torchrun's processes)
                guard.enter_context(preempt.collective(self.dist.largest))
            main = self.dist is None or self.dist.is_main  # rank 0 speaks for a data-parallel run
            tracker = self.tracker
            if tracker is None and main:  # --log-dir's shared folder (the caller closes its own tracker)
                tracker = tracker_for(None, self.desc)
                if tracker is not None:
                    guard.callback(tracker.close)
            try:
                return self._fit(epochs, max_steps, on_epoch, tracker if main else None)
            except Preempted as exc:
                state = torch.load(self.checkpoint, map_location="cpu", weights_only=True)
                done = state.get("skip", 0)
                step = f"after step {done} of chunk" if done else "at chunk"
                raise exc.located(state["epoch"] - 1, self.checkpoint,
                                  f"{self.desc}, {step} {state['pos'] + 1} of epoch {state['epoch']}") from None

    def _fit(self, epochs, max_steps, on_epoch, tracker=None):
        from tqdm.auto import tqdm

        strat, dist = self.strategy, self.dist
        world = 1 if dist is None else dist.world_size
        state = checkpoints.load_checkpoint(self.checkpoint, strat.modules(), strat.optimizers(), self.loader_gen)
        fresh = state is None
        if state is None:
            state = {"rows": [], "epoch": 1, "pos": 0, "order": None, "acc": None}
        else:
            self._restore_process_state(state)
            log.info("pretrain: resuming at epoch %d, chunk %d of %d, after %d of its steps", state["epoch"],
                     state["pos"] + 1, self.num_chunks, state.get("skip", 0))
        rows, epoch, pos, order, acc = (state[k] for k in ("rows", "epoch", "pos", "order", "acc"))
        skip = state.get("skip", 0)  # steps of chunk `pos` done before a stop inside it

        def save():
            extra = self._process_state()
            if dist is None or dist.is_main:
                checkpoints.save_checkpoint(self.checkpoint, strat.modules(), strat.optimizers(), self.loader_gen,
                                     rows=rows, epoch=epoch, pos=pos, order=order, acc=acc, skip=skip, **extra)
            if dist is not None:
                dist.barrier()  # every process goes on only once the checkpoint is written

        if fresh:
            save()  # a stop in the first chunk keeps the start (saving draws no random number)

        disable = None if self.show_progress is None else not self.show_progress
        steps = sum(r["steps"] for r in rows) + (acc["steps"] if acc else 0)
        stopped_early = False
        epochs_bar = tqdm(total=epochs, initial=epoch - 1, desc=self.desc, unit="epoch", disable=disable)
        while epoch <= epochs and not stopped_early:
            if order is None:
                order = torch.randperm(self.num_chunks, generator=self.loader_gen).tolist()
                acc = {"molecules": 0, "steps": 0, "time_s": 0.0, "sums": {}}
            while pos < len(order):
                ds = self.load_chunk(order[pos])
                bs = self.batch_size
                chunk_start = self.loader_gen.get_state()  # before the chunk's batch order is drawn
                loader = GraphLoader(ds, batch_size=bs, shuffle=True, drop_last=chunk_drop_last(len(ds), bs),
                                     generator=self.loader_gen,
                                     device=strat.device,  # the chunk on the device, batched there
                                     rank=0 if dist is None else dist.rank, world_size=world)
                count = {"steps": 0, "molecules": 0}
                left = len(loader) - skip
                limit = None if max_steps is None else max_steps - steps
                batches = loader.batches(skip)
                if self.pad is not None:  # a few shapes only (pad_batch)
                    batches = (pad_batch(b, self.pad) for b in batches)
                bar = tqdm(_counted(batches, count, limit, world),
                           total=left if limit is None else min(limit, left),
                           desc=f"epoch {epoch} chunk {pos + 1}/{len(order)}", unit="batch", leave=False,
                           disable=disable)
                t0 = time.perf_counter()
                try:
                    stats = strat.train_epoch(bar, epoch)
                except Preempted as exc:
                    done = exc.progress  # stopped between two steps: what they did
                    if done is not None and done["steps"]:
                        stats = done["terms"]
                        if dist is not None:
                            stats.update(dist.mean(stats))
                        steps += self._add(acc, stats, done["steps"], done["graphs"] * world, done["time_s"])
                        skip += done["steps"]
                        self.loader_gen.set_state(chunk_start)  # a resume draws this chunk's order again
                        save()
                    raise
                if dist is not None:  # every process's mean loss terms (equal shares: their mean)
                    stats.update(dist.mean({k: v for k, v in stats.items() if k in strat.terms}))
                n_mol = count["molecules"]
                chunk_s = time.perf_counter() - t0
                steps += self._add(acc, stats, count["steps"], n_mol, chunk_s)
                pos, skip = pos + 1, 0
                save()
                log.info("pretrain epoch %d chunk %d/%d: %d molecules in %.1f s (%.0f molecules/s)", epoch, pos,
                         len(order), n_mol, chunk_s, n_mol / max(chunk_s, 1e-9))
                if max_steps is not None and steps >= max_steps:
                    stopped_early = True
                    break
            row = {"epoch": epoch, "molecules": acc["molecules"], "steps": acc["steps"],
                   "time_s": acc["time_s"], "molecules_per_s": acc["molecules"] / max(acc["time_s"], 1e-9),
                   **{k: v / max(acc["molecules"], 1) for k, v in acc["sums"].items()},
                   "peak_rss_mb": peak_rss_mb()}
            rows.append(row)
            if tracker is not None:
                tracker.epoch(row, acc["molecules"])
            log.info("pretrain epoch %d: %s", epoch, {k: round(v, 4) for k, v in row.items() if isinstance(v, float)})
            epochs_bar.update(1)
            epochs_bar.set_postfix(loss=f"{row.get('loss', float('nan')):.3f}")
            epoch, pos, order, acc = epoch + 1, 0, None, None
            save()
            if on_epoch is not None and (dist is None or dist.is_main):
                on_epoch(rows)
        epochs_bar.close()
        return rows, stopped_early
