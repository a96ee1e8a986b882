"""Molecules to graphs with RDKit (Hu et al. 2020 features), and SMILES CSV readers.

Node features ``x`` (long, N x 2): atom type id (atomic number - 1; 119 = mask) and
chirality id (0 unspecified/other, 1 CW, 2 CCW). Edge features ``edge_attr`` (long, E x 2):
bond type id (0 single, 1 double, 2 triple, 3 aromatic; 4 self-loop and 5 mask are used by
the model only) and bond direction id (0 none, 1 end-up-right, 2 end-down-right). Every
bond is stored in both directions.

SMILES that do not parse (or give a molecule without atoms) are skipped and reported with
the file, row and SMILES; they never stop a run.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import logging
import math
import os
import re
import signal
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data
from tqdm.auto import tqdm

from ..errors import ConfigError, DataError

log = logging.getLogger(__name__)

NUM_ATOM_TYPES = 120  # atomic numbers 1..118 -> ids 0..117, 118 = dummy atom (*), 119 = mask
MASK_ATOM = 119
NUM_CHIRALITY = 3
NUM_BOND_TYPES = 6  # single, double, triple, aromatic, self-loop, mask
SELF_LOOP_BOND = 4
MASK_BOND = 5
NUM_BOND_DIRS = 3

#: the vocabulary of this featurisation, which the molecule models take as ``vocab``
VOCAB = {"num_atom_types": NUM_ATOM_TYPES, "num_chirality": NUM_CHIRALITY, "num_bond_types": NUM_BOND_TYPES,
         "num_bond_dirs": NUM_BOND_DIRS, "mask_atom": MASK_ATOM, "self_loop_bond": SELF_LOOP_BOND}

#: featurising workers only run RDKit and numpy, so fork is safe and needs no importable
#: __main__ (spawn re-imports it, which fails for ``python -`` and notebooks)
_START_METHOD = "fork" if os.name == "posix" else "spawn"

_rdkit = None


def rdkit():
    """Import RDKit once, with a clear error when it is missing."""
    global _rdkit
    if _rdkit is None:
        try:
            from rdkit import Chem, RDLogger
        except ImportError as exc:  # pragma: no cover - rdkit is a dependency
            raise DataError("molecules need RDKit: pip install rdkit") from exc
        RDLogger.DisableLog("rdApp.*")  # parse failures are reported by us, with their row
        _rdkit = Chem
    return _rdkit


def _tables():
    Chem = rdkit()
    chir = Chem.rdchem.ChiralType
    bt = Chem.rdchem.BondType
    bd = Chem.rdchem.BondDir
    return (
        {chir.CHI_TETRAHEDRAL_CW: 1, chir.CHI_TETRAHEDRAL_CCW: 2},
        {bt.SINGLE: 0, bt.DOUBLE: 1, bt.TRIPLE: 2, bt.AROMATIC: 3},
        {bd.ENDUPRIGHT: 1, bd.ENDDOWNRIGHT: 2},
    )


_TABLES = None


def mol_to_arrays(mol) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, edge_index, edge_attr)`` of an RDKit molecule as int64 arrays.

    Chirality and bond directions outside Hu et al.'s vocabulary map to 0; bond types
    outside it (dative, ...) count as single bonds, as the vocabulary has no slot for them.
    """
    global _TABLES
    if _TABLES is None:
        _TABLES = _tables()
    chir, btype, bdir = _TABLES
    atoms = mol.GetAtoms()
    x = np.array([[min(a.GetAtomicNum(), 119) - 1, chir.get(a.GetChiralTag(), 0)] for a in atoms],
                 dtype=np.int64).reshape(-1, 2)
    x[x[:, 0] < 0, 0] = 118  # dummy atoms ("*", atomic number 0) share the unused id 118
    bonds = mol.GetBonds()
    if len(bonds) == 0:
        return x, np.zeros((2, 0), dtype=np.int64), np.zeros((0, 2), dtype=np.int64)
    b = np.array([[bd.GetBeginAtomIdx(), bd.GetEndAtomIdx(), btype.get(bd.GetBondType(), 0),
                   bdir.get(bd.GetBondDir(), 0)] for bd in bonds], dtype=np.int64)
    edge_index = np.concatenate([b[:, [0, 1]], b[:, [1, 0]]], axis=0).T
    edge_attr = np.concatenate([b[:, 2:], b[:, 2:]], axis=0)
    return x, np.ascontiguousarray(edge_index), edge_attr


def parse_smiles(smiles: str):
    """The RDKit molecule of a SMILES string, or ``(None, reason)`` when it cannot be used."""
    Chem = rdkit()
    if not smiles or not smiles.strip():
        return None, "empty SMILES"
    mol = Chem.MolFromSmiles(smiles.strip())
    if mol is None:
        return None, f"RDKit cannot parse it: {rdkit_reason(smiles.strip())}"
    if mol.GetNumAtoms() == 0:
        return None, "no atoms"
    return mol, ""


def rdkit_reason(smiles: str) -> str:
    """RDKit's own reason why a SMILES gives no molecule: its parser's message (a syntax error
    and where), or the sanitisation error (a valence, an aromatic ring it cannot kekulise).
    Only called for a SMILES that failed, so a molecule that parses is built as before."""
    Chem = rdkit()
    from rdkit import rdBase

    capture = getattr(rdBase, "CaptureErrorLog", None)
    if capture is not None:
        with capture() as cap:
            raw = Chem.MolFromSmiles(smiles, sanitize=False)
        messages = cap.messages
    else:  # pragma: no cover - RDKit before 2025 has no capture: the sanitisation error only
        raw, messages = Chem.MolFromSmiles(smiles, sanitize=False), ""
    if raw is None:
        lines = []
        for text in messages.splitlines():
            text = re.sub(r"^\[[0-9:. ]+\]\s*", "", text).strip()
            if text.startswith("SMILES Parse Error:") and "Failed parsing SMILES" not in text:
                # "check for mistakes around position 3:" introduces RDKit's picture of the
                # SMILES (two more lines), which a one-line reason leaves out
                lines.append(text.removeprefix("SMILES Parse Error:").strip().rstrip(":").strip())
        return "; ".join(lines) or "a SMILES syntax error"
    try:
        Chem.SanitizeMol(raw)
    except Exception as exc:  # RDKit raises its own exception types (valence, kekulisation)
        return " ".join(str(exc).split()) or type(exc).__name__
    return "RDKit gave no molecule"


def smiles_to_graph(smiles: str) -> Data | None:
    """The graph of one SMILES string, or ``None`` when it does not parse."""
    mol, _ = parse_smiles(smiles)
    if mol is None:
        return None
    x, ei, ea = mol_to_arrays(mol)
    return Data(x=torch.from_numpy(x), edge_index=torch.from_numpy(ei), edge_attr=torch.from_numpy(ea))


def _featurize_block(smiles: list[str]):
    out = []
    for s in smiles:
        mol, reason = parse_smiles(s)
        out.append(reason if mol is None else mol_to_arrays(mol))
    return out


@dataclass
class Skipped:
    """A row whose SMILES could not be used."""

    source: str
    row: int  # 1-based line of the file (header = line 1) or position in a list
    smiles: str
    reason: str

    def __str__(self) -> str:
        return f"{self.source}, row {self.row}: {self.smiles!r} skipped ({self.reason})"


@dataclass
class Featurized:
    """Arrays of the molecules that parsed, their positions in the input, and the skips."""

    arrays: list = field(default_factory=list)
    index: list[int] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def _pool_worker_signals() -> None:
    """A featurising worker dies on SIGTERM, as ``Pool.terminate`` expects, and leaves SIGINT to
    its parent: a forked worker inherits the command's SIGTERM handler (:mod:`autogcl.preempt`),
    which raised inside the pool's queue lock at the pool's end, printed a traceback, and could
    leave the lock held, so that the parent waited for the workers forever (transfer HIV hung
    there on the CPU)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def featurize_pool(workers: int) -> Iterator:
    """The process pool :func:`featurize` runs on (forked where the platform allows), as a
    ``with`` block: when its work is done the pool is closed and joined (its workers exit on
    their own), and terminated only on an error. ``Pool.terminate`` (what ``with Pool()``
    does at every end) can race the pool's own worker handler, which may start a fresh worker
    as the others are stopped; that worker then waits forever on the task queue's lock, and the
    parent waits for it (seen once in a test run)."""
    pool = get_context(_START_METHOD).Pool(workers, initializer=_pool_worker_signals)
    try:
        yield pool
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()


def featurize(smiles: list[str], rows: list[int] | None = None, source: str = "SMILES",
              workers: int | None = None, block: int = 2000, progress: bool = True) -> Featurized:
    """Featurise a list of SMILES on ``workers`` processes (default: all cores), with a
    progress bar; unusable SMILES are skipped and listed in ``.skipped``."""
    rows = list(range(1, len(smiles) + 1)) if rows is None else rows
    workers = workers or os.cpu_count() or 1
    blocks = [smiles[i:i + block] for i in range(0, len(smiles), block)]
    res = Featurized()
    bar = tqdm(total=len(smiles), desc=f"featurising {source}", unit="mol", disable=not progress,
               leave=False)
    if workers > 1 and len(blocks) > 1:
        with featurize_pool(workers) as pool:
            results = pool.imap(_featurize_block, blocks)
            _collect(results, blocks, rows, source, res, bar)
    else:
        _collect(map(_featurize_block, blocks), blocks, rows, source, res, bar)
    bar.close()
    return res


def _collect(results: Iterable, blocks, rows, source, res: Featurized, bar) -> None:
    pos = 0
    for blk, out in zip(blocks, results):
        for j, item in enumerate(out):
            if isinstance(item, str):
                res.skipped.append(Skipped(source, rows[pos + j], blk[j], item))
            else:
                res.arrays.append(item)
                res.index.append(pos + j)
        pos += len(blk)
        bar.update(len(blk))


def collate_arrays(arrays: list, y: np.ndarray | None = None) -> tuple[Data, dict]:
    """Collate featurised molecules into ``(data, slices)`` of an in-memory dataset without
    building one ``Data`` per molecule."""
    n_nodes = np.array([a[0].shape[0] for a in arrays], dtype=np.int64)
    n_edges = np.array([a[1].shape[1] for a in arrays], dtype=np.int64)
    node_slice = torch.from_numpy(np.concatenate([[0], np.cumsum(n_nodes)]))
    edge_slice = torch.from_numpy(np.concatenate([[0], np.cumsum(n_edges)]))
    x = np.concatenate([a[0] for a in arrays]) if arrays else np.zeros((0, 2), np.int64)
    ei = np.concatenate([a[1] for a in arrays], axis=1) if arrays else np.zeros((2, 0), np.int64)
    ea = np.concatenate([a[2] for a in arrays]) if arrays else np.zeros((0, 2), np.int64)
    data = Data(x=torch.from_numpy(x), edge_index=torch.from_numpy(ei), edge_attr=torch.from_numpy(ea))
    slices = {"x": node_slice, "edge_index": edge_slice, "edge_attr": edge_slice}
    if y is not None:
        data.y = torch.as_tensor(y, dtype=torch.float32).view(len(arrays), -1)
        slices["y"] = torch.arange(len(arrays) + 1)
    return data, slices


# ---------------------------------------------------------------------------------------
# CSV files


def open_text(path: Path) -> io.TextIOBase:
    """A text handle on a plain or gzip-compressed file."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    if path.suffix == ".gz":
        return _CheckedText(io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline=""), path)
    return _CheckedText(open(path, encoding="utf-8", newline=""), path)


class _CheckedText:
    """A text file's lines, where a read that fails (a truncated or corrupt gzip stream, bytes
    that are not UTF-8) is a :class:`DataError` naming the file and the line it reached."""

    def __init__(self, handle, path: Path):
        self.handle, self.path, self.line = handle, Path(path), 0

    def __iter__(self):
        while True:
            try:
                text = self.handle.readline()
            except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
                raise DataError(f"{self.path}:{self.line + 1}: the file is damaged or truncated "
                                f"({type(exc).__name__}: {exc})") from None
            if not text:
                return
            self.line += 1
            yield text

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.handle.close()


#: the largest magnitude a label may have: labels are trained and stored in float32, where a
#: larger number becomes inf
FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_targets(y, where) -> np.ndarray:
    """``y`` as float64, checked to hold labels one can train on: NaN (a missing label) or
    finite numbers within float32's range (magnitude at most :data:`FLOAT32_MAX`). The first
    other entry is a :class:`DataError` that ``where(index, value)`` names (``index``: its
    position in ``y``, a tuple). Every label goes through here: ``y`` given in Python and the
    cells of a file."""
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = np.argwhere(np.abs(y) > FLOAT32_MAX)
    if len(bad):
        at = tuple(int(i) for i in bad[0])
        v = float(y[at])
        why = "is not a finite number" if math.isinf(v) else (
            f"is outside float32's range (magnitude at most {FLOAT32_MAX:.8g}), in which labels are trained and "
            "stored; rescale the target (other units, or its logarithm)")
        more = f"; {len(bad)} such entries" if len(bad) > 1 else ""
        raise DataError(f"{where(at, v)} {why} (NaN marks a missing label){more}")
    return y


def check_label_map(label_map) -> dict[str, float] | None:
    """``label_map`` checked: text labels to numbers (``{"inactive": 0, "active": 1}``), or
    the command line's ``"inactive=0,active=1"``; ``None`` (or empty) is no map. Keys are
    compared with a label's text stripped of surrounding spaces."""
    if label_map is None or (isinstance(label_map, (str, dict)) and not label_map):
        return None
    if isinstance(label_map, str):
        pairs = [p.partition("=") for p in label_map.split(",") if p.strip()]
        if any(not sep or not k.strip() for k, sep, _ in pairs):
            raise ConfigError(f"label_map {label_map!r}: expected TEXT=NUMBER pairs separated by commas "
                              "(--label-map inactive=0,active=1)")
        label_map = {k: v for k, _, v in pairs}
    if not isinstance(label_map, dict):
        raise ConfigError(f"label_map must map text labels to numbers, e.g. {{'inactive': 0, 'active': 1}}; got "
                          f"{type(label_map).__name__}")
    out = {}
    for k, v in label_map.items():
        try:
            out[str(k).strip()] = float(v)
        except (TypeError, ValueError):
            raise ConfigError(f"label_map[{k!r}] = {v!r} is not a number") from None
    check_targets(np.asarray(list(out.values())), lambda at, v: f"label_map[{list(out)[at[0]]!r}] = {v!r}")
    return out


def _label_number(text: str, where: str, label_map: dict | None) -> float:
    """A label cell's number (NaN for an empty cell or "nan"): ``label_map``'s for a text it
    maps, else the cell read as a number, checked (:func:`check_targets`)."""
    text = text.strip()
    if label_map and text in label_map:
        return label_map[text]
    if text == "":
        return math.nan
    try:
        v = float(text)
    except ValueError:
        raise DataError(f"{where} is not a number (map text labels to numbers with label_map, e.g. "
                        f"label_map={{{text!r}: 1, ...}}; --label-map {text}=1,... on the command line)") from None
    check_targets(v, lambda at, value: where)
    return v


def _parse_label(cell: str, path: Path, line: int, col: str, label_map: dict | None = None) -> float:
    return _label_number(cell, f"{path}:{line}: label {cell.strip()!r} in column {col!r}", label_map)


#: labels inferred as numbers where at most this share of them is other than 0/1 get a warning
#: naming those values (a 0/1 column with a stray value is more likely a typo than a regression)
STRAY_SHARE = 0.05


def label_task(y: np.ndarray, task: str | None = None, source: str = "labels", rows=None, names=None) -> str:
    """The fine-tuning task of a ``molecules x tasks`` label matrix (NaN = missing):
    ``task`` itself, checked, or inferred when ``None``: ``"classification"`` when every label
    is 0 or 1, else ``"regression"``. A classification label other than 0, 1 or NaN is a
    :class:`DataError` naming it (``rows``: the file line or input position of each row,
    ``names``: the columns, both for the message)."""
    from ..choices import TASKS, check_choice

    if task is not None:
        check_choice("task", task, TASKS)
    y = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
    bad = np.argwhere(~np.isnan(y) & (y != 0) & (y != 1))
    if task is None:
        if len(bad) and y.shape[1] > 1:
            binary = sorted(set(range(y.shape[1])) - {int(t) for t in bad[:, 1]})
            if binary:
                cols = [names[t] if names is not None else f"task {t}" for t in binary]
                log.warning("%s: column(s) %s hold only 0 and 1 but are regressed with the numeric ones (one "
                            "fine-tuning has one task); to classify them, fine-tune them apart with "
                            "task='classification' (--task classification)", source, cols)
        labeled = int((~np.isnan(y)).sum())
        if len(bad) and len(bad) <= STRAY_SHARE * labeled:  # nearly all 0/1: a few strays decided it
            shown = "; ".join(f"row {rows[i] if rows is not None else i}"
                              f"{f' column {names[t]!r}' if names is not None else ''}: {float(y[i, t])!r}"
                              for i, t in (map(int, b) for b in bad[:3]))
            log.warning("%s: inferred regression from %d label(s) other than 0/1 among %d (%s%s); the rest are 0 or "
                        "1. To classify, fix or drop those rows (task='classification', --task classification, "
                        "refuses them); to regress, say task='regression' (--task regression)", source, len(bad),
                        labeled, shown, "; ..." if len(bad) > 3 else "")
        return "regression" if len(bad) else "classification"
    if task == "classification" and len(bad):
        i, t = (int(v) for v in bad[0])
        row = rows[i] if rows is not None else i
        col = f" in column {names[t]!r}" if names is not None else f" (task {t})"
        raise DataError(f"{source}, row {row}: label {float(y[i, t])!r}{col} is not 0, 1 or missing (task="
                        f"'classification' takes binary labels, one column per task; task='regression' takes "
                        f"numbers); {len(bad)} such entr{'y' if len(bad) == 1 else 'ies'}")
    return task


def read_labeled_csv(path: Path, smiles_col: str, label_cols: list[str] | None,
                     exclude: tuple[str, ...] = (), label_map: dict | None = None
                     ) -> tuple[list[str], list[int], np.ndarray, list[str]]:
    """SMILES, their line numbers, a ``rows x tasks`` label matrix (numbers; NaN = missing)
    and the task names (:func:`label_task` says whether they are binary). ``label_cols=None`` takes every column but the SMILES and ``exclude``.
    ``label_map``: text labels to numbers (:func:`check_label_map`), applied to each cell before
    it is read as a number.
    An SDF file (``.sdf``, ``.sdf.gz``) is read by :func:`read_sdf` instead: its property
    fields are the columns, its record numbers the lines, and ``smiles_col`` is not used."""
    path = Path(path)
    label_map = check_label_map(label_map)
    if is_sdf(path):
        return read_sdf(path, label_cols, exclude, label_map)
    with open_text(path) as f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise DataError(f"{path}: the file is empty") from None
        except (csv.Error, UnicodeDecodeError, OSError) as exc:
            raise DataError(f"{path}:1: cannot read the header ({exc})") from None
        header = [h.strip() for h in header]
        if smiles_col not in header:
            raise DataError(f"{path}:1: no SMILES column {smiles_col!r}; columns are {header}")
        twice = sorted({h for h in header if header.count(h) > 1})
        if twice:
            raise DataError(f"{path}:1: column(s) {twice} appear more than once in the header")
        if label_cols is None:
            label_cols = [h for h in header if h != smiles_col and h not in exclude]
        missing = [c for c in label_cols if c not in header]
        if missing:
            raise DataError(f"{path}:1: no label column(s) {missing}; columns are {header}")
        if not label_cols:
            raise DataError(f"{path}: no label columns")
        si = header.index(smiles_col)
        li = [header.index(c) for c in label_cols]
        smiles, lines, labels = [], [], []
        line = 1
        try:
            for line, row in _records(reader):
                if not row:
                    continue
                if len(row) != len(header):
                    raise DataError(f"{path}:{line}: {len(row)} fields, the header has {len(header)}")
                smiles.append(row[si])
                lines.append(line)
                labels.append([_parse_label(row[i], path, line, c, label_map) for i, c in zip(li, label_cols)])
        except (csv.Error, UnicodeDecodeError, EOFError, OSError) as exc:
            raise DataError(f"{path}:{line + 1}: cannot read the file ({exc})") from None
    if not smiles:
        raise DataError(f"{path}: no molecules below the header")
    y = np.asarray(labels, dtype=np.float32).reshape(len(smiles), len(label_cols))
    return smiles, lines, y, list(label_cols)


def _records(reader) -> Iterator[tuple[int, list[str]]]:
    """``(line, row)`` of a csv reader: the file line where each record starts (a quoted
    field may span lines)."""
    prev = reader.line_num
    for row in reader:
        yield prev + 1, row
        prev = reader.line_num


def iter_smiles(path: Path, smiles_col: str | None = None) -> Iterator[tuple[int, str]]:
    """Stream ``(line, smiles)`` from a SMILES file: a CSV with a header naming the SMILES
    column (``smiles_col``, else a column called SMILES in any case, else the first), or a
    headerless ``.smi`` file (first whitespace-separated field of each line). An SDF file
    gives ``(record, smiles)`` (:func:`read_sdf`; a record RDKit cannot read gives ``""``)."""
    path = Path(path)
    if is_sdf(path):
        smiles, records, _, _ = read_sdf(path, [])
        yield from zip(records, smiles)
        return
    with open_text(path) as f:
        name = path.name.lower().removesuffix(".gz")
        if name.endswith((".smi", ".txt")) and smiles_col is None:
            for line, text in enumerate(f, start=1):
                parts = text.split()
                if parts:
                    yield line, parts[0]
            return
        reader = csv.reader(f)
        try:
            header = [h.strip() for h in next(reader, [])]
        except (csv.Error, UnicodeDecodeError, EOFError, OSError) as exc:
            raise DataError(f"{path}:1: cannot read the header ({exc})") from None
        if not header:
            raise DataError(f"{path}: the file is empty")
        if smiles_col is not None:
            if smiles_col not in header:
                raise DataError(f"{path}:1: no SMILES column {smiles_col!r}; columns are {header}")
            col = header.index(smiles_col)
        else:
            lower = [h.lower() for h in header]
            col = lower.index("smiles") if "smiles" in lower else 0
        line = 1
        try:
            for line, row in _records(reader):
                if row:
                    yield line, row[col] if col < len(row) else ""
        except (csv.Error, UnicodeDecodeError, EOFError, OSError) as exc:
            raise DataError(f"{path}:{line + 1}: cannot read the file ({exc})") from None


# ---------------------------------------------------------------------------------------
# SDF files


#: file names read as SDF (``.gz`` allowed too)
SDF_SUFFIXES = (".sdf", ".sd")


def is_sdf(path) -> bool:
    """Whether ``path`` names an SDF file (by its suffix, ``.gz`` allowed)."""
    return Path(path).name.lower().removesuffix(".gz").endswith(SDF_SUFFIXES)


def _sdf_reason(block: str) -> str:
    """RDKit's reason why an SDF record gives no molecule (its logged error), for the message."""
    Chem = rdkit()
    from rdkit import rdBase

    capture = getattr(rdBase, "CaptureErrorLog", None)
    if capture is None:  # pragma: no cover - RDKit before 2025
        return "RDKit cannot read it"
    with capture() as cap:
        Chem.MolFromMolBlock(block)
    lines = []
    for t in cap.messages.splitlines():
        t = re.sub(r"^\[[0-9:. ]+\]\s*", "", t).strip()
        if t.startswith(("----", "Stacktrace", "Violation occurred", "Failed Expression")):
            break  # RDKit's invariant reports go on with a C++ stack trace, which says nothing to a user
        if t and not set(t) <= {"*"}:
            lines.append(t)
    return "; ".join(lines[:3])[:300] or "RDKit cannot read it"


def _sdf_number(value: str, path: Path, record: int, name: str, label_map: dict | None = None) -> float:
    return _label_number(value, f"{path}: record {record}: label {value.strip()!r} in field {name!r}", label_map)


def read_sdf(path: Path, label_cols: list[str] | None = None,
             exclude: tuple[str, ...] = (), label_map: dict | None = None
             ) -> tuple[list[str], list[int], np.ndarray, list[str]]:
    """An SDF file's molecules as ``(smiles, records, labels, fields)``, in the form of
    :func:`read_labeled_csv`: each record's canonical isomeric SMILES (RDKit's
    ``SDMolSupplier``, hydrogens removed), its record number (1 = the first), a ``records x
    fields`` float32 label matrix (NaN = missing) and the property fields read as labels.

    ``label_cols``: the property fields to read (each must occur in the file); ``None`` takes
    every field whose values are all numbers (or empty), less ``exclude`` (text fields such as a
    name are left out, and the log says which were taken); ``[]`` reads no labels. A record
    RDKit cannot read keeps its place with the SMILES ``""`` and NaN labels, and is named by
    its record number and RDKit's reason in a warning (the featuriser then skips it).
    ``label_map``: text labels to numbers, as :func:`read_labeled_csv` takes it."""
    label_map = check_label_map(label_map)
    Chem = rdkit()
    path = Path(path)
    with open_text(path) as f:
        text = "".join(f)
    supplier = Chem.SDMolSupplier()
    supplier.SetData(text, sanitize=True, removeHs=True)
    from rdkit import rdBase

    mols, fields = [], {}
    with rdBase.BlockLogs():  # each unreadable record is reported once, below, with its number
        for i in range(len(supplier)):
            mol = supplier[i]
            props = mol.GetPropsAsDict(includePrivate=False, includeComputed=False) if mol is not None else {}
            mols.append((mol, {k: str(v) for k, v in props.items()}))
            for k in props:
                fields.setdefault(k, None)
    if not mols:
        raise DataError(f"{path}: no records (an SDF file has records ending in '$$$$')")
    bad = [(r, _sdf_reason(supplier.GetItemText(r - 1))) for r, (m, _) in enumerate(mols, start=1) if m is None]
    for r, why in bad[:10]:
        log.warning("%s: record %d cannot be read: %s (skipped)", path, r, why)
    if len(bad) > 10:
        log.warning("%s: ... and %d more records that cannot be read", path, len(bad) - 10)
    names = list(fields)
    if label_cols is None:
        label_cols = []
        for name in names:
            if name in exclude:
                continue
            try:
                for r, (m, props) in enumerate(mols, start=1):
                    _sdf_number(props.get(name, ""), path, r, name, label_map)
            except DataError:
                continue
            label_cols.append(name)
        if not label_cols:
            raise DataError(f"{path}: no numeric property field to read as labels; fields are {names}")
        log.info("%s: label fields %s (the numeric ones of %s)", path, label_cols, names)
    missing = [c for c in label_cols if c not in fields]
    if missing:
        raise DataError(f"{path}: no property field(s) {missing}; fields are {names}")
    smiles, labels = [], []
    for r, (mol, props) in enumerate(mols, start=1):
        smiles.append(Chem.MolToSmiles(mol) if mol is not None else "")
        labels.append([_sdf_number(props.get(c, ""), path, r, c, label_map) if mol is not None else math.nan
                       for c in label_cols])
    y = np.asarray(labels, dtype=np.float32).reshape(len(smiles), len(label_cols))
    return smiles, list(range(1, len(smiles) + 1)), y, list(label_cols)
