"""Devices and the runtime a result depends on: ``"auto" | "cpu" | "cuda" | "cuda:N"``,
and the record (device, torch threads, versions) stored with every run."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace

from .choices import BF16, FP32, PRECISIONS, check_choice
import torch

from .errors import ConfigError

DEVICE_HELP = "auto (CUDA when available, else CPU), cpu, cuda or cuda:N"


@dataclass(frozen=True)
class Engine:
    """Where and how training computes: the device, the precision of the forward passes
    (``bf16``: autocast to bfloat16 on a CUDA GPU that has it; losses in float32), whether
    the models are compiled (``torch.compile``, CUDA only) and whether training runs PyTorch's
    deterministic kernels (``deterministic``: :func:`deterministic_kernels`, also around what an
    estimator computes after such a fit; on a GPU a seed then fixes the run bit for bit, at
    some cost in speed). Taken wherever a ``device`` is."""

    device: str = "auto"
    precision: str = FP32
    compile: bool = False
    deterministic: bool = False

    def __post_init__(self):
        check_choice("precision", self.precision, PRECISIONS)

    def on(self, device) -> Engine:
        """This engine (precision, compilation, deterministic kernels) on another device, e.g. the
        GPU torchrun gave this process."""
        return replace(self, device=str(device))

    def check(self) -> torch.device:
        """The device, with a clear error for a precision or compilation it cannot do."""
        dev = resolve_device(self.device)
        if self.precision == BF16:
            if dev.type != "cuda":
                raise ConfigError(f"--precision bf16 needs a CUDA GPU (the device is {dev}); use --precision fp32")
            if not torch.cuda.is_bf16_supported():
                raise ConfigError(f"--precision bf16: {torch.cuda.get_device_name(dev)} has no bfloat16 support; use "
                                  "--precision fp32")
        if self.compile and dev.type != "cuda":
            raise ConfigError(f"--compile compiles for a CUDA GPU (the device is {dev}); leave it out on the CPU")
        return dev


def engine_of(device) -> Engine:
    """The :class:`Engine` of a device option or engine."""
    if isinstance(device, Engine):
        return device
    return Engine("auto" if device is None else str(device))


def resolve_device(device: str | torch.device | Engine | None = "auto") -> torch.device:
    """The :class:`torch.device` for a device option; a CUDA device that is not there is a
    clear error, never a silent fallback."""
    if isinstance(device, Engine):
        return device.check()
    if isinstance(device, torch.device):
        spec = str(device)
    else:
        spec = "auto" if device is None else str(device).strip().lower()
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(spec)
    except RuntimeError as exc:
        raise ConfigError(f"unknown device {device!r}; use {DEVICE_HELP}") from exc
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"device {spec!r} asked for, but this torch build sees no CUDA GPU "
                              "(use --device cpu or auto)")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ConfigError(f"device {spec!r} asked for, but only {torch.cuda.device_count()} CUDA "
                              "device(s) are visible")
    elif dev.type != "cpu":
        raise ConfigError(f"unsupported device {spec!r}; use {DEVICE_HELP}")
    return dev


@contextlib.contextmanager
def deterministic_kernels(on: bool = True) -> Iterator[None]:
    """PyTorch's deterministic kernels while the block runs (``on``), the earlier setting after.

    CUDA's scatter-adds (the sums of message passing and pooling, and their gradients) add in
    the order their threads finish, so two runs of one seed differ in the last bits, and the
    differences grow over training. ``torch.use_deterministic_algorithms`` picks deterministic
    kernels instead, warning (not failing) at an operation that has none; cuBLAS needs
    ``CUBLAS_WORKSPACE_CONFIG``, set to ``:4096:8`` when unset. The CPU's kernels are
    deterministic already (for a fixed thread count)."""
    if not on:
        yield
        return
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def cpu_numerics() -> str:
    """Which floating-point code paths this process's CPU kernels take, as
    ``"<ATen capability>-<digest>"``: ATen's vectorised kernels (``AVX512``, ``AVX2``, ``DEFAULT``;
    ``ATEN_CPU_CAPABILITY`` picks one) and a digest of a fixed probe (matrix products of a GIN
    layer's and a contrastive loss's shapes, through the BLAS the CPU build calls, then the
    vectorised activations and a log-softmax), at the current torch thread count.

    The same configuration and seed give the same numbers bit for bit where this string is the
    same; where it differs (another CPU family, another MKL branch: ``MKL_CBWR``,
    ``MKL_ENABLE_INSTRUCTIONS``) the first rounding differs and a training curve departs from the
    other within an epoch or two. Each CPU run records it (:func:`runtime_info`)."""
    return _cpu_numerics(torch.get_num_threads())


@functools.lru_cache(maxsize=None)
def _cpu_numerics(threads: int) -> str:
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(2304, 128, generator=g), torch.randn(128, 128, generator=g)
    h = torch.relu(x @ w)
    z = torch.nn.functional.normalize(h[:128], dim=1)
    probe = torch.cat([h.sum(0), torch.log_softmax(z @ z.T / 0.5, dim=1).flatten(),
                       (torch.randn(37, 300, generator=g) @ torch.randn(300, 129, generator=g)).flatten(),
                       torch.sigmoid(h[:64]).flatten(), torch.tanh(h[64:128]).flatten()])
    digest = hashlib.sha256(probe.numpy().tobytes()).hexdigest()[:12]
    return f"{torch.backends.cpu.get_cpu_capability()}-{digest}"


def runtime_info(device: torch.device | str | Engine = "cpu") -> dict:
    """What a run's numbers depend on beyond its configuration: device, torch threads, versions
    (and precision and compilation, when not the defaults), and on the CPU its kernels' code
    paths (``cpu_numerics``: :func:`cpu_numerics`).

    On the CPU, the same configuration gives the same numbers for the same thread count
    (reductions are split over threads) and code paths; a GPU gives its own (still seeded) numbers."""
    dev = resolve_device(device)
    info = {"device": str(dev), "torch_threads": torch.get_num_threads(), "torch": torch.__version__}
    if dev.type == "cpu":
        info["cpu_numerics"] = cpu_numerics()
    if isinstance(device, Engine):
        if device.precision != FP32:
            info["precision"] = device.precision
        if device.compile:
            info["compile"] = True
        if device.deterministic:
            info["deterministic"] = True
    if dev.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(dev)
        info["cuda"] = torch.version.cuda
    return info


#: operations whose CUDA kernels read a result back to the host before they return (a size or a
#: value that the next operation needs): the host waits there for every queued kernel
#: (``torch.cuda.set_sync_debug_mode`` reports them on a GPU)
WAITING_OPS = frozenset({
    "aten::_local_scalar_dense",  # .item(), int(t), float(t), bool(t)
    "aten::nonzero", "aten::masked_select", "aten::bincount", "aten::unique_consecutive", "aten::_unique2",
    "aten::unique_dim", "aten::equal", "aten::is_nonzero",
})


@contextlib.contextmanager
def host_waits() -> Iterator[dict]:
    """Count, on any device, the operations inside the block that wait for a CUDA device
    (:data:`WAITING_OPS`, and indexing by a boolean mask, a hidden ``nonzero``): a dict
    ``{(op, "file:line"): calls}`` with the innermost autogcl line that called each. A step
    that must never stall a GPU is held to it on a CPU (e.g. a test: none but the two of node
    removal). ``repeat_interleave`` without ``output_size`` also waits on CUDA; it is not counted."""
    import traceback
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode

    counts: Counter = Counter()

    class _Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func._schema.name
            masked = name in ("aten::index", "aten::index_put_", "aten::index_put") and any(
                isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in (args[1] if len(args) > 1 else ()) or ())
            if name in WAITING_OPS or masked:
                here = [f for f in traceback.extract_stack() if f"{os.sep}autogcl{os.sep}" in f.filename
                        and not f.filename.endswith(f"autogcl{os.sep}devices.py")]
                where = f"{here[-1].filename.rsplit(os.sep + 'autogcl' + os.sep, 1)[-1]}:{here[-1].lineno}" if here else "?"
                counts[(name, where)] += 1
            return func(*args, **(kwargs or {}))

    with _Count():
        yield counts
