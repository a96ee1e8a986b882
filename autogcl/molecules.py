"""Molecules from Python: SMILES to graphs, the shipped pre-trained encoder, embeddings, and
fine-tuning to a multi-task predictor.

* :func:`from_smiles` featurises a list of SMILES (Hu et al. 2020's categorical atom and bond
  features, :func:`autogcl.data.molecules.smiles_to_graph`); entries that do not parse are
  skipped, counted and reported by index, never fatal unless none parses.
* :class:`MoleculeEncoder` is the molecule GIN (5 x 300, mean pooling). ``MoleculeEncoder.load``
  takes a shipped encoder by name (``"autogcl-moses-fullx1"``, see ``pretrained/README.md``)
  or the ``encoder.pt`` of an ``autogcl transfer pretrain`` run; ``embed(smiles)`` gives a
  ``molecules x 300`` array and the input positions it covers; ``finetune(smiles, y)`` trains a
  :class:`MoleculePredictor` (masked binary cross-entropy over the labeled entries of ``y``,
  NaN = missing, as in MoleculeNet).
* :class:`MoleculePredictor` ``predict(smiles)`` gives one probability per task;
  ``save``/``load`` round-trip it exactly, read with ``torch.load(weights_only=True)``.

See the "Molecules" section of ``docs/api.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader

from . import __version__
from .atomic import atomic_save
from .data.molecules import VOCAB, featurize, smiles_to_graph
from .devices import resolve_device
from .errors import ConfigError, DataError
from .models.embed import embed as _embed
from .models.embed import module_device
from .models.mol_gin import ENCODER_FORMAT, MolEncoder, MolPredictor, load_encoder, save_encoder

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


def _labels(y, n: int) -> np.ndarray:
    """``y`` as a float ``n x tasks`` matrix (NaN = missing), checked: one row per SMILES, only
    0, 1 or NaN."""
    try:
        y = np.asarray(y, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise DataError(f"labels y must be numbers (0, 1 or NaN for missing): {exc}") from None
    given = tuple(y.shape)
    if y.ndim == 1:
        y = y.reshape(-1, 1)
    if y.ndim != 2 or y.shape[0] != n:
        raise DataError(f"labels y have shape {given}: expected one row per SMILES ({n} rows; a vector, "
                        "or a molecules x tasks matrix)")
    bad = np.argwhere(~np.isnan(y) & (y != 0) & (y != 1))
    if len(bad):
        i, t = (int(v) for v in bad[0])
        at = f"{i}, {t}" if len(given) == 2 else f"{i}"
        raise DataError(f"label y[{at}] = {float(y[i, t])!r} (SMILES {i}) is not 0, 1 or NaN (binary tasks; NaN marks a missing "
                        f"label); {len(bad)} such entr{'y' if len(bad) == 1 else 'ies'}")
    return y


def from_smiles(smiles, y=None, *, workers: int | None = None, progress: bool = False,
                report: bool = True) -> Molecules:
    """The graphs of a list of SMILES (Hu et al. 2020 features: ``x`` = atom type and chirality
    ids, ``edge_attr`` = bond type and direction ids, both ``long``).

    Entries that do not parse (or are empty, or not strings, such as a pandas NaN) are skipped:
    each is logged with its index and string, and listed in ``.skipped``; a
    :class:`~autogcl.DataError` only when none parses. ``y`` (optional): labels, a vector or a
    ``SMILES x tasks`` matrix of 0/1 with NaN for a missing label, stored as each graph's ``y``
    (``1 x tasks`` float). ``workers``: featurising processes (default: one below 5,000
    SMILES, else every core). ``report=False``: no warning (the caller reports ``.skipped``)."""
    if isinstance(smiles, Molecules):
        return smiles
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
            g.y = torch.from_numpy(labels[index[k]]).view(1, -1)
        graphs.append(g)
    return Molecules(graphs, index, [smiles[i] for i in index], skipped, n)


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
    or the path itself; a clear error when it is neither."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    shipped = PRETRAINED_DIR / (path.name if path.suffix == ".pt" else path.name + ".pt")
    if len(path.parts) == 1 and shipped.is_file():
        return shipped
    known = pretrained_encoders()
    raise DataError(f"{name_or_path}: no such encoder file, nor a shipped encoder's name (shipped: "
                    f"{', '.join(known) if known else f'none found in {PRETRAINED_DIR}'})")


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

    def finetune(self, smiles, y, *, tasks: Sequence[str] | None = None, epochs: int = 30, batch_size: int = 32,
                 lr: float = 0.001, dropout: float = 0.5, seed: int = 0, device="auto",
                 progress: bool | None = None) -> MoleculePredictor:
        """A :class:`MoleculePredictor` fine-tuned from this encoder (which is not changed) on
        ``smiles`` and labels ``y`` (a vector, or a ``SMILES x tasks`` matrix of 0/1 with NaN
        for a missing label): masked binary cross-entropy over the labeled entries, Adam, the
        transfer protocol's recipe (``autogcl transfer finetune``). ``seed`` fixes the head's
        initial weights, the batch order and dropout. No epoch is selected: the predictor has
        the last epoch's weights; ``predictor.history`` holds the loss per epoch."""
        from .seeding import seed_everything
        from .train import FinetuneStrategy, Trainer
        from .train.optim import adam

        if epochs < 1:
            raise ConfigError(f"epochs must be at least 1, got {epochs}")
        if batch_size < 2:
            raise ConfigError(f"batch_size must be at least 2 (BatchNorm), got {batch_size}")
        mols = from_smiles(smiles, y)
        if mols.graphs[0].get("y") is None:
            raise DataError("the molecules carry no labels y: pass y to finetune")
        labels = torch.cat([g.y for g in mols.graphs])
        if torch.isnan(labels).all():
            raise DataError("every label is missing (NaN): nothing to fine-tune on")
        num_tasks = int(labels.shape[1])
        if tasks is not None and len(tasks) != num_tasks:
            raise DataError(f"{len(tasks)} task names for {num_tasks} label column(s)")
        gen = seed_everything(seed)
        cfg = self.config
        pred = MoleculePredictor(num_tasks, cfg["dim"], cfg["num_layers"], cfg["vocab"], dropout, tasks,
                                 meta={"encoder": self.meta, "encoder_source": getattr(self, "source", None)})
        pred.model.encoder.load_state_dict(self.encoder.state_dict())
        # a last batch of one single-atom molecule would break BatchNorm: drop such a remainder
        loader = _loader(mols, batch_size, shuffle=True, generator=gen, drop_last=len(mols) % batch_size == 1)
        strat = FinetuneStrategy(pred.model, adam(pred.model.parameters(), lr=lr))
        trainer = Trainer(strat, device=resolve_device(device), loader_gen=gen, desc="fine-tuning",
                          show_progress=progress)
        pred.history = trainer.fit(loader, epochs)
        pred.hparams.update(epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, molecules=len(mols),
                            skipped=len(mols.skipped))
        return pred


# ---------------------------------------------------------------------------------- predictor


class MoleculePredictor(nn.Module):
    """A molecule GIN with one logit per task (:class:`autogcl.MolPredictor`), made by
    :meth:`MoleculeEncoder.finetune` (or by ``autogcl transfer finetune``, whose units write
    one as ``model.pt``). ``predict`` gives probabilities; ``save``/:meth:`load` round-trip it."""

    def __init__(self, num_tasks: int, dim: int = 300, num_layers: int = 5, vocab: dict | None = None,
                 dropout: float = 0.5, tasks: Sequence[str] | None = None, meta: dict | None = None):
        super().__init__()
        if num_tasks < 1:
            raise ConfigError(f"num_tasks must be at least 1, got {num_tasks}")
        self.model = MolPredictor(num_tasks, vocab or VOCAB, dim, num_layers, dropout)
        self.tasks = [str(t) for t in tasks] if tasks is not None else [f"task{i}" for i in range(num_tasks)]
        self.hparams = {"num_tasks": num_tasks, "dim": dim, "num_layers": num_layers, "vocab": dict(vocab or VOCAB),
                        "dropout": dropout}
        self.meta = dict(meta or {})
        self.history: list[dict] = []

    @classmethod
    def wrap(cls, model: MolPredictor, tasks=None, meta: dict | None = None, dropout: float = 0.5):
        """A predictor around an existing :class:`autogcl.MolPredictor` (its weights shared)."""
        cfg = model.encoder.config()
        out = cls(model.head.out_features, cfg["dim"], cfg["num_layers"], cfg["vocab"], dropout, tasks, meta)
        out.model = model
        return out

    @property
    def device(self) -> torch.device:
        return module_device(self)

    def forward(self, batch) -> torch.Tensor:
        """Logits (``graphs x tasks``)."""
        return self.model(batch)

    @torch.no_grad()
    def predict(self, smiles, batch_size: int = 256, device=None) -> tuple[np.ndarray, np.ndarray]:
        """``(probabilities, index)``: a float32 ``molecules x tasks`` array of the SMILES that
        parse (eval mode) and their positions in ``smiles`` (SMILES, or graphs as
        :meth:`MoleculeEncoder.embed` takes them)."""
        mols = as_molecules(smiles)
        if device is not None:
            self.to(resolve_device(device))
        logits, _ = _embed(self.model, _loader(mols, batch_size))
        return torch.sigmoid(logits).numpy(), mols.index

    def save(self, path: str | Path) -> Path:
        """Write the predictor (architecture, task names, weights on the CPU, history) atomically."""
        state = {k: v.detach().cpu() for k, v in self.model.state_dict().items()}
        atomic_save({"format": PREDICTOR_FORMAT, "hparams": dict(self.hparams), "tasks": list(self.tasks),
                     "state_dict": state, "history": list(self.history), "meta": self.meta,
                     "autogcl": __version__}, path)
        return Path(path)

    @classmethod
    def load(cls, path: str | Path, device="cpu") -> MoleculePredictor:
        """Restore a predictor written by :meth:`save` (``weights_only=True``); a file of
        another kind (an encoder, a TU model) is a clear error saying what it is."""
        path = Path(path)
        blob = _read(path, "cpu")
        if blob.get("format") != PREDICTOR_FORMAT:
            raise _wrong_kind(path, blob, "a fine-tuned molecule predictor", "")
        try:
            hp = dict(blob["hparams"])
            pred = cls(int(hp["num_tasks"]), int(hp["dim"]), int(hp["num_layers"]), hp["vocab"],
                       float(hp.get("dropout", 0.5)), blob.get("tasks"), blob.get("meta"))
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: damaged predictor record ({type(exc).__name__}: {exc})") from None
        pred.hparams.update(hp)
        _fill(pred.model, blob["state_dict"], path, "molecule predictor")
        pred.history = list(blob.get("history", []))
        return pred.to(resolve_device(device))
