"""Molecules from Python: SMILES to graphs, the shipped pre-trained encoder, embeddings, and
fine-tuning to a multi-task predictor.

* :func:`from_smiles` featurises a list of SMILES (Hu et al. 2020's categorical atom and bond
  features, :func:`autogcl.data.molecules.smiles_to_graph`); entries that do not parse are
  skipped, counted and reported by index, never fatal unless none parses.
* :class:`MoleculeEncoder` is the molecule GIN (5 x 300, mean pooling). ``MoleculeEncoder.load``
  takes a shipped encoder by name (``"autogcl-moses-fullx1"``, see ``pretrained/README.md``)
  or the ``encoder.pt`` of an ``autogcl transfer pretrain`` run; ``embed(smiles)`` gives a
  ``molecules x 300`` array and the input positions it covers; ``finetune(smiles, y)`` trains a
  :class:`MoleculePredictor`: the one fine-tuning recipe (``autogcl transfer finetune`` runs it
  per seed), for binary tasks (masked binary cross-entropy over the labeled entries of ``y``,
  NaN = missing, as in MoleculeNet) or numeric targets (standardised, masked MSE).
* :class:`MoleculePredictor` ``predict(smiles)`` gives one probability per task, or values in
  the targets' units; ``save``/``load`` round-trip it exactly, read with
  ``torch.load(weights_only=True)``.

See the "Molecules" section of ``docs/api.md``.
"""

from __future__ import annotations

import csv
import logging
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader

from . import __version__
from .atomic import atomic_save, check_weights, with_digest
from .choices import (BN_RUNNING, BN_SETTLED, FINETUNE_DEFAULTS, LR_CONSTANT, LR_COSINE, READOUT_MEAN,  # noqa: F401
                      READOUT_SCALED_SUM, REGRESSION_DEFAULTS, check_choice)
from .data.molecules import (VOCAB, check_label_map, check_targets, featurize, is_sdf, iter_smiles, label_task,
                             open_text, read_labeled_csv, smiles_to_graph)
from .devices import deterministic_kernels, resolve_device
from .errors import ConfigError, DataError
from .eval.metrics import regression_scores, roc_auc
from .models.embed import embed as _embed
from .models.embed import module_device
from .models.mol_gin import ENCODER_FORMAT, MolEncoder, MolPredictor, check_readout, load_encoder, save_encoder

__all__ = ["DEFAULT_ENCODER", "MoleculeEncoder", "MoleculePredictor", "Molecules", "SkippedSmiles",
           "as_molecules", "from_smiles", "pretrained_encoders", "resolve_encoder", "smiles_to_graph"]

log = logging.getLogger(__name__)

#: the folder of the shipped encoders (``pretrained/`` of the source tree)
PRETRAINED_DIR = Path(__file__).resolve().parent.parent / "pretrained"
#: the encoder the project recommends (``pretrained/README.md``)
DEFAULT_ENCODER = "autogcl-moses-fullx1"
PREDICTOR_FORMAT = "autogcl-molecule-predictor-1"
#: the file formats of this module, which :func:`autogcl.load` hands to :func:`load_file`
FORMATS = (ENCODER_FORMAT, PREDICTOR_FORMAT)
_OTHER_FORMATS = {"autogcl-model-1": "an AutoGCL/GraphCL model for graphs with node features (use autogcl.load)"}


# ---------------------------------------------------------------------------------- SMILES


@dataclass(frozen=True)
class SkippedSmiles:
    """An input entry that gave no graph: its position in the input, the entry, and why."""

    index: int
    smiles: object
    reason: str

    def __str__(self) -> str:
        return f"SMILES {self.index} ({self.smiles!r}): {self.reason}"


class Molecules(Sequence):
    """The graphs of the SMILES that parsed (a sequence of ``Data``, usable wherever PyG takes
    a dataset), with ``index`` (each graph's position in the input), ``smiles`` (its SMILES),
    ``skipped`` (:class:`SkippedSmiles`) and ``num_input``."""

    def __init__(self, graphs: list[Data], index: np.ndarray, smiles: list[str], skipped: list[SkippedSmiles],
                 num_input: int):
        self.graphs, self.index, self.smiles = graphs, np.asarray(index, dtype=np.int64), smiles
        self.skipped, self.num_input = skipped, num_input

    def __len__(self) -> int:
        return len(self.graphs)

    def __getitem__(self, i):
        return self.graphs[i]

    def __repr__(self) -> str:
        return f"Molecules({len(self)} graphs of {self.num_input} SMILES, {len(self.skipped)} skipped)"


def _labels(y, n: int, label_map: dict | None = None) -> np.ndarray:
    """``y`` as a float ``n x tasks`` matrix (NaN = missing), checked: one row per SMILES,
    numbers or NaN within float32's range (:func:`check_targets`; whether they are binary is
    the task's business: :func:`label_task`). ``label_map`` (:func:`check_label_map`) turns
    text labels into numbers first."""
    label_map = check_label_map(label_map)
    if label_map:
        y = np.asarray(y, dtype=object)
        flat = [label_map.get(v.strip(), v) if isinstance(v, str) else v for v in y.reshape(-1)]
        y = np.asarray(flat, dtype=object).reshape(y.shape)
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise _not_numbers(y, exc) from None
    given = tuple(y.shape)
    if y.ndim == 1:
        y = y.reshape(-1, 1)
    if y.ndim != 2 or y.shape[0] != n:
        raise DataError(f"labels y have shape {given}: expected one row per SMILES ({n} rows; a vector, "
                        "or a molecules x tasks matrix)")

    def where(at, v):  # as the user indexes y: y[i] of a vector, y[i, t] of a matrix
        return f"label y[{', '.join(map(str, at if len(given) == 2 else at[:1]))}] = {v!r} (SMILES {at[0]})"

    return check_targets(y, where)


def _not_numbers(y, exc: Exception) -> DataError:
    """The error for labels that are not numbers, naming the first such entry and ``label_map``."""
    arr = np.asarray(y, dtype=object)
    for at, v in np.ndenumerate(arr):  # the error path only: find the first entry float() refuses
        try:
            float(v)
        except (TypeError, ValueError):
            where = ", ".join(map(str, at))
            hint = (f"; map text labels to numbers with label_map, e.g. label_map={{{v.strip()!r}: 1, ...}}"
                    if isinstance(v, str) else "")
            return DataError(f"label y[{where}] = {v!r} (SMILES {at[0]}) is not a number (NaN marks a missing "
                             f"label){hint}")
    return DataError(f"labels y must be numbers (NaN for a missing label): {exc}")


def from_smiles(smiles, y=None, *, workers: int | None = None, progress: bool = False,
                report: bool = True) -> Molecules:
    """The graphs of a list of SMILES (Hu et al. 2020 features: ``x`` = atom type and chirality
    ids, ``edge_attr`` = bond type and direction ids, both ``long``).

    Entries that do not parse (or are empty, or not strings, such as a pandas NaN) are skipped:
    each is logged with its index and string, and listed in ``.skipped``; a
    :class:`~autogcl.DataError` only when none parses. ``y`` (optional): labels, a vector or a
    ``SMILES x tasks`` matrix of numbers (0/1 for binary tasks) with NaN for a missing label,
    stored as each graph's ``y`` (``1 x tasks`` float). ``smiles`` may also be the path of a
    CSV or ``.smi`` file (a ``Path``, or a string ending in ``.csv``, ``.smi``, ``.txt`` or
    those with ``.gz``): its SMILES column (one named ``smiles`` in any case, else the first)
    is read. ``workers``: featurising processes (default: one below 5,000 SMILES, else every
    core). ``report=False``: no warning (the caller reports ``.skipped``)."""
    if isinstance(smiles, Molecules):
        return smiles
    smiles = _smiles_of_file(smiles)
    if isinstance(smiles, str):
        smiles = [smiles]
    try:
        smiles = list(smiles)
    except TypeError:
        raise DataError(f"expected a list of SMILES strings, got {type(smiles).__name__}") from None
    n = len(smiles)
    if n == 0:
        raise DataError("no SMILES given (an empty list)")
    labels = None if y is None else _labels(y, n)
    strings = [i for i, s in enumerate(smiles) if isinstance(s, str)]
    skipped = [SkippedSmiles(i, s, f"not a string ({type(s).__name__})") for i, s in enumerate(smiles)
               if not isinstance(s, str)]
    if workers is None:
        workers = 1 if len(strings) < 5000 else None
    feats = featurize([smiles[i] for i in strings], rows=strings, source="SMILES", workers=workers,
                      progress=progress)
    skipped = sorted(skipped + [SkippedSmiles(s.row, s.smiles, s.reason) for s in feats.skipped],
                     key=lambda s: s.index)
    index = np.asarray([strings[j] for j in feats.index], dtype=np.int64)
    if skipped:
        shown = "; ".join(map(str, skipped[:10])) + (f"; ... and {len(skipped) - 10} more" if len(skipped) > 10 else "")
        if not len(index):
            raise DataError(f"none of the {n} SMILES could be parsed: {shown}")
        if report:
            log.warning("%d of %d SMILES skipped: %s", len(skipped), n, shown)
    graphs = []
    for k, (x, ei, ea) in enumerate(feats.arrays):
        g = Data(x=torch.from_numpy(x), edge_index=torch.from_numpy(ei), edge_attr=torch.from_numpy(ea))
        if labels is not None:
            g.y = torch.from_numpy(labels[index[k]].astype(np.float32)).view(1, -1)
        graphs.append(g)
    return Molecules(graphs, index, [smiles[i] for i in index], skipped, n)


#: file names read as molecule files where a list of SMILES is expected (``.gz`` allowed too):
#: SMILES files, and SDF files (:func:`autogcl.data.molecules.read_sdf`, each record's SMILES)
SMILES_FILES = (".csv", ".smi", ".txt", ".sdf", ".sd")


def _smiles_of_file(data):
    """The SMILES of a file when ``data`` names one (a ``Path``, or a string with a SMILES
    file's suffix, which no SMILES has), else ``data`` itself; a missing file is an error
    naming it, never a SMILES that does not parse."""
    if isinstance(data, str):
        name = data.strip().lower().removesuffix(".gz")
        if not name.endswith(SMILES_FILES):
            return data
    elif not isinstance(data, Path):
        return data
    path = Path(data)
    if not path.is_file():
        raise DataError(f"{path}: {'a folder' if path.is_dir() else 'no such file'} (a path of a SMILES or SDF "
                        f"file ({', '.join(SMILES_FILES)}) is read as one; give a list to pass SMILES)")
    smiles = [s for _, s in iter_smiles(path)]
    if not smiles:
        raise DataError(f"{path}: no SMILES below the header")
    log.info("%s: read %d %s", path, len(smiles), "records" if is_sdf(path) else "SMILES")
    return smiles


def _label_names(y) -> list[str] | None:
    """``y`` as a list of column names when it names label columns (a string or strings)."""
    names = [y] if isinstance(y, str) else y
    if isinstance(names, (list, tuple)) and names and all(isinstance(c, str) for c in names):
        return list(names)
    return None


def _names_file(data) -> bool:
    """Whether ``data`` is the path of a SMILES or SDF file (a ``Path``, or a string with such a suffix)."""
    return isinstance(data, Path) or (isinstance(data, str) and data.strip().lower().removesuffix(".gz")
                                      .endswith(SMILES_FILES))


def _column_names(data, y) -> list[str] | None:
    """The label columns ``y`` names when ``data`` is a file (strings in ``y`` are otherwise labels)."""
    return _label_names(y) if _names_file(data) else None


def _labeled_file(data, y, label_map: dict | None = None):
    """``(smiles, labels, names)`` when ``data`` names a SMILES or SDF file and ``y`` names its
    label columns (property fields of an SDF; ``label_map``: their text labels' numbers), else
    ``None`` (strings in ``y`` with ``data`` not a file are text labels when ``label_map`` is given)."""
    names = _label_names(y)
    if names is None:
        return None
    if not _names_file(data):
        if check_label_map(label_map):
            return None  # text labels, which label_map turns into numbers
        shown = repr(y) if len(repr(y)) <= 80 else repr(y)[:77] + "..."
        raise DataError(f"y={shown} holds text, read as the names of label columns, which only a SMILES or SDF file "
                        "has: give the file's path as data, or the labels themselves as y; text labels (such as "
                        f"{names[0]!r}) need label_map, e.g. label_map={{{names[0]!r}: 1, ...}}")
    path = Path(data)
    smiles, _, labels, tasks = read_labeled_csv(path, _smiles_column(path), list(names), label_map=label_map)
    return smiles, labels.astype(np.float64), tasks


def _smiles_column(path: Path) -> str:
    """The SMILES column of a CSV, as :func:`iter_smiles` finds it (unused for an SDF file)."""
    if is_sdf(path):
        return ""
    with open_text(path) as f:
        header = next(csv.reader(f), [])
    lower = [h.strip().lower() for h in header]
    if not header:
        raise DataError(f"{path}: the file is empty")
    return header[lower.index("smiles")].strip() if "smiles" in lower else header[0].strip()


def as_molecules(data, y=None, **kw) -> Molecules:
    """``data`` as :class:`Molecules`: SMILES go through :func:`from_smiles`; graphs (a
    sequence of ``Data``, e.g. a saved :class:`Molecules` list) are checked to carry this
    featurisation (``long`` ``x`` of atom and chirality ids, ``edge_attr`` of bond type and
    direction ids), with an error naming the first graph that does not."""
    if isinstance(data, Molecules):
        return data
    if isinstance(data, Data):
        data = [data]
    graphs = not isinstance(data, (str, bytes)) and hasattr(data, "__len__") and hasattr(data, "__getitem__")
    if graphs and len(data) and isinstance(data[0], Data):  # a list of Data or a PyG dataset
        data = [data[i] for i in range(len(data))]
        for i, g in enumerate(data):
            x, ea = g.get("x"), g.get("edge_attr")
            if x is None or x.dtype != torch.long or x.dim() != 2 or x.shape[1] != 2 or ea is None or \
                    ea.dtype != torch.long or ea.dim() != 2 or ea.shape[1] != 2:
                raise DataError(f"graph {i} is not a featurised molecule: the molecule encoder reads long x "
                                f"(atoms x 2: atom type, chirality) and long edge_attr (bonds x 2: type, direction), "
                                f"as from_smiles makes them; got x {_shape(x)}, edge_attr {_shape(ea)}")
            if not g.num_nodes:
                raise DataError(f"graph {i} has no atoms")
        return Molecules(list(data), np.arange(len(data)), [], [], len(data))
    return from_smiles(data, y, **kw)


def _shape(t) -> str:
    return "missing" if t is None else f"{str(t.dtype).removeprefix('torch.')} {tuple(t.shape)}"


def _loader(mols: Molecules, batch_size: int, **kw) -> DataLoader:
    if batch_size < 1:
        raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
    return DataLoader(mols.graphs, batch_size=batch_size, **kw)


# ---------------------------------------------------------------------------------- files


def pretrained_encoders() -> list[str]:
    """The names of the shipped encoders (files in ``pretrained/``)."""
    return sorted(p.stem for p in PRETRAINED_DIR.glob("*.pt")) if PRETRAINED_DIR.is_dir() else []


def resolve_encoder(name_or_path: str | Path) -> Path:
    """The file of a shipped encoder's name (``autogcl-moses-fullx1``, with or without ``.pt``),
    or the path itself (a folder too: loading it says it is not a file); a clear error when it is
    neither."""
    path = Path(name_or_path)
    if path.exists():
        return path
    shipped = _shipped_encoder(path)
    if shipped is not None:
        return shipped
    known = pretrained_encoders()
    raise DataError(f"{name_or_path}: no such encoder file, nor a shipped encoder's name (shipped: "
                    f"{', '.join(known) if known else f'none found in {PRETRAINED_DIR}'})")


def encoder_ref(checkpoint: str | Path | None) -> str | None:
    """How a run records the encoder it fine-tunes (``--checkpoint`` in ``config.json``), so that
    the run resumes from any checkout: a shipped encoder by its name (``autogcl-moses-fullx1``),
    whether given by name, as a file of that name with the same bytes (this checkout's
    ``pretrained/`` file, another checkout's), or as the path of its file in another checkout that
    is not here (``.../pretrained/autogcl-moses-fullx1.pt``, as runs before names were recorded
    wrote it); any other file by its absolute path; ``None`` stays ``None``."""
    import filecmp

    if checkpoint is None:
        return None
    path = Path(checkpoint)
    if path.exists():
        resolved = path.resolve()
        shipped = PRETRAINED_DIR / resolved.name
        same = resolved.suffix == ".pt" and shipped.is_file() and (
            resolved == shipped.resolve() or filecmp.cmp(resolved, shipped, shallow=False))
        return resolved.stem if same else str(resolved)
    if _shipped_encoder(path) is not None:  # a bare name
        return path.stem if path.suffix == ".pt" else path.name
    if path.parent.name == PRETRAINED_DIR.name and path.suffix == ".pt" and (PRETRAINED_DIR / path.name).is_file():
        return path.stem  # another checkout's shipped file
    return str(path.resolve())


def _shipped_encoder(path: Path) -> Path | None:
    """The file of the shipped encoder that ``path`` names (a bare name, ``.pt`` optional), else ``None``."""
    shipped = PRETRAINED_DIR / (path.name if path.suffix == ".pt" else path.name + ".pt")
    return shipped if len(path.parts) == 1 and shipped.is_file() else None


def _read(path: Path, device) -> dict:
    """The dict in an autogcl file, read safely (``weights_only``), with clear errors."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: {'a folder, not a model file' if path.is_dir() else 'no such file'}")
    try:
        blob = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:  # torch raises many types for a damaged or unsafe file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise DataError(f"{path}: not a readable autogcl file ({type(exc).__name__}: {first})") from exc
    if not isinstance(blob, dict):
        raise DataError(f"{path}: not an autogcl file (holds a {type(blob).__name__})")
    return blob


def _wrong_kind(path: Path, blob: dict, wanted: str, hint: str) -> DataError:
    fmt = blob.get("format")
    what = {ENCODER_FORMAT: "a molecule encoder (use autogcl.MoleculeEncoder.load)",
            PREDICTOR_FORMAT: "a fine-tuned molecule predictor (use autogcl.MoleculePredictor.load)",
            **_OTHER_FORMATS}.get(fmt, f"format {fmt!r}" if fmt else "no autogcl format")
    return DataError(f"{path}: {what}, not {wanted}{hint}")


def _fill(module: nn.Module, state: dict, path: Path, what: str) -> None:
    """Load ``state`` strictly, naming the file when it belongs to another architecture."""
    try:
        module.load_state_dict(state)
    except RuntimeError as exc:
        detail = " ".join(str(exc).split())[:300]
        raise DataError(f"{path}: its weights do not fit the {what} it declares (another architecture? "
                        f"{detail})") from None


def load_file(path: str | Path, device="cpu") -> MoleculeEncoder | MoleculePredictor:
    """A molecule encoder or predictor from its file, whichever it holds."""
    blob = _read(Path(path), resolve_device(device))
    if blob.get("format") == PREDICTOR_FORMAT:
        return MoleculePredictor.load(path, device)
    return MoleculeEncoder.load(path, device)


# ---------------------------------------------------------------------------------- encoder


class MoleculeEncoder(nn.Module):
    """The molecule GIN of Hu et al. 2020 (``num_layers`` x ``dim``, atom-type/chirality and
    bond-type/direction embeddings, mean pooling) as a library object. Build a fresh one
    (random weights) or ``MoleculeEncoder.load(name_or_path)`` a pre-trained one."""

    def __init__(self, dim: int = 300, num_layers: int = 5, vocab: dict | None = None, meta: dict | None = None):
        super().__init__()
        if dim < 1 or num_layers < 1:
            raise ConfigError(f"dim and num_layers must be at least 1 (got {dim}, {num_layers})")
        self.encoder = MolEncoder(vocab or VOCAB, dim, num_layers)
        self.meta = dict(meta or {})

    @property
    def out_channels(self) -> int:
        return self.encoder.out_dim

    @property
    def config(self) -> dict:
        return self.encoder.config()

    @property
    def device(self) -> torch.device:
        return module_device(self)

    @classmethod
    def load(cls, name_or_path: str | Path = DEFAULT_ENCODER, device="cpu") -> MoleculeEncoder:
        """A shipped encoder by name (:func:`pretrained_encoders`) or an encoder file (the
        ``encoder.pt`` of ``autogcl transfer pretrain``, or :meth:`save`'s), read with
        ``weights_only=True``; a file of another kind or architecture is a clear error."""
        path = resolve_encoder(name_or_path)
        blob = _read(path, "cpu")
        if blob.get("format") != ENCODER_FORMAT:
            raise _wrong_kind(path, blob, "a molecule encoder", " (an encoder.pt of `autogcl transfer pretrain`, or "
                              "a shipped encoder's name)")
        state, arch, meta = load_encoder(path)
        try:
            enc = cls(int(arch["dim"]), int(arch["num_layers"]), arch.get("vocab", VOCAB), meta)
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: damaged architecture record {arch!r} ({exc})") from None
        _fill(enc.encoder, state, path, "molecule GIN")
        enc.source = str(path)
        return enc.to(resolve_device(device))

    def save(self, path: str | Path) -> Path:
        """Write the encoder file (the format ``transfer finetune --checkpoint`` reads) atomically."""
        save_encoder(self.encoder, path, self.meta)  # load_encoder maps the weights to the CPU
        return Path(path)

    def forward(self, batch) -> torch.Tensor:
        return self.encoder(batch)

    @torch.no_grad()
    def embed(self, smiles, batch_size: int = 256, device=None) -> tuple[np.ndarray, np.ndarray]:
        """``(embeddings, index)``: a float32 ``molecules x out_channels`` array (eval mode, mean
        pooled) of the SMILES that parse, and their positions in ``smiles``. ``smiles``: a list
        of SMILES, :func:`from_smiles`'s result or molecule graphs (:func:`as_molecules`).
        ``device``: where to compute (default: the encoder's)."""
        mols = as_molecules(smiles)
        if device is not None:
            self.to(resolve_device(device))
        emb, _ = _embed(self.encoder, _loader(mols, batch_size))
        return emb.numpy(), mols.index

    def finetune(self, data, y=None, *, tasks: Sequence[str] | None = None, task: str | None = None,
                 label_map: dict | None = None, preset: str | None = None, epochs: int | None = None, batch_size: int | None = None,
                 lr: float | None = None, weight_decay: float | None = None, dropout: float | None = None,
                 readout: str | None = None, split=None, frac: tuple[float, float, float] | None = None, selection: str | None = None,
                 lr_schedule: str | None = None, bn_stats: str | None = None, evaluate=None,
                 from_scratch: bool = False, seed: int = 0, device="auto",
                 checkpoint: str | Path | None = None, progress: bool | None = None,
                 desc: str = "fine-tuning") -> MoleculePredictor:
        """A :class:`MoleculePredictor` fine-tuned from this encoder (which is not changed): the
        one fine-tuning recipe of autogcl, which ``autogcl transfer finetune`` runs per seed.

        ``data``: SMILES (with labels ``y``: a vector, or a ``SMILES x tasks`` matrix, NaN for a
        missing label), the path of a SMILES CSV or an SDF file with ``y`` the name(s) of its label
        column(s) or property field(s) (``finetune("train.sdf", y="SOL")``), :func:`from_smiles`'s result, molecule graphs with ``y``, or a labeled
        molecule dataset (:func:`autogcl.data.load_moleculenet`, ``load_molecule_csv``).
        ``task``: ``"classification"`` (binary labels: masked binary cross-entropy, ROC-AUC) or
        ``"regression"`` (numbers: targets standardised with the training part's mean and std
        per task, masked MSE; RMSE, MAE and R² in the original units); ``None`` infers it from
        the labels (all 0/1: classification) and says so in the log. ``label_map``: numbers for
        text labels, applied to ``y`` (or the file's label columns) before they are read as
        numbers, e.g. ``{"inactive": 0, "active": 1}``; a text it does not map is an error.

        The recipe's options (``None``: the preset's value, else the default in brackets):
        ``epochs`` (30), ``batch_size`` (32), ``lr`` (0.001, Adam), ``weight_decay`` (0),
        ``dropout`` (0.5, inside the GIN; 0 for a regression), ``readout`` (``"mean"``: the mean of the atoms'
        representations, as the encoders were pre-trained; ``"sum"``: their sum, which grows with
        the molecule, for size-additive targets such as logP; ``"scaled_sum"``: their sum divided
        by the training molecules' mean atom count, saved with the predictor, which grows with
        the molecule as the sum does on the scale of the mean; ``autogcl.choices.READOUTS``),
        ``split`` (``"none"``: train on every molecule;
        ``"scaffold"``: Bemis-Murcko scaffolds, as the transfer protocol; ``"random"``,
        drawn from ``seed``; or a dict of index lists ``{"train", "valid", "test"}``),
        ``frac`` ((0.8, 0.1, 0.1), the split's fractions), ``selection`` (``"last"``: the
        last epoch's weights; ``"val"``: those of the epoch with the best validation score,
        ROC-AUC or, for regression, the lowest RMSE), ``lr_schedule`` (``"constant"``; ``"cosine"``,
        the default of a regression: ``lr * (1 + cos(pi * (epoch - 1) / epochs)) / 2`` in each epoch,
        torch's ``CosineAnnealingLR(T_max=epochs)`` stepped per epoch (:func:`autogcl.train.finetune.cosine_lr`);
        ``autogcl.choices.LR_SCHEDULES``) and ``bn_stats`` (``"running"``: the BatchNorms predict
        with the running averages training leaves; ``"settled"``: with the statistics of the
        current weights over the training molecules, set before every scoring and after the
        fit; ``autogcl.choices.BN_STATS``). ``preset="paper"`` is the transfer
        protocol of the AutoGCL paper's Table 4 (``autogcl.choices.FINETUNE_PRESETS``: 100
        epochs, batch 32, lr 0.001, dropout 0.5, scaffold split 80/10/10, val selection);
        options given here override it.

        Every epoch the validation and test parts are scored in eval mode (``val_auc``,
        ``test_auc``; or ``val_rmse``, ``val_mae``, ``val_r2``, ``test_...``) and
        ``evaluate(predictor, epoch)`` (your callback) may add a dict of its own; the rows are
        ``predictor.history``. ``from_scratch=True`` starts from random weights drawn from
        ``seed`` (this encoder's architecture only: the "No pretrain" row). ``seed`` fixes the
        initial head, the batch order and dropout. ``checkpoint``: a file to checkpoint to and
        resume from. ``device``: ``"auto"``, ``"cpu"``, ``"cuda[:N]"`` or an
        :class:`autogcl.devices.Engine`."""
        from .data.batching import GraphLoader, GraphStore
        from .devices import engine_of
        from .models.norm import settle_batchnorm
        from .seeding import seed_everything
        from .train import FinetuneStrategy, Trainer, check_fit_plan, check_report
        from .train.finetune import cosine_lr
        from .train.optim import adam

        given = {"epochs": epochs, "batch_size": batch_size, "lr": lr, "weight_decay": weight_decay,
                 "dropout": dropout, "readout": readout, "split": split, "frac": frac, "selection": selection,
                 "lr_schedule": lr_schedule, "bn_stats": bn_stats}
        opts = _recipe(preset, **given)
        graphs, labels, smiles, mols = _labeled(data, y, label_map)
        num_tasks = int(labels.shape[1])
        if tasks is None:
            tasks = _column_names(data, y) or (getattr(data, "meta", None) or {}).get("tasks")
        if tasks is not None and len(tasks) != num_tasks:
            raise DataError(f"{len(tasks)} task names for {num_tasks} label column(s)")
        parts = _split_parts(opts["split"], len(labels), smiles, opts["frac"], seed)
        train = parts["train"]
        if np.isnan(labels[train]).all():
            raise DataError("every label is missing (NaN)" + (" in the training part" if len(parts) > 1 else "")
                            + ": nothing to fine-tune on")
        task = _task(labels, task, mols)
        if task == "regression":  # the regression defaults (which leave the split alone)
            opts = _recipe(preset, regression=True, **given)
        if opts["selection"] == "val" and "valid" not in parts:
            raise ConfigError("selection='val' needs a validation part: give split='scaffold', 'random' or a dict "
                              "with 'valid' (or selection='last')")
        if opts["selection"] == "val":
            _warn_small_validation(labels[parts["valid"]], task)
        scaling = _scaling(labels[train]) if task == "regression" else None
        store = GraphStore.from_dataset(graphs, name="molecules")
        # the scaled sum's constant: the training molecules' mean atom count (a fixed number, saved)
        readout_scale = float(store.node_counts()[torch.as_tensor(train, dtype=torch.long)].double().mean()) \
            if opts["readout"] == READOUT_SCALED_SUM else None

        gen = seed_everything(seed)
        cfg = self.config
        if not from_scratch:
            # a GIN's initial weights are drawn and dropped before the predictor's, as the transfer
            # protocol's check of the encoder file did up to b434260: a seed keeps the numbers of the
            # committed runs (the head's weights and the dropout masks follow these draws)
            MolEncoder(cfg["vocab"], cfg["dim"], cfg["num_layers"])
        pred = MoleculePredictor(num_tasks, cfg["dim"], cfg["num_layers"], cfg["vocab"], opts["dropout"], tasks,
                                 meta={"encoder": self.meta, "encoder_source": getattr(self, "source", None)},
                                 task=task, scaling=scaling, readout=opts["readout"], readout_scale=readout_scale)
        if not from_scratch:
            pred.model.encoder.load_state_dict(self.encoder.state_dict())
        opt = adam(pred.model.parameters(), lr=opts["lr"], weight_decay=opts["weight_decay"])
        engine = engine_of(device)
        pred.deterministic = engine.deterministic  # its settling and predictions after the fit too
        if y is not None or getattr(graphs, "_data", None) is None:  # labels as checked here, one row per graph
            store = store.with_graph_values("y", torch.from_numpy(labels.astype(np.float32)))
        store = store.to(resolve_device(engine))
        size = opts["batch_size"]
        # a last batch of one single-atom molecule would break BatchNorm: drop such a remainder
        loader = GraphLoader(store, batch_size=size, shuffle=True, generator=gen, drop_last=len(train) % size == 1,
                             indices=torch.as_tensor(train, dtype=torch.long))
        check_fit_plan(loader, opts["epochs"], "MoleculeEncoder.finetune", "training molecule")
        scored = {p: GraphLoader(store, batch_size=256, indices=torch.as_tensor(parts[k], dtype=torch.long))
                  for p, k in (("val", "valid"), ("test", "test")) if k in parts}
        key = "val_auc" if task == "classification" else "val_rmse"
        # the weights of the first epoch with the best validation score, kept with the checkpoint so that
        # a resumed fit keeps the same model (a resumed fit replaces extra["best"] by the checkpoint's)
        extra = {"best": {"epoch": None, key: -math.inf if task == "classification" else math.inf, "state": None}}

        settle = None
        if opts["bn_stats"] == BN_SETTLED:  # the BatchNorm statistics of the current weights over the training part
            settle_loader = GraphLoader(store, batch_size=256, indices=torch.as_tensor(train, dtype=torch.long),
                                        generator=torch.Generator())  # draws nothing from the fit's generators

            def settle():
                settle_batchnorm(pred.model, settle_loader)

        def scores(epoch):
            t0 = time.perf_counter()
            if settle is not None:
                settle()
            row, counts = {}, {}
            for part, part_loader in scored.items():
                values, counts[part] = pred._scores(part_loader)
                row.update({f"{part}_{k}": v for k, v in values.items()})
            row.update({f"{p}_tasks": n for p, n in counts.items()})
            best, now = extra["best"], row.get(key, math.nan)
            if now > best[key] if task == "classification" else now < best[key]:  # NaN never wins
                best.update({"epoch": epoch, key: now,
                             "state": {k: v.detach().cpu().clone() for k, v in pred.model.state_dict().items()}})
            row["eval_time_s"] = time.perf_counter() - t0
            if evaluate is not None:
                row.update(check_report(evaluate(pred, epoch), f"evaluate(predictor, {epoch})") or {})
            return row

        lr_at = cosine_lr(opts["lr"], opts["epochs"]) if opts["lr_schedule"] == LR_COSINE else None
        strategy = FinetuneStrategy(pred.model, opt, task, scaling, lr_at)
        trainer = Trainer(strategy, device=engine, checkpoint=checkpoint, loader_gen=gen, ckpt_every=10,
                          ckpt_on_report=False, desc=desc, show_progress=progress)
        pred.history = trainer.fit(loader, opts["epochs"], evaluate=scores if scored or evaluate else None,
                                   extra=extra)
        best = extra["best"]
        if opts["selection"] == "val" and best["state"] is None and key in pred.history[-1]:
            log.warning("%s: selection='val' found no epoch with a %s (the validation part has %s); the model "
                        "of the last epoch is kept", desc or "finetune", key,
                        "a single class in every task" if task == "classification" else "no finite score")
        if opts["selection"] == "val" and best["state"] is not None:
            pred.model.load_state_dict(best["state"])  # settled before it was scored, where settled
        elif settle is not None:
            with deterministic_kernels(engine.deterministic):
                settle()
        pred.selected_epoch = best["epoch"] if opts["selection"] == "val" and best["state"] is not None \
            else pred.history[-1]["epoch"]
        pred.hparams.update(epochs=opts["epochs"], batch_size=size, lr=opts["lr"], weight_decay=opts["weight_decay"],
                            seed=seed, molecules=len(labels), skipped=len(mols.skipped) if mols is not None else 0,
                            split=opts["split"] if isinstance(opts["split"], str) else "given",
                            split_sizes={k: len(v) for k, v in parts.items()}, selection=opts["selection"],
                            selected_epoch=pred.selected_epoch, from_scratch=bool(from_scratch),
                            lr_schedule=opts["lr_schedule"], bn_stats=opts["bn_stats"])
        return pred


def _recipe(preset: str | None, regression: bool = False, **given) -> dict:
    """The fine-tuning options: those given, else the preset's, else the defaults (for a
    regression, :data:`REGRESSION_DEFAULTS` over :data:`FINETUNE_DEFAULTS`)."""
    from .choices import BN_STATS, FINETUNE_PRESETS, FINETUNE_SELECTIONS, LR_SCHEDULES

    if preset is not None:
        check_choice("preset", preset, FINETUNE_PRESETS)
    base = {**FINETUNE_DEFAULTS, **(REGRESSION_DEFAULTS if regression else {}),
            **(FINETUNE_PRESETS[preset] if preset else {})}
    opts = {k: (base[k] if v is None else v) for k, v in given.items()}
    if not isinstance(opts["epochs"], int) or opts["epochs"] < 1:
        raise ConfigError(f"epochs must be an int of at least 1, got {opts['epochs']!r}")
    if not isinstance(opts["batch_size"], int) or opts["batch_size"] < 2:
        raise ConfigError(f"batch_size must be at least 2 (BatchNorm), got {opts['batch_size']!r}")
    if not opts["lr"] > 0 or not opts["weight_decay"] >= 0:
        raise ConfigError(f"lr must be positive and weight_decay at least 0, got {opts['lr']}, {opts['weight_decay']}")
    if not 0 <= opts["dropout"] < 1:
        raise ConfigError(f"dropout must lie in [0, 1), got {opts['dropout']}")
    check_readout(opts["readout"])
    for key, names in (("lr_schedule", LR_SCHEDULES), ("bn_stats", BN_STATS), ("selection", FINETUNE_SELECTIONS)):
        check_choice(key, opts[key], names)
    frac = tuple(float(f) for f in opts["frac"])
    if len(frac) != 3 or min(frac) < 0 or abs(sum(frac) - 1) > 1e-6:
        raise ConfigError(f"frac must be three non-negative fractions (train, valid, test) summing to 1, got {frac}")
    opts["frac"] = frac
    return opts




def _labeled(data, y, label_map: dict | None = None):
    """``(graphs, labels, smiles, molecules)`` of fine-tuning data: the graphs for the store
    (a labeled molecule dataset as it is), a float64 ``graphs x tasks`` label matrix, the
    graphs' SMILES (``None`` when unknown) and the :class:`Molecules` (``None`` for a dataset).
    ``label_map``: text labels to numbers (:func:`check_label_map`), for ``y`` or a file's columns."""
    if y is None and _is_dataset(data):
        meta = getattr(data, "meta", None) or {}
        labels = data._data.get("y")
        if labels is None:
            raise DataError("the molecules carry no labels y: pass y to finetune")
        labels = labels.view(len(data.slices["y"]) - 1, -1)  # every graph of the dataset, one row each
        smiles = meta.get("smiles")
        if data._indices is not None:  # a subset (dataset[idx]): its graphs' rows, in its order
            idx = data.indices()
            labels = labels[torch.as_tensor(list(idx), dtype=torch.long)]
            smiles = [smiles[i] for i in idx] if smiles else None
        return data, labels.numpy().astype(np.float64), smiles, None
    named = _labeled_file(data, y, label_map)
    if named is not None:  # a file and the names of its label columns (an SDF's property fields)
        data, y, _ = named
    mols = as_molecules(data)
    if y is not None:
        labels = _labels(y, mols.num_input, label_map)[mols.index]
    else:
        missing = [i for i, g in enumerate(mols.graphs) if g.get("y") is None]
        if missing:
            raise DataError(f"the molecules carry no labels y (graph {missing[0]} has none): pass y to finetune")
        try:
            labels = torch.cat([g.y.reshape(1, -1) for g in mols.graphs]).double().numpy()
        except RuntimeError as exc:
            raise DataError(f"the graphs' labels y differ in length ({exc})") from None
    return mols.graphs, labels.astype(np.float64), (mols.smiles or None), mols


def _is_dataset(data) -> bool:
    """A PyG in-memory dataset whose tensors can be batched as they are (no subset, no transform)."""
    from torch_geometric.data import InMemoryDataset

    return (isinstance(data, InMemoryDataset) and data.transform is None
            and getattr(data, "_data", None) is not None and data.slices is not None)


def _task(labels: np.ndarray, task: str | None, mols: Molecules | None) -> str:
    """The task, checked against the labels or inferred from them, said in the log."""
    rows = mols.index.tolist() if mols is not None else None
    chosen = label_task(labels, task, "labels y", rows)
    if task is None:
        labeled = labels[~np.isnan(labels)]
        if chosen == "classification":
            log.info("labels are all 0 or 1: fine-tuning for classification (pass task='regression' for numbers)")
        elif np.all(labeled == np.round(labeled)):
            log.warning("labels are integers other than 0/1: fine-tuning for regression (standardised targets, MSE). "
                        "Classes are not numbers: give one binary column per class for classification")
        else:
            log.info("labels are numbers: fine-tuning for regression (standardised targets, MSE; RMSE, MAE, R²)")
    return chosen


#: a validation part with fewer labeled molecules than this (for classification: of its rarer
#: class) is too small to choose an epoch on: its score swings between epochs by more than the
#: epochs differ (36 BACE molecules swung between ROC-AUC 0.49 and 0.80), and the kept epoch's test
#: score is close to a random pick
SMALL_VALIDATION = {"regression": 100, "classification": 30}


def _warn_small_validation(valid: np.ndarray, task: str) -> bool:
    """Warn, saying the counts and what to do, when ``valid`` (the validation part's labels)
    is too small to choose an epoch on (:data:`SMALL_VALIDATION`); whether it warned."""
    labeled = valid[~np.isnan(valid)]
    if task == "classification":
        count = int(min((labeled == 1).sum(), (labeled == 0).sum())) if labeled.size else 0
        what = f"{count} molecule(s) of its rarer class"
    else:
        count, what = int(labeled.size), f"{int(labeled.size)} labeled value(s)"
    if count >= SMALL_VALIDATION[task]:
        return False
    log.warning("the validation part has %s (fewer than %d): too few to choose an epoch on, as its score swings "
                "between epochs by more than the epochs differ. Keep the last epoch of a decaying learning rate "
                "(selection='last', lr_schedule='cosine'), or use autogcl.PropertyPredictor, which needs no epoch "
                "choice", what, SMALL_VALIDATION[task])
    return True


def _scaling(labels: np.ndarray) -> dict:
    """Per task, the mean and std (ddof 0) of the labeled training targets (std 1 where it is 0
    or undefined, mean 0 for a task without labels)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a task without labels: mean of nothing
        mean, std = np.nanmean(labels, axis=0), np.nanstd(labels, axis=0)
    mean = np.where(np.isfinite(mean), mean, 0.0)
    std = np.where(np.isfinite(std) & (std > 0), std, 1.0)
    return {"mean": mean.tolist(), "std": std.tolist()}


def check_task_columns(labels: np.ndarray, tasks: Sequence[str]) -> None:
    """Refuse labels (``molecules x columns``) whose column count differs from a fitted
    predictor's ``tasks``, naming ``y``, both counts and the tasks."""
    if labels.shape[1] != len(tasks):
        shown = ", ".join(map(str, tasks[:10])) + (", ..." if len(tasks) > 10 else "")
        raise DataError(f"y has {labels.shape[1]} task column(s); this predictor was fitted on {len(tasks)} task(s) "
                        f"({shown}): give one column per task, in that order (NaN for a missing label)")


def check_split(parts: dict, source: str = "split") -> None:
    """Refuse split parts (``train``, ``valid``, ``test``: index lists) that share a molecule,
    naming the first shared index and both parts: a validation or test score of training
    molecules says nothing. ``source`` names where the parts come from (a file, ``split``)."""
    names = [k for k in ("train", "valid", "test") if k in parts]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = np.intersect1d(np.asarray(parts[a], dtype=np.int64), np.asarray(parts[b], dtype=np.int64))
            if both.size:
                raise DataError(f"{source}: molecule {int(both[0])} is in both {a!r} and {b!r} ({both.size} shared); "
                                "each molecule belongs to one part")


def _split_parts(split, n: int, smiles, frac, seed: int) -> dict[str, np.ndarray]:
    """The index arrays of the parts a split names (``train``, and ``valid``/``test``)."""
    from .choices import FINETUNE_SPLITS
    from .data.splits import scaffold_split

    if not (split is None or isinstance(split, dict)):
        check_choice("split", split, FINETUNE_SPLITS, also="a dict of index lists")
    if isinstance(split, dict):
        parts = {}
        for k, v in split.items():
            if k not in ("train", "valid", "test"):
                continue
            idx = np.asarray(v, dtype=np.int64).reshape(-1)
            if idx.size and (idx.min() < 0 or idx.max() >= n):
                raise ConfigError(f"split[{k!r}] has indices outside 0..{n - 1}")
            parts[k] = idx
        if "train" not in parts:
            raise ConfigError(f"a split dict needs a 'train' list (got keys {sorted(split)})")
        check_split(parts)
    elif split in (None, "none"):
        return {"train": np.arange(n)}
    elif split == "scaffold":
        if not smiles or len(smiles) != n:
            raise ConfigError("split='scaffold' needs the molecules' SMILES: give SMILES, from_smiles's result or a "
                              "molecule dataset (graphs alone have none), or split='random'")
        cut = scaffold_split(list(smiles), frac)
        parts = {k: np.asarray(cut[k], dtype=np.int64) for k in ("train", "valid", "test")}
    else:  # random
        order = np.random.default_rng(seed).permutation(n)
        a, b = int(round(frac[0] * n)), int(round((frac[0] + frac[1]) * n))
        parts = {"train": np.sort(order[:a]), "valid": np.sort(order[a:b]), "test": np.sort(order[b:])}
    empty = [k for k, v in parts.items() if len(v) == 0]
    if empty:
        raise DataError(f"the {split if isinstance(split, str) else 'given'} split of {n} molecules leaves "
                        f"{', '.join(empty)} empty ({ {k: len(v) for k, v in parts.items()} }); use more molecules "
                        "or other fractions")
    return parts


# ---------------------------------------------------------------------------------- predictor


class MoleculePredictor(nn.Module):
    """A molecule GIN with one output per task (:class:`autogcl.MolPredictor`), made by
    :meth:`MoleculeEncoder.finetune` (also per seed of ``autogcl transfer finetune``, whose
    units write one as ``model.pt``). ``predict`` gives probabilities (classification) or
    values in the targets' own units (regression: the outputs un-standardised with
    ``scaling``); ``score`` the metrics on labeled molecules; ``save``/:meth:`load`
    round-trip it, task and target scaling included."""

    def __init__(self, num_tasks: int, dim: int = 300, num_layers: int = 5, vocab: dict | None = None,
                 dropout: float = 0.5, tasks: Sequence[str] | None = None, meta: dict | None = None,
                 task: str = "classification", scaling: dict | None = None, readout: str = READOUT_MEAN,
                 readout_scale: float | None = None):
        super().__init__()
        from .choices import TASKS

        if num_tasks < 1:
            raise ConfigError(f"num_tasks must be at least 1, got {num_tasks}")
        check_choice("task", task, TASKS)
        if task == "regression":
            scaling = scaling or {"mean": [0.0] * num_tasks, "std": [1.0] * num_tasks}
            if any(len(scaling.get(k, ())) != num_tasks for k in ("mean", "std")):
                raise ConfigError(f"scaling needs a mean and a std per task ({num_tasks}), got {scaling}")
            scaling = {k: [float(v) for v in scaling[k]] for k in ("mean", "std")}
        self.model = MolPredictor(num_tasks, vocab or VOCAB, dim, num_layers, dropout, readout, readout_scale)
        self.tasks = [str(t) for t in tasks] if tasks is not None else [f"task{i}" for i in range(num_tasks)]
        self.task, self.scaling = task, (scaling if task == "regression" else None)
        self.hparams = {"num_tasks": num_tasks, "dim": dim, "num_layers": num_layers, "vocab": dict(vocab or VOCAB),
                        "dropout": dropout, "task": task, "readout": readout,
                        "readout_scale": self.model.encoder.readout_scale}
        self.meta = dict(meta or {})
        self.history: list[dict] = []
        self.selected_epoch: int | None = None
        #: predict under PyTorch's deterministic kernels (set by a fine-tuning that trained under them)
        self.deterministic = False

    @property
    def device(self) -> torch.device:
        return module_device(self)

    def forward(self, batch) -> torch.Tensor:
        """Raw outputs (``graphs x tasks``): logits, or standardised values for regression."""
        return self.model(batch)

    def _values(self, out: torch.Tensor) -> np.ndarray:
        """Outputs as the predictor reports them, in float64: probabilities, or values in the
        targets' units."""
        out = out.detach().cpu().double().numpy().reshape(out.shape[0], -1)
        if self.task == "regression":
            return out * np.asarray(self.scaling["std"]) + np.asarray(self.scaling["mean"])
        return 1.0 / (1.0 + np.exp(-out))

    @torch.no_grad()
    def _predicted(self, smiles, batch_size: int = 256, device=None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`predict` in float64."""
        mols = as_molecules(smiles)
        if device is not None:
            self.to(resolve_device(device))
        with deterministic_kernels(self.deterministic):
            out, _ = _embed(self.model, _loader(mols, batch_size))
        return self._values(out), mols.index

    def _scores(self, loader) -> tuple[dict, int]:
        """``({metric: value}, tasks scored)`` of the graphs of ``loader`` (eval mode): ``auc``,
        or ``rmse``, ``mae`` and ``r2`` in the targets' units."""
        with deterministic_kernels(self.deterministic):
            out, labels = _embed(self.model, loader)
        y = labels.reshape(out.shape).numpy()
        if self.task == "regression":
            return regression_scores(y, self._values(out))
        auc, n = roc_auc(y, out.numpy())
        return {"auc": auc}, n

    @torch.no_grad()
    def predict(self, smiles, batch_size: int = 256, device=None) -> tuple[np.ndarray, np.ndarray]:
        """``(values, index)``: a float32 ``molecules x tasks`` array of the SMILES that parse
        (eval mode), probabilities for classification and values in the targets' own units for
        regression, and their positions in ``smiles`` (SMILES, a CSV or ``.smi`` file's path,
        or graphs as :meth:`MoleculeEncoder.embed` takes them)."""
        values, index = self._predicted(smiles, batch_size, device)
        return values.astype(np.float32), index

    def score(self, smiles, y, batch_size: int = 256, *, label_map: dict | None = None) -> dict:
        """The predictor's scores on labeled molecules (``y`` and ``label_map`` as
        :meth:`MoleculeEncoder.finetune` takes them, one column per task of the predictor):
        ``{"roc_auc", "tasks"}`` (tasks with both classes), or ``{"rmse", "mae", "r2",
        "tasks"}`` in the targets' units, ``tasks`` counting those with a label (RMSE and MAE
        are defined for a single molecule; R² needs two labels of a task, so one molecule's R²
        is NaN)."""
        named = _labeled_file(smiles, y, label_map)
        if named is not None:  # a file and the names of its label columns
            smiles, y, _ = named
        mols = as_molecules(smiles)
        labels = _labels(y, mols.num_input, label_map)[mols.index]
        check_task_columns(labels, self.tasks)
        values, _ = self.predict(mols, batch_size)
        if self.task == "regression":
            scores, n = regression_scores(labels, values)
            return {**scores, "tasks": n}
        auc, n = roc_auc(labels, values)
        return {"roc_auc": auc, "tasks": n}

    def save(self, path: str | Path) -> Path:
        """Write the predictor (architecture, task, target scaling, task names, weights on the
        CPU, history) atomically."""
        state = {k: v.detach().cpu() for k, v in self.model.state_dict().items()}
        atomic_save(with_digest({"format": PREDICTOR_FORMAT, "hparams": dict(self.hparams), "tasks": list(self.tasks),
                     "task": self.task, "scaling": self.scaling, "state_dict": state, "history": list(self.history),
                     "meta": self.meta, "autogcl": __version__}), path)
        return Path(path)

    @classmethod
    def load(cls, path: str | Path, device="cpu") -> MoleculePredictor:
        """Restore a predictor written by :meth:`save` (``weights_only=True``); a file of
        another kind (an encoder, a TU model) is a clear error saying what it is, and so is a
        shipped encoder's name. A file from before regression holds a classifier."""
        path = Path(path)
        if not path.exists() and _shipped_encoder(path) is not None:
            raise DataError(f"{str(path)!r} is the name of a shipped pre-trained encoder, not a fine-tuned predictor's "
                            f"file: load it with autogcl.MoleculeEncoder.load({str(path)!r}), and fine-tune it with its "
                            "finetune(smiles, y) or with autogcl.PropertyPredictor().fit(smiles, y)")
        blob = _read(path, "cpu")
        if blob.get("format") != PREDICTOR_FORMAT:
            raise _wrong_kind(path, blob, "a fine-tuned molecule predictor", "")
        try:
            hp = dict(blob["hparams"])
            pred = cls(int(hp["num_tasks"]), int(hp["dim"]), int(hp["num_layers"]), hp["vocab"],
                       float(hp.get("dropout", 0.5)), blob.get("tasks"), blob.get("meta"),
                       blob.get("task", "classification"), blob.get("scaling"), hp.get("readout", READOUT_MEAN),
                       hp.get("readout_scale"))
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise DataError(f"{path}: damaged predictor record ({type(exc).__name__}: {exc})") from None
        pred.hparams.update(hp)
        check_weights(blob, path)  # a tensor damaged on disk: refused by name
        _fill(pred.model, blob["state_dict"], path, "molecule predictor")
        pred.history = list(blob.get("history", []))
        pred.selected_epoch = hp.get("selected_epoch")
        return pred.to(resolve_device(device))
