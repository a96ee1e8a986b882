"""Atomic file writes: write to a temporary file in the same folder, then rename. Imports torch
and numpy only where a function needs them, so that the JSON and text writers stay light."""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch



def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_MODE = 0o666 & ~_umask()  # what open() would give a new file (mkstemp gives 0600)


def _write_atomically(path: Path, write) -> None:
    """``write(binary file)`` into a temporary file beside ``path``, flushed to the disk, then
    renamed over ``path``: a reader sees the old file or the new one, never a part. A failed
    write (a full disk, ENOSPC; a file-size limit, EFBIG; no permission) leaves the old file as
    it was, removes the temporary one and is a :class:`autogcl.errors.StorageError` naming the
    file and why."""
    from .errors import StorageError

    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _MODE)
        os.replace(tmp, path)
    except OSError as exc:
        kept = "the previous file is kept as it was" if path.is_file() else "nothing was written"
        raise StorageError(f"cannot write {path} ({exc.strerror or exc}); {kept}", exc.errno, path,
                           exc.strerror) from exc
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    _write_atomically(path, lambda f: f.write(data))


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_copy(src: Path, dst: Path) -> None:
    """Copy file ``src`` over ``dst`` atomically (:func:`_write_atomically`), keeping its
    modification time as ``shutil.copy2`` does."""
    atomic_write_bytes(dst, Path(src).read_bytes())
    st = os.stat(src)
    os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def replace_dir(staged: Path, target: Path) -> None:
    """Put folder ``staged`` in the place of folder ``target`` (there or not): ``target`` is
    renamed aside (``.<name>.replaced``), ``staged`` renamed to it, and the old one removed, so
    that a reader sees the old folder's files or the new ones, never a mix. A kill between the
    two renames leaves no ``target`` and the old folder aside, which :func:`recover_dir` puts
    back; a failure is a :class:`autogcl.errors.StorageError` naming the folder."""
    import shutil

    from .errors import StorageError

    staged, target = Path(staged), Path(target)
    aside = _aside(target)
    try:
        shutil.rmtree(aside, ignore_errors=True)
        if target.exists():
            os.rename(target, aside)
        os.rename(staged, target)
    except OSError as exc:
        recover_dir(target)
        shutil.rmtree(staged, ignore_errors=True)
        raise StorageError(f"cannot replace {target} ({exc.strerror or exc}); the previous folder is kept",
                           exc.errno, target, exc.strerror) from exc
    shutil.rmtree(aside, ignore_errors=True)


def recover_dir(target: Path) -> None:
    """Undo a :func:`replace_dir` stopped between its renames: the old folder, left aside, back
    in the place of ``target`` when ``target`` is missing (removed when it is not)."""
    import shutil

    target, aside = Path(target), _aside(Path(target))
    if aside.is_dir():
        if target.exists():
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.rename(aside, target)


def _aside(target: Path) -> Path:
    return target.with_name(f".{target.name}.replaced")


def _json_default(o):
    import numpy as np

    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (Path,)):
        return str(o)
    if isinstance(o, (tuple, set)):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def read_json(path: Path) -> dict:
    """The JSON object in ``path`` (every JSON file autogcl writes holds one); a missing,
    damaged or unreadable file, or one holding another JSON value, is a :class:`DataError`
    naming it."""
    from .errors import DataError

    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: damaged JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: damaged JSON (not UTF-8 text)") from exc
    except FileNotFoundError as exc:
        raise DataError(f"{path}: missing") from exc
    except OSError as exc:  # a folder of that name, no permission
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    if not isinstance(obj, dict):
        raise DataError(f"{path}: damaged JSON (a {type(obj).__name__}, not a JSON object)")
    return obj


def atomic_write_csv(path: Path, rows: list[dict]) -> None:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys)
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(path, buf.getvalue())


def atomic_save(obj, path: Path) -> None:
    """``torch.save`` atomically (:func:`_write_atomically`). The object is serialised in memory
    first, so that a failed write reports the operating system's reason (torch's own writer
    loses it)."""
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    _write_atomically(path, lambda f: f.write(buf.getbuffer()))


def load_cache(path: Path, keys=("data", "slices")) -> dict | None:
    """A processed cache written by :func:`atomic_save`, read with ``weights_only=True``; a
    damaged one (truncated, garbage, missing ``keys``) is deleted with a warning and ``None``
    returned, so that the caller rebuilds it from the raw files."""
    import torch

    path = Path(path)
    if not path.is_file():
        return None
    try:
        blob = torch.load(path, weights_only=True)
        if not isinstance(blob, dict) or any(k not in blob for k in keys):
            raise ValueError(f"missing {[k for k in keys if not isinstance(blob, dict) or k not in blob]}")
    except Exception as exc:  # torch raises many types for a damaged or unsafe file
        logging.getLogger(__name__).warning("processed cache %s is damaged (%s: %s); rebuilding it", path,
                                            type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
        path.unlink(missing_ok=True)
        return None
    return blob


#: the key of a model file that holds its weights' digest (:func:`weights_digest`)
DIGEST_KEY = "weights_sha256"


def _tensor_sha256(t: torch.Tensor) -> str:
    import hashlib

    import torch

    t = t.detach().cpu().contiguous()
    h = hashlib.sha256(f"{t.dtype}{tuple(t.shape)}".encode())
    h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def weights_digest(state: dict) -> dict[str, str]:
    """The digest of a state dict as a model file stores it: the SHA-256 of each tensor's
    dtype, shape and bytes, by name (:func:`check_weights` reads it back)."""
    import torch

    return {k: _tensor_sha256(v) for k, v in state.items() if isinstance(v, torch.Tensor)}


def weights_id(state: dict) -> str:
    """One SHA-256 of a state dict's weights (each tensor's name, dtype, shape and bytes): what
    identifies an encoder whatever file or path holds it (a re-saved copy gives the same)."""
    import hashlib

    lines = (f"{k}={d}" for k, d in sorted(weights_digest(state).items()))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def with_digest(blob: dict, key: str = "state_dict") -> dict:
    """A model file's ``blob`` with the digest of its weights (``blob[key]``) added: what every
    model file autogcl saves holds (:func:`check_weights` checks it on load)."""
    return {**blob, DIGEST_KEY: weights_digest(blob[key])}


def check_weights(blob: dict, path, key: str = "state_dict") -> None:
    """Check the weights ``blob[key]`` of the model file ``path`` against the digest saved with
    them: a tensor whose bytes changed on disk (or that is missing) is a
    :class:`autogcl.errors.DataError` naming the file and the tensor. A file saved before
    model files carried a digest is checked against ``FILE.sha256.json`` beside it when there
    is one (:func:`write_digest_beside`: the shipped encoders), else it loads with a note in
    the log that it carries none."""
    import torch

    from .errors import DataError

    saved = blob.get(DIGEST_KEY)
    beside = Path(f"{path}.sha256.json")
    if saved is None and beside.is_file():  # a file that predates the digest, given one beside it (shipped encoders)
        saved = read_json(beside).get(DIGEST_KEY)
    if saved is None:
        logging.getLogger(__name__).info("%s: the file carries no digest of its weights (saved by an autogcl older "
                                         "than the digest); its weights cannot be checked for damage", path)
        return
    state = blob.get(key)
    if not isinstance(saved, dict) or not isinstance(state, dict):
        raise DataError(f"{path}: a damaged model file (its weights' digest cannot be read)")
    for name, digest in saved.items():
        if name not in state:
            raise DataError(f"{path}: a damaged model file: tensor {name!r} is missing from its weights")
        if not isinstance(state[name], torch.Tensor) or _tensor_sha256(state[name]) != digest:
            raise DataError(f"{path}: a damaged model file: tensor {name!r} does not match the digest saved with "
                            "it (its bytes changed on disk); restore the file from a copy, or save the model again")
    extra = [k for k in state if k not in saved]
    if extra:
        raise DataError(f"{path}: a damaged model file: tensor {extra[0]!r} is not in the digest saved with it")


def write_digest_beside(path) -> Path:
    """Write ``FILE.sha256.json``, the digest of the weights of the model file ``path``, beside
    it: for a file that predates the digest and must stay as it is (a shipped encoder whose
    file's own hash is published), so that :func:`check_weights` checks it all the same."""
    import torch

    blob = torch.load(path, map_location="cpu", weights_only=True)
    out = Path(f"{path}.sha256.json")
    atomic_write_json(out, {DIGEST_KEY: weights_digest(blob["state_dict"])})
    return out
