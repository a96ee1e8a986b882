"""Devices and the runtime a result depends on: ``"auto" | "cpu" | "cuda" | "cuda:N"``,
and the record (device, torch threads, versions) stored with every run."""

from __future__ import annotations

import torch

from .errors import ConfigError

DEVICE_HELP = "auto (CUDA when available, else CPU), cpu, cuda or cuda:N"


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """The :class:`torch.device` for a device option; a CUDA device that is not there is a
    clear error, never a silent fallback."""
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


def runtime_info(device: torch.device | str = "cpu") -> dict:
    """What a run's numbers depend on beyond its configuration: device, torch threads, versions.

    On the CPU, the same configuration gives the same numbers for the same thread count
    (reductions are split over threads); a GPU gives its own (still seeded) numbers."""
    dev = resolve_device(device)
    info = {"device": str(dev), "torch_threads": torch.get_num_threads(), "torch": torch.__version__}
    if dev.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(dev)
        info["cuda"] = torch.version.cuda
    return info
