"""Executors: where a sweep's units run, one switch (``--executor serial|ray``).

:class:`SerialExecutor` runs the units one after the other in this process (the default);
:class:`RayExecutor` runs each unit as a Ray task, on a local Ray cluster sized to this
machine or on a running cluster (``address``). Either way a unit works in its own partial
folder and publishes itself atomically into the run directory (:mod:`autogcl.units`), so a
sweep started with one executor is resumed by the other, and a Ray worker killed mid-unit
is retried by Ray and continues from the unit's last checkpoint.

The run directory must be on storage that every Ray node sees (a local folder for a local
cluster; a shared file system for a multi-node one).
"""

from __future__ import annotations

from .choices import EXECUTORS, RAY, SERIAL, check_choice
import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence

from . import preempt
from .errors import AutoGCLError, ConfigError
from .units import run_jobs, run_one

__all__ = ["EXECUTORS", "RayExecutor", "SerialExecutor", "make_executor"]

log = logging.getLogger(__name__)


#: a unit and the function that runs it (:func:`autogcl.units.run_one`)
Job = tuple  # (units.Unit, Callable[[units.Unit], dict])


@contextlib.contextmanager
def unit_threads(cpus: float | None) -> Iterator[None]:
    """Torch's intra-op threads follow a unit's CPUs (``None``: leave them as they are)."""
    if cpus is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(max(1, int(cpus)))
    try:
        yield
    finally:
        torch.set_num_threads(before)


class SerialExecutor:
    """The units one after the other, in this process. ``cpus_per_unit``: torch threads
    while a unit runs (default: as configured for the process)."""

    name = SERIAL

    def __init__(self, cpus_per_unit: float | None = None):
        self.cpus_per_unit = cpus_per_unit

    def run(self, jobs: Sequence[Job], on_done: Callable, restart_damaged: bool = False) -> None:
        for job in jobs:
            with unit_threads(self.cpus_per_unit):
                run_jobs([job], on_done, restart_damaged)


#: seconds a Ray task waits for its unit's lock: a retried task's dead predecessor may hold it
#: that long on NFS, whose server keeps a lost node's lock for its lease (about 90 s on NFSv4)
RETRY_WAIT = 120.0


def autogcl_unit(fn, unit, restart_damaged: bool, threads: int, log_level: int) -> None:
    """The Ray task of one unit (named ``autogcl <unit label>``: its worker's process title reads
    ``ray::autogcl <unit label>`` while it runs)."""
    import torch

    preempt.enabled = False  # the worker's signals are Ray's: it stops and retries tasks with them
    logging.basicConfig(level=log_level, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(threads)
    run_one(unit, fn, restart_damaged, wait=RETRY_WAIT)


def check_reachable(address: str | None, timeout: float = 5.0) -> None:
    """A :class:`ConfigError` at once when nothing answers at a ``HOST:PORT`` address (Ray
    itself would wait minutes for it)."""
    import socket

    if not address or address == "auto" or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"--ray-address {address!r}: expected auto or HOST:PORT (e.g. 10.0.0.1:6379)")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise ConfigError(f"--ray-address {address}: no Ray cluster answers there ({exc.strerror or exc}); "
                          "start one with `ray start --head` or leave --ray-address out for a local one") from exc


def _import_ray():
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("--executor ray needs Ray: pip install 'autogcl[ray]' (or pip install ray)") from exc
    return ray


class RayExecutor:
    """Each unit as a Ray task with ``cpus_per_unit`` CPUs (its torch threads) and
    ``gpus_per_unit`` GPUs (fractions let small units share a GPU).

    ``address``: ``None`` starts a local cluster sized to this machine (and stops it at the
    end); ``"auto"`` or ``"HOST:PORT"`` joins a running one. Where Ray is already initialised
    in this process (e.g. ``ray.init(num_cpus=2)`` in a script), that cluster is used and left
    running. A task whose worker dies (``kill -9``, a lost node) is retried ``max_retries``
    times and continues from its unit's checkpoint; an error inside a unit stops the sweep
    (the other running units are cancelled; their checkpoints stay for ``--resume``)."""

    name = RAY

    def __init__(self, address: str | None = None, cpus_per_unit: float = 1.0, gpus_per_unit: float = 0.0,
                 max_retries: int = 3):
        check_reachable(address)  # at once, before any data is read
        self.address = address
        self.cpus_per_unit = 1.0 if cpus_per_unit is None else float(cpus_per_unit)
        self.gpus_per_unit = float(gpus_per_unit or 0.0)
        self.max_retries = max_retries

    def _start(self, ray) -> bool:
        """Connect to (or start) the cluster; ``True`` when this call started it."""
        if ray.is_initialized():
            return False
        level = logging.getLogger("autogcl").getEffectiveLevel()
        try:
            ray.init(address=self.address, include_dashboard=False, logging_level=max(level, logging.WARNING),
                     log_to_driver=True)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ConfigError(f"cannot {'join the Ray cluster at ' + self.address if self.address else 'start Ray'}"
                              f" ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from exc
        return True

    def _check_fits(self, ray) -> None:
        res = ray.cluster_resources()
        for kind, need in (("CPU", self.cpus_per_unit), ("GPU", self.gpus_per_unit)):
            if need > res.get(kind, 0.0):
                raise ConfigError(f"each unit asks for {need:g} {kind}(s) (--{kind.lower()}s-per-unit) but the Ray "
                                  f"cluster has {res.get(kind, 0.0):g}: no unit could ever start")

    def run(self, jobs: Sequence[Job], on_done: Callable, restart_damaged: bool = False) -> None:
        if not jobs:
            return
        ray = _import_ray()
        started = self._start(ray)
        pending: dict = {}
        try:
            self._check_fits(ray)
            task = ray.remote(num_cpus=self.cpus_per_unit, num_gpus=self.gpus_per_unit,
                              max_retries=self.max_retries, retry_exceptions=False)(autogcl_unit)
            shared = {}  # one copy of each unit function (and the dataset it holds) in the object store
            for _, fn in jobs:
                if id(fn) not in shared:
                    shared[id(fn)] = ray.put(fn)
            threads = max(1, int(self.cpus_per_unit))
            level = logging.getLogger("autogcl").getEffectiveLevel()
            for unit, fn in jobs:
                ref = task.options(name=f"autogcl {unit.label or unit.dir.name}").remote(
                    shared[id(fn)], unit, restart_damaged, threads, level)
                pending[ref] = unit
            while pending:
                with preempt.deferring():  # a signal is acted on here, in Python, not inside Ray's wait
                    done, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
                for ref in done:
                    unit = pending.pop(ref)
                    self._get(ray, ref, unit)
                    on_done(unit)
        finally:
            for ref in pending:  # Ctrl-C or a failed unit: stop the others; their checkpoints stay
                ray.cancel(ref, force=True)
            if started:
                ray.shutdown()

    def _get(self, ray, ref, unit) -> None:
        """The outcome of one unit's task: an error inside the unit is raised as itself."""
        try:
            ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, AutoGCLError):
                raise cause from None
            raise RuntimeError(f"{unit.label or unit.dir}: {type(cause).__name__ if cause else 'task'} failed on a "
                               f"Ray worker: {cause if cause else exc}") from exc
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as exc:
            raise RuntimeError(f"{unit.label or unit.dir}: its Ray worker died {self.max_retries + 1} times; "
                               f"rerun with --resume to continue it from its checkpoint") from exc


def make_executor(name: str = SERIAL, address: str | None = None, cpus_per_unit: float | None = None,
                  gpus_per_unit: float = 0.0):
    """The executor called ``name`` (``serial`` or ``ray``)."""
    if check_choice("executor", name, EXECUTORS) == SERIAL:
        return SerialExecutor(cpus_per_unit)
    _import_ray()
    return RayExecutor(address, 1.0 if cpus_per_unit is None else cpus_per_unit, gpus_per_unit)
