"""Contrastive pre-training over a corpus too large for memory, read chunk by chunk.

:class:`ChunkedTrainer` runs a strategy's epochs over chunks (each a dataset loaded on
demand) in a seeded random order, and checkpoints after every chunk (weights, optimizers,
RNG states, the position in the epoch), so an interrupted run continues where it stopped
with the numbers of an uninterrupted one.
"""

from __future__ import annotations

import logging
import resource
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch_geometric.loader import DataLoader

from .. import runs
from .loop import Strategy

log = logging.getLogger(__name__)


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _counted(loader, count: dict, limit: int | None):
    """Yield the loader's batches (at most ``limit``), counting steps and molecules."""
    for batch in loader:
        if limit is not None and count["steps"] >= limit:
            return
        count["steps"] += 1
        count["molecules"] += int(batch.num_graphs)
        yield batch


class ChunkedTrainer:
    """Fit ``strategy`` for ``epochs`` over ``num_chunks`` chunks (``load_chunk(i)`` gives
    chunk ``i`` as a dataset), checkpointing to ``checkpoint`` after every chunk and epoch."""

    def __init__(self, strategy: Strategy, num_chunks: int, load_chunk: Callable[[int], object],
                 batch_size: int, checkpoint: Path, loader_gen: torch.Generator, device=None,
                 show_progress: bool | None = None, desc: str = "pretrain"):
        self.strategy, self.num_chunks, self.load_chunk = strategy, num_chunks, load_chunk
        self.batch_size, self.checkpoint, self.loader_gen = batch_size, Path(checkpoint), loader_gen
        if device is not None:
            strategy.to(device)
        self.show_progress, self.desc = show_progress, desc

    def fit(self, epochs: int, max_steps: int | None = None,
            on_epoch: Callable[[list[dict]], None] | None = None) -> tuple[list[dict], bool]:
        """``(rows, stopped_early)``: a row per finished epoch (molecules, steps, time,
        throughput, mean loss terms, peak memory). ``max_steps`` stops after that many
        optimizer steps in total; ``on_epoch(rows)`` runs after every epoch (e.g. to write
        the encoder)."""
        from tqdm.auto import tqdm

        strat = self.strategy
        state = runs.load_checkpoint(self.checkpoint, strat.modules(), strat.optimizers(), self.loader_gen)
        if state is None:
            state = {"rows": [], "epoch": 1, "pos": 0, "order": None, "acc": None}
        else:
            log.info("pretrain: resuming at epoch %d, chunk %d of %d", state["epoch"], state["pos"] + 1,
                     self.num_chunks)
        rows, epoch, pos, order, acc = (state[k] for k in ("rows", "epoch", "pos", "order", "acc"))

        def save():
            runs.save_checkpoint(self.checkpoint, strat.modules(), strat.optimizers(), self.loader_gen,
                                 rows=rows, epoch=epoch, pos=pos, order=order, acc=acc)

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
                # never a last batch of one molecule: nothing to contrast, and BatchNorm needs 2 nodes
                bs = self.batch_size
                drop = len(ds) > bs or len(ds) % bs == 1
                loader = DataLoader(ds, batch_size=bs, shuffle=True, drop_last=drop, generator=self.loader_gen)
                count = {"steps": 0, "molecules": 0}
                limit = None if max_steps is None else max_steps - steps
                bar = tqdm(_counted(loader, count, limit),
                           total=len(loader) if limit is None else min(limit, len(loader)),
                           desc=f"epoch {epoch} chunk {pos + 1}/{len(order)}", unit="batch", leave=False,
                           disable=disable)
                t0 = time.perf_counter()
                stats = strat.train_epoch(bar, epoch)
                n_steps, n_mol = count["steps"], count["molecules"]
                acc["molecules"] += n_mol
                acc["steps"] += n_steps
                chunk_s = time.perf_counter() - t0
                acc["time_s"] += chunk_s
                for k in strat.terms:
                    if k in stats and stats[k] == stats[k]:
                        acc["sums"][k] = acc["sums"].get(k, 0.0) + stats[k] * n_mol
                steps += n_steps
                pos += 1
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
            log.info("pretrain epoch %d: %s", epoch, {k: round(v, 4) for k, v in row.items() if isinstance(v, float)})
            epochs_bar.update(1)
            epochs_bar.set_postfix(loss=f"{row.get('loss', float('nan')):.3f}")
            epoch, pos, order, acc = epoch + 1, 0, None, None
            save()
            if on_epoch is not None:
                on_epoch(rows)
        epochs_bar.close()
        return rows, stopped_early
