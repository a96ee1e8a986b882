"""The training loop every strategy, protocol and the Python API share.

A *strategy* (:mod:`autogcl.train.naive`, :mod:`autogcl.train.semi`, ...) knows one epoch:
``train_epoch(data, epoch) -> dict`` of mean loss terms, ``modules()`` and ``optimizers()``.
:class:`Trainer` runs its epochs on a device with a progress bar, an evaluation hook after
each epoch, an optional stopping rule, and checkpoints (weights, optimizers, every RNG state,
the rows so far) from which an interrupted fit continues with the numbers of an
uninterrupted one.
"""

from __future__ import annotations

from ..choices import BF16
import contextlib
import copy
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import atomic, preempt
from . import checkpoints
from ..data.batching import to_device  # noqa: F401 (re-exported)
from ..devices import Engine, deterministic_kernels, resolve_device
from ..errors import ConfigError, DataError, OutOfMemory, Preempted, TrainingError

log = logging.getLogger(__name__)


def plain(value):
    """A row value as a plain Python number where it is a NumPy or 0-d torch scalar (what a
    checkpoint or model file stores must load with ``weights_only=True``)."""
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


def check_finite(loss: torch.Tensor, what: str) -> None:
    """A :class:`TrainingError` when a loss is NaN or infinite (the loop adds epoch and batch).
    It reads the loss back from its device: the training loop itself checks once per epoch
    instead (:func:`run_epoch`)."""
    value = float(loss.detach())
    if not math.isfinite(value):
        raise TrainingError(f"{what} loss is {value}")


#: how an error names each loss term (``loss`` itself: the strategy's ``loss_name``)
TERM_NAMES = {"cl_loss": "contrastive", "cls_loss": "classification", "sim_loss": "similarity"}


def check_features(batch) -> None:
    """A :class:`TrainingError` naming the first node (and its graph in the batch) whose float
    features are not finite. Batches of a :class:`autogcl.data.batching.GraphStore` were
    checked when the store was built and skip this."""
    x = getattr(batch, "x", None)
    if x is None or not torch.is_floating_point(x):
        return
    ok = torch.isfinite(x).view(x.shape[0], -1).all(1)
    if not bool(ok.all()):
        bad = int((~ok).nonzero()[0])
        owner = getattr(batch, "batch", None)
        where = f" (graph {int(owner[bad])} of the batch)" if owner is not None else ""
        raise TrainingError(f"node features are not finite at node {bad} of the batch{where}")


def read_terms(steps: list[tuple[int, dict]], terms, epoch: int, loss_name: str = "training") -> dict:
    """The mean of each loss term over an epoch's steps, weighted by graphs (a term absent
    from a step is averaged over the steps that have it; NaN when none has), from the values
    the steps returned: 0-d tensors (on any device) or numbers, read back in one transfer.
    A non-finite value is a :class:`TrainingError` naming the term, the epoch and the first
    batch where it happened."""
    tensors = [v.detach().reshape(()).to(torch.float64) for _, vals in steps for v in vals.values()
               if isinstance(v, torch.Tensor)]
    read = iter(torch.stack(tensors).cpu().tolist()) if tensors else iter(())
    sums = {k: 0.0 for k in terms}
    counts = {k: 0 for k in terms}
    for step, (n, vals) in enumerate(steps):
        values = {k: (next(read) if isinstance(v, torch.Tensor) else float(v)) for k, v in vals.items()}
        bad = [k for k, v in values.items() if not math.isfinite(v)]
        if bad:
            k = next((b for b in bad if b != "loss"), bad[0])  # the specific term first
            name = loss_name if k == "loss" else TERM_NAMES.get(k, k)
            raise TrainingError(f"{name} loss is {values[k]} at epoch {epoch}, batch {step}")
        for k, v in values.items():
            sums[k] = sums.get(k, 0.0) + v * n
            counts[k] = counts.get(k, 0) + n
    return {k: (sums[k] / counts[k] if counts[k] else float("nan")) for k in terms}


def run_epoch(loader, epoch: int, step_fn, terms, device: torch.device | None = None,
              loss_name: str = "training") -> dict:
    """Run ``step_fn(batch, epoch, step)`` on every batch (moved to ``device``); the mean of
    each loss term weighted by graphs, and the time.

    Steps return their loss terms as 0-d tensors (or numbers); they stay on the device until
    the epoch ends and are read back together (:func:`read_terms`), so a step never waits for
    the device. A non-finite loss stops training at the end of the epoch, naming the batch.
    Batches that do not come from a checked store (:class:`autogcl.data.batching.GraphLoader`)
    have their features checked first. Errors are re-raised with the epoch and batch where
    they happened; the device running out of memory is an :class:`OutOfMemory` that also gives
    the batch's size. A SIGTERM or SIGINT noted by :mod:`autogcl.preempt` stops the epoch before
    its next step (:class:`autogcl.errors.Preempted`); stopped between two steps, the exception's
    ``progress`` says what the finished ones did (:func:`finished_steps`)."""
    t0 = time.perf_counter()
    checked = getattr(loader, "validated", False)
    steps: list[tuple[int, dict]] = []
    in_step = False
    try:
        for step, batch in enumerate(loader):
            preempt.check()  # a noted signal: abandon the epoch here, between two steps
            batch = to_device(batch, device)
            in_step = True
            try:
                if not checked:
                    check_features(batch)
                vals = step_fn(batch, epoch, step)
            except TrainingError as exc:
                raise TrainingError(f"{exc} at epoch {epoch}, batch {step}") from exc
            except torch.cuda.OutOfMemoryError as exc:
                raise OutOfMemory(f"the device ran out of memory at epoch {epoch}, batch {step}, "
                                  f"{describe_batch(batch)}") from exc
            in_step = False
            steps.append((int(batch.num_graphs), vals))
    except Preempted as exc:
        if not in_step:  # a second signal stops a step half done: its weights are no state to keep
            exc.progress = finished_steps(steps, terms, epoch, loss_name, time.perf_counter() - t0)
        raise
    out = read_terms(steps, terms, epoch, loss_name)
    out["time_s"] = time.perf_counter() - t0
    return out


def finished_steps(steps: list[tuple[int, dict]], terms, epoch: int, loss_name: str, time_s: float) -> dict:
    """What the finished steps of an epoch stopped between two steps did: ``steps``, ``graphs``,
    their mean loss ``terms`` (:func:`read_terms`; NaN where a value is not finite, which the
    steps after a resume are checked for again) and ``time_s``."""
    try:
        means = read_terms(steps, terms, epoch, loss_name)
    except TrainingError:
        means = {k: float("nan") for k in terms}
    return {"steps": len(steps), "graphs": sum(n for n, _ in steps), "terms": means, "time_s": time_s}


@dataclass(frozen=True)
class FitPlan:
    """An epoch's batches when there is no single loader to ask (a chunked corpus):
    ``num_graphs`` items in batches of ``batch_size``, ``steps`` of them kept, ``drop_last``
    whether a short last batch is dropped. A :class:`autogcl.data.batching.GraphLoader` says
    the same of itself."""

    num_graphs: int
    batch_size: int
    steps: int
    drop_last: bool = True

    def __len__(self) -> int:
        return self.steps


def check_fit_plan(loaders, epochs: int, what: str, unit: str = "graph") -> None:
    """The fit-plan check every fit runs before training (AutoGCL, GraphCL, SemiSupervised,
    molecule fine-tuning and pre-training): a fit of ``epochs`` > 0 whose epoch over a loader
    (a :class:`autogcl.data.batching.GraphLoader` or a :class:`FitPlan`; a tuple or list: each
    of them) would take no training step is a :class:`DataError` that says why, instead of an
    untrained model and a NaN loss. ``what`` names the fit, ``unit`` what is batched."""
    if not epochs:
        return
    for loader in (loaders if isinstance(loaders, (tuple, list)) else (loaders,)):
        if len(loader) > 0:
            continue
        n, size = int(loader.num_graphs), int(loader.batch_size)
        if n == 0:
            why = f"there is no {unit} to train on"
        elif getattr(loader, "drop_last", False):
            why = (f"{n} {unit}{'s' if n != 1 else ''} in batches of {size}: the last batch of an epoch is dropped "
                   f"when it would hold a single {unit} (BatchNorm needs at least two), and no other batch is left")
        else:
            why = f"{n} {unit}{'s' if n != 1 else ''} in batches of {size} give no batch"
        raise DataError(f"{what}: no training step would run ({why}); give at least 2 {unit}s to train on")


def check_report(reported, call: str):
    """What an ``evaluate`` callback returned, checked: a dict (any mapping) of named values or
    ``None``; anything else is a :class:`ConfigError` naming the ``call`` (every fit's
    callbacks answer the same way)."""
    if reported is not None and not isinstance(reported, Mapping):
        raise ConfigError(f"{call} returned a {type(reported).__name__} ({reported!r:.60}); it must return a dict "
                          "of named numbers (e.g. {'val_acc': 0.8}) or None")
    return reported


def describe_batch(batch) -> str:
    """``a batch of G graphs, N nodes (largest graph: M nodes)`` of a PyG batch."""
    graphs = int(getattr(batch, "num_graphs", 1) or 1)
    nodes = int(getattr(batch, "num_nodes", 0) or 0)
    owner = getattr(batch, "batch", None)
    largest = int(torch.bincount(owner).max()) if owner is not None and owner.numel() else nodes
    return f"a batch of {graphs} graphs, {nodes} nodes (largest graph: {largest} nodes)"


#: where no progress bar is shown (output not a terminal: cluster logs, nohup), an epoch's log
#: line is written when this many seconds have passed since the last one (and for the first
#: and last epoch, and every evaluation)
LOG_SECONDS = 30.0


def _num_graphs(data) -> int | None:
    n = getattr(data, "num_graphs", None)
    if isinstance(n, int):
        return n
    ds = getattr(data, "dataset", None)
    try:
        return len(ds) if ds is not None else None
    except TypeError:
        return None


def optimizer_covers(optimizer, *modules: torch.nn.Module) -> list[str]:
    """Names of the trainable parameters of ``modules`` that ``optimizer`` does not update
    (a module left out of the optimizer would silently never learn)."""
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    return [name for m in modules for name, p in m.named_parameters() if p.requires_grad and id(p) not in held]


class Strategy:
    """Base of the training strategies: one epoch of updates of some modules.

    Subclasses define ``terms`` (the loss terms an epoch reports), ``step`` (one batch) and
    ``modules()`` / ``optimizers()`` (what a checkpoint holds); ``device`` is where batches
    go (set by :class:`Trainer`; ``None`` leaves them where they are)."""

    terms: tuple[str, ...] = ("loss",)
    device: torch.device | None = None
    #: how an error names the ``loss`` term ("training loss is nan at epoch 3, batch 0")
    loss_name: str = "training"

    def modules(self) -> dict:
        return {"model": self.model}

    def optimizers(self) -> dict:
        return {"optimizer": self.opt}

    #: forward passes under autocast to this dtype (``configure``); ``None``: float32
    autocast_dtype: torch.dtype | None = None
    #: train with PyTorch's deterministic kernels (an Engine's ``deterministic``)
    deterministic: bool = False

    def autocast(self):
        """The context of a step's forward pass (bfloat16 autocast when configured so)."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)

    def to(self, device) -> Strategy:
        """Move the strategy's modules and its optimizers' state to ``device`` (later batches
        follow); an :class:`autogcl.devices.Engine` also sets the precision of the forward
        passes and compiles the modules when it says so."""
        self.device = resolve_device(device)
        for m in self.modules().values():
            m.to(self.device)
        for opt in self.optimizers().values():
            if opt.state:  # reloading casts the state to the parameters' device (steps stay put)
                opt.load_state_dict(opt.state_dict())
        self.deterministic = isinstance(device, Engine) and device.deterministic  # a plain device: the default
        if isinstance(device, Engine):
            self.autocast_dtype = torch.bfloat16 if device.precision == BF16 else None
            if device.compile and not getattr(self, "_compiled", False):
                for m in self.modules().values():
                    m.compile(dynamic=True)
                self._compiled = True
        return self

    def _run_epoch(self, loader, epoch: int, step_fn, terms=None) -> dict:
        return run_epoch(loader, epoch, step_fn, self.terms if terms is None else terms, self.device,
                         self.loss_name)

    def train_epoch(self, data, epoch: int) -> dict:
        for m in self.modules().values():
            m.train()
        return self._run_epoch(data, epoch, self.step)


class Trainer:
    """Fit a strategy for some epochs.

    Args:
        strategy: a :class:`Strategy`.
        device: where to train (``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``; ``None``
            leaves modules and batches where they are).
        checkpoint: file to checkpoint to and resume from (``None``: no checkpoints).
        loader_gen: the CPU generator the data loaders shuffle with (its state is
            checkpointed with the others).
        ckpt_every: checkpoint every this many epochs, after the last, and (``ckpt_on_report``)
            whenever ``evaluate`` reported something.
        ckpt_seconds: also checkpoint after any epoch that ends this many seconds or more after
            the last checkpoint (or the start), so that an interrupted fit of slow epochs loses
            little whatever ``ckpt_every`` is (``None``: epochs only). Which epochs are saved
            never changes the numbers: a fit resumed from any of them equals an unbroken one.
        desc, show_progress: the progress bar (``None``: shown on a terminal).
        tracker: where every epoch's scalars go (:mod:`autogcl.train.tracking`: losses,
            evaluations, time and throughput), e.g. a
            :class:`autogcl.train.tracking.TensorBoardTracker`; ``None``: one under
            ``$AUTOGCL_LOG_DIR`` when it is set (the command line's ``--log-dir``), else none.
    """

    def __init__(self, strategy: Strategy, device=None, checkpoint: Path | None = None,
                 loader_gen: torch.Generator | None = None, ckpt_every: int = 1, ckpt_on_report: bool = True,
                 ckpt_seconds: float | None = 60.0, desc: str = "train", show_progress: bool | None = None,
                 tracker=None):
        self.strategy = strategy
        self.tracker = tracker
        if device is not None:
            strategy.to(device)
        self.checkpoint = None if checkpoint is None else Path(checkpoint)
        self.loader_gen = loader_gen if loader_gen is not None else torch.Generator()
        self.ckpt_every, self.ckpt_on_report, self.ckpt_seconds = ckpt_every, ckpt_on_report, ckpt_seconds
        self.desc, self.show_progress = desc, show_progress

    def save(self, rows: list[dict], epoch: int, extra: dict) -> None:
        checkpoints.save_checkpoint(self.checkpoint, self.strategy.modules(), self.strategy.optimizers(),
                             self.loader_gen, rows=rows, epoch=epoch, extra=extra)
        self._saved_at = time.monotonic()

    def resume(self) -> tuple[list[dict], int, dict] | None:
        """``(rows, last epoch, extra)`` of the checkpoint, restored into the strategy."""
        if self.checkpoint is None:
            return None
        state = checkpoints.load_checkpoint(self.checkpoint, self.strategy.modules(), self.strategy.optimizers(),
                                     self.loader_gen)
        return None if state is None else (state["rows"], state["epoch"], state.get("extra", {}))

    def fit(self, data, epochs: int, evaluate: Callable[[int], dict | None] | None = None,
            stop: Callable[[dict], bool] | None = None, extra: dict | None = None,
            row_fields: dict | None = None, start: int = 1) -> list[dict]:
        """Train epochs ``start..epochs`` (continuing after the checkpoint's last one) and return
        a row per epoch: ``epoch``, the strategy's loss terms, ``time_s`` and what
        ``evaluate(epoch)`` returns (NumPy scalars become Python numbers). ``stop(row)`` true
        ends the fit early. ``extra`` is state of the caller's (plain containers) saved and
        restored with the checkpoint, in place (a key the checkpoint lacks keeps its value here).
        ``row_fields`` are put at the front of every row
        (e.g. a phase name).

        SIGTERM or SIGINT (:mod:`autogcl.preempt`) stops the fit before its next step: the
        modules are put back to the last finished epoch, which is in the checkpoint file when
        there is one, and :class:`autogcl.errors.Preempted` is raised with the epoch and the
        file. The device running out of memory keeps that checkpoint too (:class:`OutOfMemory`).
        The checkpoint file is locked while the fit runs (:func:`autogcl.locks.exclusive`)."""
        from ..locks import exclusive

        lock = (exclusive(self.checkpoint, f"checkpoint {self.checkpoint}") if self.checkpoint is not None
                else contextlib.nullcontext())
        from .tracking import tracker_for

        tracker = self.tracker if self.tracker is not None else tracker_for(None, self.desc)
        with lock, preempt.handling(), preempt.deferring(), deterministic_kernels(self.strategy.deterministic):
            try:
                return self._fit(data, epochs, evaluate, stop, {} if extra is None else extra, row_fields, start,
                                 tracker)
            finally:
                if tracker is not None and tracker is not self.tracker:  # the caller closes its own
                    tracker.close()

    def _snapshot(self, rows: list[dict], epoch: int, extra: dict) -> dict:
        """The state after ``epoch`` (what its checkpoint would hold), copied."""
        return copy.deepcopy(checkpoints.checkpoint_state(self.strategy.modules(), self.strategy.optimizers(),
                                                   self.loader_gen, rows=rows, epoch=epoch, extra=extra))

    def _back_to(self, snapshot: dict | None, last: int) -> None:
        """Put the modules back to the last finished epoch ``last`` after a stop mid-epoch, and
        make sure the checkpoint holds it."""
        if snapshot is not None:
            checkpoints.restore_state(snapshot, self.strategy.modules(), self.strategy.optimizers(), self.loader_gen)
            if self.checkpoint is not None:
                atomic.atomic_save(snapshot, self.checkpoint)
                log.info("%s: checkpoint of epoch %d written to %s", self.desc or "training", last, self.checkpoint)
        elif self.checkpoint is not None and self.checkpoint.is_file():
            self.resume()  # the checkpoint already holds epoch `last`

    def _fit(self, data, epochs, evaluate, stop, extra, row_fields, start, tracker=None) -> list[dict]:
        from tqdm.auto import tqdm

        rows = []
        saved = None  # the last epoch whose state is in the checkpoint file
        resumed = self.resume()
        if resumed is not None:
            rows, last, saved_extra = resumed
            log.info("%s: continues after epoch %d from %s", self.desc or "training", last, self.checkpoint)
            extra.update(saved_extra)  # a key the checkpoint lacks (an older one) keeps the caller's default
            start = max(start, last + 1)
            saved = last
            if rows and stop is not None and stop(rows[-1]):
                return rows
        self._saved_at = time.monotonic()
        bar = tqdm(range(start, epochs + 1), desc=self.desc, unit="epoch", leave=False,
                   disable=None if self.show_progress is None else not self.show_progress)
        progress = _EpochLog(self.desc, start, epochs, _num_graphs(data), enabled=bool(bar.disable))
        for epoch in bar:
            snapshot = None if saved == epoch - 1 else self._snapshot(rows, epoch - 1, extra)
            try:
                row = {**(row_fields or {}), "epoch": epoch, **self.strategy.train_epoch(data, epoch)}
                reported = check_report(evaluate(epoch), f"evaluate({epoch})") if evaluate is not None else None
            except Preempted as exc:
                self._back_to(snapshot, epoch - 1)
                bar.close()
                raise exc.located(epoch - 1, self.checkpoint, self.desc) from None
            except OutOfMemory as exc:
                self._back_to(snapshot, epoch - 1)
                bar.close()
                kept = (f"the checkpoint of epoch {epoch - 1} is kept in {self.checkpoint}"
                        if self.checkpoint is not None and epoch > 1 else "no epoch had finished")
                raise OutOfMemory(f"{self.desc + ': ' if self.desc else ''}{exc}; {kept}. Use a smaller batch "
                                  "size (--batch-size, or fit(batch_size=...)), or train on the CPU (--device cpu); "
                                  "the graphs stay in host memory when they would take more than "
                                  "autogcl.data.batching.DEVICE_BUDGET of the GPU's free memory") from exc
            if reported:
                row.update({k: plain(v) for k, v in reported.items()})
            rows.append(row)
            if "loss" in row:
                bar.set_postfix(loss=f"{row['loss']:.3f}")
            progress.epoch(row, reported)
            if tracker is not None:
                tracker.epoch(row, _num_graphs(data))
            done = stop is not None and stop(row)
            overdue = self.ckpt_seconds is not None and time.monotonic() - self._saved_at >= self.ckpt_seconds
            stopping = preempt.requested() is not None
            if self.checkpoint is not None and (epoch % self.ckpt_every == 0 or (reported and self.ckpt_on_report)
                                                or done or epoch == epochs or overdue or stopping):
                self.save(rows, epoch, extra)
                saved = epoch
            if stopping:  # noted during the evaluation: this epoch is finished and saved
                bar.close()
                try:
                    preempt.check()
                except Preempted as exc:
                    raise exc.located(epoch, self.checkpoint, self.desc) from None
            if done:
                break
        bar.close()
        return rows


class _EpochLog:
    """One ``logging`` line per epoch where no progress bar is shown (cluster logs, ``nohup``),
    at most one per :data:`LOG_SECONDS` (and always the first and last epoch), and one per
    evaluation: loss, epoch time, throughput (graphs/s) and the time left."""

    def __init__(self, desc: str, start: int, epochs: int, graphs: int | None, enabled: bool):
        self.desc, self.start, self.epochs, self.graphs, self.enabled = desc or "train", start, epochs, graphs, enabled
        self.t0 = self.last = time.monotonic()

    def epoch(self, row: dict, reported: dict | None) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        e = row["epoch"]
        if reported:
            shown = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in reported.items()
                              if isinstance(v, (int, float, str)))
            log.info("%s: evaluation after epoch %d: %s", self.desc, e, shown)
        if not (e in (self.start, self.epochs) or now - self.last >= LOG_SECONDS):
            return
        self.last = now
        per_epoch = (now - self.t0) / max(e - self.start + 1, 1)
        parts = [f"epoch {e}/{self.epochs}"]
        if isinstance(row.get("loss"), float):
            parts.append(f"loss {row['loss']:.4f}")
        t = row.get("time_s")
        if isinstance(t, float):
            parts.append(f"{t:.2f} s")
            if self.graphs and t > 0:
                parts.append(f"{self.graphs / t:.0f} graphs/s")
        parts.append(f"ETA {_duration(per_epoch * (self.epochs - e))}")
        log.info("%s: %s", self.desc, ", ".join(parts))


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"
