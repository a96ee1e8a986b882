"""Data-parallel training on several processes (GPUs or CPUs, one or many machines) with
PyTorch's own engine: ``torch.distributed`` and ``DistributedDataParallel``.

Launched by ``torchrun`` (which sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``
and ``MASTER_PORT``), every process runs the same command; :func:`init` joins them (NCCL on
GPUs, gloo on CPUs). :func:`wrap` then makes a contrastive strategy data-parallel:

* each global batch of ``batch_size`` graphs is split evenly across the processes
  (:class:`autogcl.data.batching.GraphLoader`'s ``rank``/``world_size``);
* the strategy's forward pass runs inside ``DistributedDataParallel`` (gradients averaged
  across processes; a generator left out of a step is an unused parameter);
* NT-Xent gathers the embeddings of every process (negatives from the whole global batch,
  with gradients flowing back to their process);
* BatchNorm statistics are computed over the whole global batch, each view apart
  (:class:`autogcl.models.norm.SegmentBatchNorm` synced: all-reduces on either backend, the
  layers and their parameters unchanged, so the optimizers keep training them);
* the two views contrasted are drawn from a generator that is the same on every process,
  while each process draws its own Gumbel noise (seeded by rank).

One step on ``W`` processes of ``B`` graphs each then computes the loss and the gradients of
one process on the ``W * B`` graphs (tested). Only rank 0 writes files.
"""

from __future__ import annotations

import datetime
import gc
import logging
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from ..devices import engine_of
from ..errors import ConfigError
from ..models.norm import sync

log = logging.getLogger(__name__)

__all__ = ["DistContext", "check_batch", "current", "gather_rows", "init", "launched",
           "rank_seed", "same_everywhere", "shutdown", "sync_batchnorm", "wrap"]


@dataclass
class DistContext:
    """Where this process stands in a distributed run."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    backend: str
    #: the group of CPU collectives that steer the run (gloo; ``None``: the default group,
    #: itself gloo on CPUs): a check each step costs no GPU synchronisation
    control: object = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        dist.barrier()

    def broadcast(self, obj):
        """``obj`` of rank 0, on every process."""
        box = [obj if self.is_main else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def all_gather_object(self, obj) -> list:
        out = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def mean(self, values: dict) -> dict:
        """Each value averaged over the processes (one all-reduce)."""
        keys = sorted(values)
        if not keys:
            return {}
        t = torch.tensor([float(values[k]) for k in keys], dtype=torch.float64,
                         device=self.device if self.backend == "nccl" else "cpu")
        dist.all_reduce(t)
        return {k: v / self.world_size for k, v in zip(keys, t.tolist())}

    def largest(self, value: int) -> int:
        """The largest of the processes' ``value`` (a signal noted, 0 for none: every process
        stops at the same step; :func:`autogcl.preempt.collective`)."""
        t = torch.tensor([int(value)], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.control)
        return int(t.item())

    def sum(self, value: int) -> int:
        t = torch.tensor([value], dtype=torch.int64, device=self.device if self.backend == "nccl" else "cpu")
        dist.all_reduce(t)
        return int(t.item())


_CURRENT: DistContext | None = None


def current() -> DistContext | None:
    """The context of this process's distributed run, or ``None`` (one process)."""
    return _CURRENT


def launched() -> bool:
    """Whether this process was started by ``torchrun`` (a group of one included: ``torchrun
    --nproc-per-node 1`` on one GPU runs the NCCL path) or by another launcher as one of several."""
    return dist.is_torchelastic_launched() or int(os.environ.get("WORLD_SIZE", "1")) > 1


def init(device: torch.device | str = "auto", timeout_s: float = 7200.0) -> DistContext | None:
    """Join the distributed run ``torchrun`` started (``None`` when this is a single process).

    ``device``: ``cpu`` (gloo), ``cuda``/``auto`` on a GPU machine (NCCL, the GPU of this
    process's ``LOCAL_RANK``). The timeout covers the longest wait of a process for another
    (rank 0 featurising a corpus)."""
    global _CURRENT
    if _CURRENT is not None:
        return _CURRENT
    if not launched():
        return None
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    spec = engine_of(device).device.lower()  # the CLI passes an Engine: its str() never reads "cuda"
    use_cuda = spec.startswith("cuda") or (spec == "auto" and torch.cuda.is_available())
    if use_cuda:
        if not torch.cuda.is_available():
            raise ConfigError(f"--device {spec}: this torch build sees no CUDA GPU (use --device cpu)")
        if local >= torch.cuda.device_count():
            raise ConfigError(f"process {rank} has LOCAL_RANK {local} but {torch.cuda.device_count()} GPU(s) are "
                              "visible: start at most one process per GPU (--nproc_per_node)")
        dev = torch.device("cuda", local)
        torch.cuda.set_device(dev)
        backend = "nccl"
    else:
        dev, backend = torch.device("cpu"), "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s),
                                **({"device_id": dev} if backend == "nccl" else {}))
    control = dist.new_group(backend="gloo") if backend == "nccl" else None
    _CURRENT = DistContext(rank, world, local, dev, backend, control)
    if rank != 0:  # one process speaks: the others log warnings and errors only
        logging.getLogger("autogcl").setLevel(max(logging.getLogger("autogcl").getEffectiveLevel(),
                                                  logging.WARNING))
    log.info("distributed run: %d processes (%s), this is rank %d on %s", world, backend, rank, dev)
    return _CURRENT


def shutdown() -> None:
    """Leave the process group. Unreachable DDP wrappers (which hold the group) are collected
    first, so that the group is destroyed now and not by interpreter finalisation, where gloo's
    threads can abort the process."""
    global _CURRENT
    if dist.is_initialized():
        gc.collect()
        dist.destroy_process_group()
    _CURRENT = None


class _AllGatherRows(torch.autograd.Function):
    """All-gather along the rows whose backward hands each process the sum, over processes, of
    the gradients of its own rows (an all-reduce: gloo has no reduce-scatter)."""

    @staticmethod
    def forward(ctx, t):
        parts = [torch.empty_like(t) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, t.contiguous())
        ctx.rows, ctx.rank = t.shape[0], dist.get_rank()
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous().clone()
        dist.all_reduce(grad)
        return grad[ctx.rank * ctx.rows:(ctx.rank + 1) * ctx.rows]


def gather_rows(t: torch.Tensor) -> tuple[torch.Tensor, int]:
    """``(rows of every process concatenated in rank order, offset of this process's rows)``,
    with gradients flowing back to the process each row came from. Every process passes as
    many rows."""
    return _AllGatherRows.apply(t), dist.get_rank() * t.shape[0]


def sync_batchnorm(module: nn.Module, ctx: DistContext) -> nn.Module:
    """Every BatchNorm of ``module`` computing its statistics over all processes, segments
    included, on either backend (:func:`autogcl.models.norm.sync`): in place, with the very
    parameters and buffers an optimizer built before holds."""
    return sync(module)


class _StepForward(nn.Module):
    """The modules of a strategy under one parent, whose forward is the strategy's forward pass
    (what ``DistributedDataParallel`` wraps)."""

    def __init__(self, strategy):
        super().__init__()
        self._strategy = [strategy]  # a list: not a submodule
        for name, mod in strategy.modules().items():
            self.add_module(name, mod)

    def forward(self, batch, picks):
        return self._strategy[0].losses(batch, picks)


def wrap(strategy, ctx: DistContext, seed: int = 0):
    """Make ``strategy`` (:class:`autogcl.train.NaiveStrategy` or
    :class:`autogcl.train.GraphCLStrategy`, its modules on ``ctx.device``) data-parallel:
    synced BatchNorm (two views read in one pass, each with its own statistics), a DDP forward,
    NT-Xent over every process's graphs, the same view draws on every process. May be called
    after the optimizers were built: they keep training every parameter."""
    from torch.nn.parallel import DistributedDataParallel

    if not hasattr(strategy, "losses"):
        raise ConfigError(f"{type(strategy).__name__} cannot train data-parallel (it has no losses())")
    for name, mod in strategy.modules().items():
        sync_batchnorm(mod, ctx)
    step_module = _StepForward(strategy)
    ids = [ctx.local_rank] if ctx.backend == "nccl" else None
    # buffers (BatchNorm statistics) are the same everywhere already: synced statistics
    try:
        strategy.forward_module = DistributedDataParallel(step_module, device_ids=ids, find_unused_parameters=True,
                                                          forward_sync_buffers=False)
    except TypeError:  # torch before 2.13
        strategy.forward_module = DistributedDataParallel(step_module, device_ids=ids, find_unused_parameters=True,
                                                          broadcast_buffers=False)
    strategy.gather = gather_rows
    if hasattr(strategy, "view_gen"):
        strategy.view_gen = torch.Generator().manual_seed(seed)
    return strategy


def check_batch(batch_size: int, ctx: DistContext | None) -> None:
    """A clear error when the global batch does not split evenly across the processes."""
    if ctx is not None and batch_size % ctx.world_size:
        raise ConfigError(f"--batch-size {batch_size} is the global batch of {ctx.world_size} processes and must be a "
                          f"multiple of it (e.g. {batch_size - batch_size % ctx.world_size or ctx.world_size}): each "
                          "process trains on an equal share")


def rank_seed(seed: int, ctx: DistContext | None) -> int:
    """The seed of this process's own random draws (Gumbel noise, augmentations): ``seed`` on
    rank 0 (a one-process run's stream), shifted on the others."""
    return seed if ctx is None or ctx.rank == 0 else seed + 7919 * ctx.rank


def same_everywhere(t: torch.Tensor, ctx: DistContext) -> bool:
    """Whether ``t`` is equal on every process (a check for tests and resumes)."""
    ref = t.detach().clone()
    dist.broadcast(ref, src=0)
    ok = torch.tensor([float(torch.equal(ref, t))], device=t.device)
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    return bool(ok.item())

