"""Where data, caches and run outputs live: data-root resolution, the project cache, and whether
results can be written where a run is asked to write them."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ConfigError


def project_dir() -> Path | None:
    """The source checkout this package runs from, if it runs from one (editable install)."""
    here = Path(__file__).resolve().parent.parent
    return here if (here / "pyproject.toml").is_file() else None


def cache_dir() -> Path:
    """Project cache: ``$AUTOGCL_CACHE``, else ``<checkout>/.cache``, else ``~/.cache/autogcl``."""
    env = os.environ.get("AUTOGCL_CACHE")
    if env:
        return Path(env).expanduser()
    proj = project_dir()
    if proj is not None:
        return proj / ".cache"
    return Path.home() / ".cache" / "autogcl"


def default_data_dir() -> Path:
    """The project's own data root inside the cache (downloads land here)."""
    return cache_dir() / "data"


def explicit_root(data_root: str | os.PathLike | None = None) -> bool:
    """Whether the user named a data root (``--data-root`` or ``$AUTOGCL_DATA``): a dataset
    missing there is then an error, not a silent download (unless asked with ``--download``)."""
    return data_root is not None or bool(os.environ.get("AUTOGCL_DATA"))


def data_roots(data_root: str | os.PathLike | None = None) -> list[Path]:
    """Data roots in resolution order: ``--data-root``, then ``$AUTOGCL_DATA``, then the cache.

    Every root follows one layout: ``TU/NAME/raw/``, ``moleculenet/``, ``pretrain/``, ``MNIST/``.
    """
    roots: list[Path] = []
    if data_root is not None:
        if not str(data_root).strip():  # Path("") would be the current folder
            raise ConfigError("--data-root is an empty string; name a folder, or leave it out")
        roots.append(Path(data_root).expanduser())
    env = os.environ.get("AUTOGCL_DATA")
    if env:
        roots.append(Path(env).expanduser())
    roots.append(default_data_dir())
    seen, out = set(), []
    for r in roots:
        key = str(r.resolve()) if r.exists() else str(r)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def check_writable(folder: Path) -> None:
    """A :class:`ConfigError` now, not after hours of training, when results cannot be
    written into ``folder`` (a file in the way, no permission, read-only storage). Creates
    nothing: the check writes and removes a probe file in the nearest existing folder, so an
    error found later leaves nothing behind."""
    import tempfile

    folder = Path(folder)
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"cannot write results into {folder} (a file is in the way); choose another --out")
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".autogcl-write-test-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(f"cannot write results into {folder} ({exc.strerror or exc}); choose another --out") from exc


def child_pythonpath(*first: str | os.PathLike, env=None) -> str:
    """``PYTHONPATH`` for a child process: ``first`` (e.g. the checkout whose code it runs), then
    the entries of ``env`` (default: this process's environment; a machine may install packages
    there), never an empty entry (which would put the child's working directory on its path)."""
    entries = (*first, *(os.environ if env is None else env).get("PYTHONPATH", "").split(os.pathsep))
    return os.pathsep.join(str(e) for e in entries if str(e))
