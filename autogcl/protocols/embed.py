"""``autogcl embed``: graph embeddings of a TU dataset (with any trained model that has ``embed``),
of a SMILES file (with a molecule encoder, by default the shipped one) or of a saved list of
PyG ``Data``, written as ``.npy`` or ``.csv``. SMILES that do not parse are skipped and
reported by file line."""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..atomic import atomic_write_bytes, atomic_write_text
from ..errors import DataError
from .configs import EmbedConfig

__all__ = ["EmbedConfig", "Embedded", "embed", "load_model", "write"]

log = logging.getLogger(__name__)

SMILES_SUFFIXES = (".csv", ".smi", ".txt", ".sdf", ".sd", ".csv.gz", ".smi.gz", ".txt.gz", ".sdf.gz", ".sd.gz")


@dataclass
class Embedded:
    """What :func:`embed` read and made: the embeddings, each row's position in the input,
    optional per-row columns (``line``, ``smiles``, ``label``), and the skipped rows."""

    emb: np.ndarray
    index: np.ndarray
    columns: dict = field(default_factory=dict)
    skipped: list = field(default_factory=list)
    num_input: int = 0
    source: str = ""
    model: str = ""


def _read_smiles(path: Path, col: str) -> tuple[list[int], list[str]]:
    """File lines and SMILES of a SMILES file; a CSV's column is matched ignoring case."""
    from ..data.molecules import iter_smiles, open_text

    name = path.name.lower().removesuffix(".gz")
    use = None
    if name.endswith(".csv"):
        import csv

        with open_text(path) as f:
            header = [h.strip() for h in next(csv.reader(f), [])]
        match = [h for h in header if h.lower() == col.lower()]
        if not match:
            raise DataError(f"{path}:1: no SMILES column {col!r}; columns are {header} (choose one with --smiles-col)")
        use = match[0]
    pairs = list(iter_smiles(path, use))
    if not pairs:
        raise DataError(f"{path}: no SMILES below the header")
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _load_graphs(path: Path) -> list:
    """A list of PyG ``Data`` saved with ``torch.save``, read with ``weights_only=True``."""
    from torch_geometric.data import Data
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    try:
        with torch.serialization.safe_globals([Data, DataEdgeAttr, DataTensorAttr, GlobalStorage]):
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a damaged or unsafe file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise DataError(f"{path}: not a saved dataset that loads safely ({type(exc).__name__}: {first}); save "
                        "a list of torch_geometric Data with torch.save(list_of_data, path)") from exc
    if isinstance(obj, dict) and "format" in obj:
        raise DataError(f"{path}: a model file ({obj['format']}), not a dataset; pass it as --model")
    if not isinstance(obj, (list, tuple)) or not obj or not all(isinstance(g, Data) for g in obj):
        what = type(obj).__name__ if not isinstance(obj, (list, tuple)) else "a list of other objects or none"
        raise DataError(f"{path}: holds {what}, not a list of torch_geometric Data")
    return list(obj)


def _labels(graphs) -> list | None:
    """Per-graph scalar labels, or None when the graphs do not all have one."""
    ys = [g.get("y") for g in graphs]
    if any(y is None or y.numel() != 1 for y in ys):
        return None
    return [y.item() for y in ys]


def load_model(path: str, device):
    """Any model ``--model`` names: what :func:`autogcl.load` restores (the semi command's
    ``model.pt`` included: a :class:`autogcl.SemiSupervised`)."""
    from ..api import load

    return load(path, device)


def _feature_recipe(cfg: EmbedConfig, model) -> str:
    """The node features a TU dataset gets: --feat, else the recipe of the run beside the
    model (config.json), else the model's own recipe, else the default."""
    from ..data.features import DEFAULT_RECIPE
    from ..atomic import read_json

    if cfg.feat:
        return cfg.feat
    beside = Path(cfg.model).parent / "config.json"
    if beside.is_file():
        try:
            feat = read_json(beside).get("feat")
        except DataError:
            feat = None
        if feat:
            return feat
    rule = getattr(model, "hparams", {}).get("features")
    return rule if rule not in (None, "auto") else DEFAULT_RECIPE


def embed(cfg: EmbedConfig, data_root=None, download: bool | None = None, device="cpu",
          workers: int | None = None, progress: bool | None = None) -> Embedded:
    """Embed what ``cfg.data`` names (see :class:`EmbedConfig`)."""
    from ..devices import resolve_device
    from ..molecules import DEFAULT_ENCODER, MoleculeEncoder, from_smiles

    device = resolve_device(device)
    path = Path(cfg.data)
    lower = path.name.lower()
    model = None
    if cfg.encoder:
        model = MoleculeEncoder.load(cfg.encoder, device)
    elif cfg.model:
        model = load_model(cfg.model, device)
    name = cfg.encoder or cfg.model or ""
    if lower.endswith(SMILES_SUFFIXES):  # a SMILES file
        if not path.is_file():
            raise DataError(f"{path}: no such SMILES file")
        if model is None:
            model, name = MoleculeEncoder.load(DEFAULT_ENCODER, device), DEFAULT_ENCODER
        if not isinstance(model, MoleculeEncoder):
            raise DataError(f"{cfg.model}: a {type(model).__name__} model reads graphs, not SMILES; embed SMILES "
                            "with a molecule encoder (--encoder NAME_OR_FILE)")
        lines, smiles = _read_smiles(path, cfg.smiles_col)
        try:
            mols = from_smiles(smiles, workers=workers, progress=bool(progress) and len(smiles) > 5000, report=False)
        except DataError as exc:  # none parsed: say where the SMILES came from
            raise DataError(f"{path} (SMILES column {cfg.smiles_col!r}, rows numbered from 0 below the header): "
                            f"{exc}") from None
        emb, index = model.embed(mols, cfg.batch_size)
        skipped = [{"line": lines[s.index], "index": s.index, "smiles": s.smiles, "reason": s.reason}
                   for s in mols.skipped]
        cols = {"line": [lines[i] for i in index], "smiles": mols.smiles}
        return Embedded(emb, index, cols, skipped, len(smiles), str(path), name)
    if model is None:
        raise DataError(f"{cfg.data}: name the model to embed with: --model model.pt (a TU dataset or graphs with "
                        "node features) or --encoder NAME (molecule graphs)")
    if lower.endswith(".pt"):  # a saved dataset
        if not path.is_file():
            raise DataError(f"{path}: no such file")
        graphs = _load_graphs(path)
        source = str(path)
    else:  # a TU dataset
        if path.exists():
            raise DataError(f"{path}: a file of unknown kind; name a TU dataset, a SMILES file ("
                            f"{', '.join(SMILES_SUFFIXES)}) or a saved dataset (.pt)")
        if isinstance(model, MoleculeEncoder):
            raise DataError(f"{cfg.data}: TU datasets are embedded with a model of `autogcl unsupervised` "
                            "(--model model.pt), not a molecule encoder")
        from ..data import load_tu

        graphs = load_tu(cfg.data, data_root, _feature_recipe(cfg, model), download=download)
        source = graphs.name
    if isinstance(model, MoleculeEncoder):
        emb, index = model.embed(graphs, cfg.batch_size)
    elif callable(getattr(model, "embed", None)):  # AutoGCL, GraphCL, SemiSupervised, a semi classifier
        emb, index = model.embed(graphs, cfg.batch_size).numpy(), np.arange(len(graphs))
    else:
        raise DataError(f"{cfg.model}: a {type(model).__name__}, which gives no graph embeddings; use a model that "
                        "has embed (AutoGCL, GraphCL, SemiSupervised, `autogcl semi`'s) or a molecule encoder")
    labels = _labels(graphs)
    return Embedded(emb, index, {} if labels is None else {"label": labels}, [], len(graphs), source, name)


def write(res: Embedded, out: str | Path) -> Path:
    """Write the embeddings atomically: ``.npy`` (the array) or ``.csv`` (``index``, the
    per-row columns, ``emb_0`` ... ``emb_{d-1}``)."""
    out = Path(out)
    if out.is_dir():
        raise DataError(f"--out {out} is a folder; name a .npy or .csv file")
    if out.suffix.lower() == ".npy":
        buf = io.BytesIO()
        np.save(buf, res.emb)
        atomic_write_bytes(out, buf.getvalue())
        return out
    import csv

    buf = io.StringIO()
    w = csv.writer(buf)
    names = list(res.columns)
    w.writerow(["index", *names, *(f"emb_{j}" for j in range(res.emb.shape[1]))])
    for k, i in enumerate(res.index):
        w.writerow([int(i), *(res.columns[c][k] for c in names), *(f"{v:.9g}" for v in res.emb[k])])
    atomic_write_text(out, buf.getvalue())
    return out
