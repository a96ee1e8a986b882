"""The base every estimator shares: hyper-parameters, how graphs are prepared (feature rule,
checks, labels) and cached as a device-resident :class:`autogcl.data.batching.GraphStore`,
devices, ``save``, and the registry that :func:`load` reads model files with."""

from __future__ import annotations

import copy
import logging
import math
import numbers
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn
from torch.utils.data import DataLoader as TorchDataLoader
from torch_geometric.data import Batch, Data, InMemoryDataset

from .. import __version__, atomic, seeding
from ..data.batching import GraphLoader, GraphStore
from ..data.features import DEFAULT_RECIPE, NodeFeatures
from ..devices import Engine, deterministic_kernels, resolve_device
from ..errors import ConfigError, DataError, TrainingError
from ..models.embed import module_device

log = logging.getLogger(__name__)

__all__ = ["MAX_FEATURE", "MODEL_FORMAT", "MODEL_TYPES", "OTHER_FORMATS", "Estimator", "Prepared", "check_class_zero", "describe_file", "load",
           "model_path", "register_model_type"]

#: the format tag of every model file
MODEL_FORMAT = "autogcl-model-1"

#: class name written in a model file -> the class that loads it (:func:`register_model_type`)
MODEL_TYPES: dict[str, type] = {}

#: the largest absolute node-feature value accepted: beyond it float32 sums of squares in the
#: encoder's BatchNorm overflow and would leave non-finite running statistics
MAX_FEATURE = 1e15


def register_model_type(cls: type | None = None, *, name: str | None = None):
    """Register a model class for :func:`load` (a decorator, or a call). A file whose
    ``"class"`` is ``name`` (default: the class's name) is restored by ``cls.from_saved(blob,
    path)`` on the CPU, then moved to the device asked for; :class:`Estimator` provides one
    (rebuild from ``hparams``, check and load the weights). Re-registering a name replaces it."""

    def add(c: type) -> type:
        if not callable(getattr(c, "from_saved", None)):
            raise ConfigError(f"{c.__name__} cannot be registered: it has no from_saved(blob, path)")
        MODEL_TYPES[name or c.__name__] = c
        return c

    return add if cls is None else add(cls)


@contextmanager
def eval_mode(*modules: nn.Module):
    """Modules in eval mode inside the block, their own mode restored after it."""
    was = [m.training for m in modules]
    for m in modules:
        m.eval()
    try:
        yield
    finally:
        for m, w in zip(modules, was):
            m.train(w)



def check_contrastive_batch(n: int, size: int, what: str = "contrastive learning") -> None:
    """A :class:`ConfigError` when a contrastive pass would see batches of one graph (``n``
    graphs, ``size`` per batch): NT-Xent of one graph is 0, nothing would be learned."""
    if n < 2 or size < 2:
        raise ConfigError(
            f"{what} needs at least 2 graphs per batch (got {n} graph(s), batch_size={size}): "
            "NT-Xent contrasts each graph with the others of its batch, so one graph alone has a loss of 0 "
            "and nothing would be learned")

class Prepared(NamedTuple):
    """Graphs as an estimator reads them: the store (``x`` float32 of the model's width,
    ``edge_index``, ``edge_attr`` where the encoder reads it, ``y`` the class label or -1),
    the labels (-1: none), and the first label that is not a class index, if any."""

    store: GraphStore
    labels: torch.Tensor
    bad_label: str | None


def _graphs_of(data):
    """``(sequence of graphs, what to call them)`` for any input the estimators take."""
    if isinstance(data, TorchDataLoader):  # PyG's DataLoader is one: its dataset is the graphs
        return _graphs_of(data.dataset)
    if isinstance(data, Batch):
        return data.to_data_list(), "the batch"
    if isinstance(data, Data):
        return [data], "the graph"
    name = getattr(data, "name", None)
    what = f"dataset {name}" if isinstance(name, str) and name else "the data"
    if isinstance(data, (str, bytes)) or not (isinstance(data, Sequence) or hasattr(data, "__getitem__")):
        raise DataError(f"expected a PyG dataset, a list of Data, a Data, a Batch or a DataLoader, "
                        f"got {type(data).__name__}")
    if not hasattr(data, "__len__"):
        raise DataError(f"{type(data).__name__} has no length; pass a list of Data")
    return data, what


def _cache_key(data):
    if isinstance(data, TorchDataLoader):
        data = data.dataset
    if isinstance(data, InMemoryDataset):
        return ("dataset", id(data), len(data), id(getattr(data, "_data", None)), id(data.transform))
    if isinstance(data, list | tuple):
        return ("list", id(data), tuple(map(id, data)))
    return ("other", id(data))


def _label(y) -> tuple[int, str | None]:
    """``(class index or -1, problem)`` of a graph's ``y``: missing, ``None``, -1 or NaN is
    unlabeled; a single non-negative integer value is a class."""
    if y is None:
        return -1, None
    try:
        t = torch.as_tensor(y)
    except (TypeError, ValueError, RuntimeError):
        return -1, f"y={y!r} is not a number"
    if t.numel() != 1:
        return -1, f"y has {t.numel()} values (shape {tuple(t.shape)}), not one class index"
    if t.dtype == torch.bool or t.is_complex():
        return -1, f"y={y!r} is not a class index"
    v = t.item()
    if isinstance(v, float):
        if math.isnan(v):
            return -1, None
        if not v.is_integer():
            return -1, f"y={v} is not a class index (an integer)"
    v = int(v)
    if v == -1:
        return -1, None
    if v < 0:
        return -1, f"y={v} is negative (use -1 or no y for an unlabeled graph)"
    return v, None


def check_class_zero(labels, what: str) -> str | None:
    """The problem of class labels (-1: unlabeled) that have no class 0, as TU files number
    classes from 1: a model reading its class count off them would get a class that never
    occurs (labels 1, 2 give 3 classes). ``None`` when class 0 occurs, or nothing is labeled.
    The message shows the mapping to class indices."""
    t = torch.as_tensor(labels).view(-1)
    known = t[t >= 0]
    if known.numel() == 0 or int(known.min()) == 0:
        return None
    values = sorted(int(v) for v in torch.unique(known))
    mapping = ", ".join(f"{v} -> {i}" for i, v in enumerate(values[:8])) + (", ..." if len(values) > 8 else "")
    return (f"{what}: the labels are {values[:8]}{' ...' if len(values) > 8 else ''}, with no class 0 (TU files "
            f"number classes from 1); class labels are indices 0, 1, ...: relabel them ({mapping}; e.g. y - "
            f"{values[0]} when they are consecutive), or give num_classes to keep them as they are")


def check_edges(ei, n: int, where: str) -> torch.Tensor:
    """``edge_index`` of a graph of ``n`` nodes checked (a long 2 x E tensor of node indices in
    range), or a :class:`DataError` naming ``where``."""
    if ei is None:
        return torch.empty(2, 0, dtype=torch.long)
    if not isinstance(ei, torch.Tensor):
        raise DataError(f"{where}: edge_index must be a torch tensor, got {type(ei).__name__}")
    if ei.is_floating_point() or ei.is_complex() or ei.dtype == torch.bool:
        raise DataError(f"{where}: edge_index must hold integer node indices, got dtype {ei.dtype}")
    if ei.dim() != 2 or ei.shape[0] != 2:
        raise DataError(f"{where}: edge_index must have shape 2 x E, got {tuple(ei.shape)}")
    if ei.numel():
        lo, hi = int(ei.min()), int(ei.max())
        if lo < 0 or hi >= n:
            raise DataError(f"{where}: edge_index refers to node {lo if lo < 0 else hi}, but the graph has "
                            f"{n} node(s) (indices 0..{n - 1})")
    return ei.long()


class Estimator(nn.Module):
    """Shared base of the estimators (:class:`autogcl.AutoGCL`, :class:`autogcl.GraphCL`,
    :class:`autogcl.SemiSupervised`).

    Args:
        in_channels: node feature size; ``None`` reads it off the first data seen (``fit``,
            ``embed``, ``predict``: any of them builds the model).
        features: how graphs get ``x``: ``"auto"`` (default) keeps a graph's ``x`` and gives a
            graph without one the ``deg+odeg100`` degree features; a recipe string (e.g.
            ``"deg+odeg100"``, ``"constant"``; see :class:`autogcl.NodeFeatures`) applies it to
            every graph; ``None`` uses ``x`` as it is.
        recipe: the recipe the training graphs' ``x`` was built with, when it was built before
            (``autogcl.data.load_tu(feat=...)``; the command line records it): a graph whose
            ``x`` has another width gets it applied first, so a model trained on the project's
            MUTAG reads PyG's own ``TUDataset("MUTAG")``.
        edge_dim: ``None`` (default) ignores ``edge_attr`` (said once in the log when the
            graphs have one); ``"auto"`` reads its width off the data (ignored when the graphs
            have none); an int uses GINE convolutions over ``edge_attr`` of that width.

    Graphs are checked once (nodes present, ``edge_index`` a 2 x E integer tensor within the
    graph, ``x`` finite and of the model's width; integer and float64 features are read as
    float32) and kept, prepared, as a :class:`autogcl.data.batching.GraphStore` on the
    device; the next call with the same dataset or list of graphs reuses it (call
    :meth:`clear_cache` after changing graphs in place).
    """

    def __init__(self, in_channels: int | None = None, hidden: int = 128, num_layers: int = 5, *,
                 features: str | None = "auto", recipe: str | None = None, edge_dim: int | str | None = None,
                 lr: float = 0.001):
        super().__init__()
        if hidden < 1 or num_layers < 1:
            raise ConfigError(f"hidden and num_layers must be at least 1 (got {hidden}, {num_layers})")
        if not lr > 0:
            raise ConfigError(f"lr must be positive, got {lr}")
        for rule in (features, recipe):
            if rule not in (None, "auto"):
                NodeFeatures(rule)  # validates the recipe now
        if not (edge_dim is None or edge_dim == "auto" or (isinstance(edge_dim, int) and edge_dim >= 1)):
            raise ConfigError(f"edge_dim must be None, 'auto' or a positive int, got {edge_dim!r}")
        self.hparams = {"in_channels": in_channels, "hidden": hidden, "num_layers": num_layers,
                        "features": features, "recipe": recipe, "edge_dim": edge_dim, "lr": lr}
        self.history: list[dict] = []
        self._cache: list[tuple] = []
        self._warned_edges = False
        self._warned_int: set[str] = set()  # the kinds of integer features already said (_note_integers)

    # ------------------------------------------------------------------ construction
    def _build(self, in_channels: int, edge_dim: int | None) -> None:
        """Create the modules (subclasses; in the order that fixes their seeded initial weights)."""
        raise NotImplementedError

    def _ensure_built(self, in_channels: int, edge_dim: int | None) -> None:
        if not self.built:
            self.hparams["in_channels"] = int(in_channels)
            if self.hparams["edge_dim"] == "auto":
                self.hparams["edge_dim"] = edge_dim
            self._build(int(in_channels), self.hparams["edge_dim"])

    @property
    def built(self) -> bool:
        return self.hparams["in_channels"] is not None and hasattr(self, "encoder")

    @property
    def device(self) -> torch.device:
        return module_device(self)

    def clear_cache(self) -> None:
        """Forget the prepared graphs (after changing graphs in place)."""
        self._cache.clear()

    # ------------------------------------------------------------------ data
    def _feature_transforms(self):
        rule, recipe = self.hparams["features"], self.hparams["recipe"]
        auto = NodeFeatures(DEFAULT_RECIPE) if rule == "auto" else None
        forced = NodeFeatures(rule) if rule not in (None, "auto") else None
        return auto, forced, (NodeFeatures(recipe) if recipe else None)

    def _x_of(self, g: Data, i: int, what: str, transforms, width: int | None):
        auto, forced, recipe = transforms
        has_x = getattr(g, "x", None) is not None
        if forced is not None:
            g = forced(g)
        elif not has_x:
            if auto is None and recipe is None:
                raise DataError(f"{what}: graph {i} has no node features (x is None); use features='auto' or "
                                "a recipe such as 'deg+odeg100'")
            g = (recipe or auto)(g)
        elif recipe is not None and width is not None and g.x.dim() == 2 and g.x.shape[1] != width:
            g = recipe(g)  # raw features (e.g. PyG's one-hot node labels) -> the recipe's
        x = g.x
        if not isinstance(x, torch.Tensor):
            raise DataError(f"{what}: graph {i}: x must be a tensor, got {type(x).__name__}")
        if x.dim() == 1:
            x = x.view(-1, 1)
        if x.dim() != 2:
            raise DataError(f"{what}: graph {i}: x must be a (nodes x features) matrix, got shape {tuple(x.shape)}")
        if x.dtype == torch.bool or x.is_complex():
            raise DataError(f"{what}: graph {i}: x has dtype {x.dtype}; give numeric features")
        self._note_integers(x, "node features (x)", what)
        x = x.float()
        bad = ~torch.isfinite(x).all(1)
        if bool(bad.any()):
            raise DataError(f"{what}: graph {i} has a non-finite node feature (node {int(bad.nonzero()[0])})")
        if x.numel() and float(x.abs().max()) > MAX_FEATURE:
            raise DataError(f"{what}: graph {i} has node features up to {float(x.abs().max()):.3g}; scale them "
                            f"(e.g. standardise) below {MAX_FEATURE:.0e}: the encoder's float32 statistics "
                            "would overflow")
        return x

    def _note_integers(self, t: torch.Tensor, kind: str, what: str) -> None:
        """The one warning (once per model and kind) that integer features are read as numbers."""
        if t.is_floating_point() or t.dtype == torch.bool or kind in self._warned_int:
            return
        self._warned_int.add(kind)
        log.warning("%s: %s are integers (%s) and are read as numbers; if they are category ids (e.g. atom or bond "
                    "types), one-hot encode them first (torch.nn.functional.one_hot), or use the molecule encoder",
                    what, kind, t.dtype)

    def prepare(self, data) -> Prepared:
        """The graphs as the model reads them (see the class docstring), cached. Accepts a PyG
        dataset, a list of ``Data``, one ``Data``, a ``Batch`` or a PyG ``DataLoader``."""
        key = (_cache_key(data), self.hparams["in_channels"], self.hparams["edge_dim"])
        for k, ref, prepared in self._cache:
            if k == key:
                return prepared
        fast = self._prepare_in_memory(data)
        if fast is not None:
            return self._remember(key, data, fast)
        graphs, what = _graphs_of(data)
        n_graphs = len(graphs)
        if n_graphs == 0:
            raise DataError(f"{what}: no graphs given (an empty dataset)")
        transforms = self._feature_transforms()
        width, edge_dim = self.hparams["in_channels"], self.hparams["edge_dim"]
        out, labels, bad_label, has_edge_attr = [], [], None, 0
        for i in range(n_graphs):
            g = graphs[i]
            if not isinstance(g, Data):
                raise DataError(f"{what}: item {i} is a {type(g).__name__}, not a PyG Data")
            n = g.num_nodes
            if not n:
                raise DataError(f"{what}: graph {i} has no nodes; remove empty graphs first")
            ei = check_edges(getattr(g, "edge_index", None), n, f"{what}: graph {i}")
            if getattr(g, "edge_index", None) is None:  # no edge_index at all: an edgeless graph
                g = copy.copy(g)
                g.edge_index = ei
            made = getattr(g, "x", None) is None or transforms[1] is not None  # features of a recipe
            x = self._x_of(g, i, what, transforms, width)
            if x.shape[0] != n:
                raise DataError(f"{what}: graph {i}: x has {x.shape[0]} rows for {n} nodes")
            if width is None:
                width = int(x.shape[1])
            elif x.shape[1] != width:
                how = ""
                if made:
                    how = (f" (made by the node-feature recipe {self.hparams['features']!r}"
                           + (": the graph has no x)" if transforms[1] is None else ")"))
                raise DataError(f"{what}: graph {i} has {x.shape[1]} node features{how}, the model expects {width}")
            label, problem = _label(getattr(g, "y", None))
            if problem and bad_label is None:
                bad_label = f"{what}: graph {i}: {problem}"
            labels.append(label)
            item = Data(x=x, edge_index=ei, y=torch.tensor([label]), num_nodes=n)
            attr = getattr(g, "edge_attr", None)
            if attr is not None:
                has_edge_attr += 1
                attr = torch.as_tensor(attr)
                if edge_dim is not None:  # read by the encoder (an ignored edge_attr is said once, below)
                    self._note_integers(attr, "edge features (edge_attr)", what)
                attr = attr.float()
                attr = attr.view(attr.shape[0], -1) if attr.dim() else attr.view(1, 1)
                if attr.shape[0] != ei.shape[1]:
                    raise DataError(f"{what}: graph {i}: edge_attr has {attr.shape[0]} rows for "
                                    f"{ei.shape[1]} edges")
                if edge_dim == "auto":
                    edge_dim = int(attr.shape[1])
                if edge_dim is not None:
                    if attr.shape[1] != edge_dim:
                        raise DataError(f"{what}: graph {i}: edge_attr has {attr.shape[1]} columns, the model "
                                        f"expects edge_dim={edge_dim}")
                    bad = ~torch.isfinite(attr).all(1)
                    if bool(bad.any()):
                        raise DataError(f"{what}: graph {i} has a non-finite edge feature (edge "
                                        f"{int(bad.nonzero()[0])})")
                    item.edge_attr = attr
            elif edge_dim not in (None, "auto"):
                raise DataError(f"{what}: graph {i} has no edge_attr; the model reads edge features "
                                f"(edge_dim={edge_dim})")
            out.append(item)
        if edge_dim == "auto":
            edge_dim = None
        if 0 < has_edge_attr < n_graphs and edge_dim is not None:
            raise DataError(f"{what}: {has_edge_attr} of {n_graphs} graphs have edge_attr; the model reads edge "
                            "features, so every graph needs them")
        if has_edge_attr and edge_dim is None and not self._warned_edges:
            self._warned_edges = True
            log.warning("%s: edge_attr is ignored (give the estimator edge_dim='auto' to use it)", what)
        self._ensure_built(width, edge_dim)
        try:
            store = GraphStore.from_dataset(out, name=what)
        except DataError as exc:
            raise DataError(str(exc)) from exc
        labels = torch.tensor(labels, dtype=torch.long)
        return self._remember(key, data, Prepared(store, labels, bad_label or self._class_problem(labels, what)))

    def _class_problem(self, labels: torch.Tensor, what: str) -> str | None:
        """:func:`check_class_zero` for an estimator that reads its class count off the labels
        (a ``num_classes`` of ``None``); estimators without classes read labels as they are."""
        if "num_classes" not in self.hparams or self.hparams["num_classes"] is not None:
            return None
        return check_class_zero(labels, what)

    def _remember(self, key, data, prepared: Prepared) -> Prepared:
        key = (key[0], self.hparams["in_channels"], self.hparams["edge_dim"])  # as the next call will see them
        self._cache = [c for c in self._cache if c[0] != key][-3:] + [(key, data, prepared)]
        return prepared

    def _prepare_in_memory(self, data) -> Prepared | None:
        """The fast path for a PyG in-memory dataset whose graphs the model reads as they are
        (no transform, float32 ``x`` of the model's width, integer class labels or none, no
        edge features to read): its tensors become the store without a Python pass over the
        graphs, and the checks run on them at once. ``None`` where the general path is needed."""
        if isinstance(data, TorchDataLoader):
            data = data.dataset
        inner = getattr(data, "_data", None)
        if not isinstance(data, InMemoryDataset) or data.transform is not None or inner is None \
                or self.hparams["features"] not in ("auto", None) or self.hparams["edge_dim"] not in (None,):
            return None
        x, y = getattr(inner, "x", None), getattr(inner, "y", None)
        width = self.hparams["in_channels"]
        if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or x.dim() != 2 or len(data) == 0 \
                or (width is not None and x.shape[1] != width):
            return None
        if y is not None and (not isinstance(y, torch.Tensor) or y.is_floating_point() or y.dtype == torch.bool):
            return None
        what = f"dataset {data.name}" if isinstance(getattr(data, "name", None), str) else "the dataset"
        store = GraphStore.from_dataset(data, name=what)  # checks x finite, naming graph and node
        batch = store.batch(torch.arange(len(store)))
        if batch.y is not None and batch.y.numel() != len(store):
            return None
        sizes = batch.ptr[1:] - batch.ptr[:-1]
        if bool((sizes == 0).any()):
            raise DataError(f"{what}: graph {int((sizes == 0).nonzero()[0])} has no nodes; remove empty graphs first")
        ei = batch.edge_index
        if ei.numel():
            if ei.is_floating_point() or ei.dim() != 2 or ei.shape[0] != 2:
                return None
            edge_ptr = batch._slice_dict["edge_index"]
            owner = torch.repeat_interleave(torch.arange(len(store)), edge_ptr[1:] - edge_ptr[:-1])
            lo, hi = batch.ptr[owner], batch.ptr[owner + 1]
            bad = ((ei < lo) | (ei >= hi)).any(0)
            if bool(bad.any()):
                e = int(bad.nonzero()[0])
                g = int(owner[e])
                node = int(ei[0, e] if not lo[e] <= ei[0, e] < hi[e] else ei[1, e]) - int(lo[e])
                raise DataError(f"{what}: graph {g}: edge_index refers to node {node}, but the graph has "
                                f"{int(sizes[g])} node(s) (indices 0..{int(sizes[g]) - 1})")
        if batch.x.numel() and float(batch.x.abs().max()) > MAX_FEATURE:
            return None  # the general path names the graph
        labels = torch.full((len(store),), -1, dtype=torch.long) if batch.y is None else batch.y.view(-1).long()
        bad_label = None
        if bool((labels < -1).any()):
            bad_label = f"{what}: graph {int((labels < -1).nonzero()[0])}: a negative label other than -1"
            labels = labels.clamp(min=-1)
        bad_label = bad_label or self._class_problem(labels, what)
        if getattr(batch, "edge_attr", None) is not None and not self._warned_edges:
            self._warned_edges = True
            log.warning("%s: edge_attr is ignored (give the estimator edge_dim='auto' to use it)", what)
        self._ensure_built(int(x.shape[1]), None)
        return Prepared(store, labels, bad_label)

    def loader(self, data, batch_size: int, shuffle: bool = False, generator=None, indices=None,
               device=None) -> GraphLoader:
        """Batches of the prepared ``data`` on ``device`` (default: the model's)."""
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive int, got {batch_size!r}")
        store = self.prepare(data).store
        return GraphLoader(store, batch_size, shuffle=shuffle, generator=generator, indices=indices,
                           device=self.device if device is None else device)

    @staticmethod
    def _batch_size(data, batch_size: int | None, default: int) -> int:
        """The batch size asked for, else a DataLoader's own, else ``default``."""
        if batch_size is not None:
            return batch_size
        own = getattr(data, "batch_size", None) if isinstance(data, TorchDataLoader) else None
        return own or default

    @staticmethod
    def _generator(seed) -> torch.Generator:
        """The generator of a fit's data order: ``seed`` itself when it is a ``torch.Generator``
        (the global RNG is left as it is: the protocols build the model after seeding, then
        fit with the generator :func:`autogcl.seed_everything` returned), else one seeded
        from ``seed`` after seeding every RNG, else one drawn from torch's global RNG."""
        if isinstance(seed, torch.Generator):
            return seed
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**32:
                raise ConfigError(f"seed must be an int in [0, 2**32), a torch.Generator or None, got {seed!r}")
            return seeding.seed_everything(int(seed))
        return torch.Generator().manual_seed(int(torch.randint(2**31 - 1, (1,))))

    #: the deterministic-kernels setting of the last fit (its ``Engine``'s), for what runs after it
    _deterministic = False

    def _kernels(self, device=None):
        """PyTorch's deterministic kernels around inference after a fit (settling, embeddings,
        predictions) when that fit ran under them, or when ``device`` is an ``Engine`` asking
        for them (:func:`autogcl.devices.deterministic_kernels`)."""
        return deterministic_kernels(device.deterministic if isinstance(device, Engine) else self._deterministic)

    def _to(self, device) -> torch.device:
        """Move the model to ``device`` (``None``: stay) and return where it is."""
        if device is not None:
            dev = resolve_device(device)
            self.to(dev)
            return dev
        return self.device

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """``nn.Module.load_state_dict``; the model then counts as trained (no warning from ``embed``)."""
        out = super().load_state_dict(state_dict, strict=strict, assign=assign)
        self._weights_given = True
        return out

    def _warn_untrained(self, call: str = "embed", answers: str = "the embeddings") -> None:
        """The one rule of every answer before fit (``embed``, ``predict``, ``score``, ...): warn
        (once per model) that a model never fitted nor given weights answers ``call`` with
        ``answers`` from its random initial weights."""
        in_fit = getattr(self, "_strategy", None) is not None or getattr(self, "_strategies", None) is not None
        if self.history or getattr(self, "_weights_given", False) or getattr(self, "_warned_untrained", False) \
                or in_fit:  # in a fit (an evaluate callback), or after one
            return
        self._warned_untrained = True
        log.warning("%s: %s before fit: the model is untrained, so %s come from its random initial weights (fit it "
                    "first, or autogcl.load a trained one)", type(self).__name__, call, answers)

    @staticmethod
    def _tracker(log_dir, desc: str, tracking: str | None = None):
        """The tracker of ``fit(log_dir=..., tracking=...)`` (TensorBoard scalars in ``log_dir``,
        or the metrics of an MLflow run in the store ``log_dir``), or ``None`` (then
        ``$AUTOGCL_LOG_DIR`` may still give one: :class:`autogcl.train.Trainer`)."""
        from ..train.tracking import fit_tracker

        return fit_tracker(log_dir, desc, tracking)

    @staticmethod
    def _check_checkpoint(checkpoint) -> None:
        """A :class:`ConfigError` when ``fit(checkpoint=...)`` names an existing file that is not
        a training checkpoint (a saved model, a molecule encoder, ...): resuming would fail, and
        checkpointing would overwrite it."""
        if checkpoint is None or not Path(checkpoint).is_file():
            return
        try:
            blob = torch.load(checkpoint, map_location="cpu", weights_only=True)
        except Exception:  # noqa: BLE001 - unreadable: the checkpoint loader names the damage
            return
        if isinstance(blob, dict) and "format" in blob:
            raise ConfigError(f"fit(checkpoint={str(checkpoint)!r}): the file holds {describe_file(blob)}, not a "
                              "training checkpoint; name a new file for the checkpoint (a saved model is loaded with "
                              "autogcl.load, and fitting it again continues its training)")

    def _check_trained(self, what: str = "fit") -> None:
        """A :class:`TrainingError` when a weight or a BatchNorm statistic is not finite."""
        for name, t in [*self.named_parameters(), *self.named_buffers()]:
            if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                raise TrainingError(f"after {what}, {name} is not finite (diverged training: lower lr, or scale "
                                    "the node features)")

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path) -> Path:
        """Write the whole model (class, hyper-parameters, feature rule, weights on the CPU and
        their digest, history) atomically; :func:`autogcl.load` restores it, after checking
        every tensor against the digest (:func:`autogcl.atomic.check_weights`)."""
        if not self.built:
            raise ConfigError("nothing to save yet: the model has no weights (give in_channels, or fit it)")
        state = {k: v.detach().cpu() for k, v in self.state_dict().items()}
        atomic.atomic_save(atomic.with_digest({"format": MODEL_FORMAT, "class": type(self).__name__,
                                               "hparams": dict(self.hparams), "state_dict": state,
                                               "history": list(self.history), "autogcl": __version__}), path)
        return Path(path)

    @classmethod
    def load(cls, path: str | Path, device="cpu") -> Estimator:
        """Restore a model of this class written by ``save`` (see :func:`autogcl.load`, which
        takes every kind): a file of another kind is a :class:`DataError` naming what it holds
        and what loads it."""
        return _restore(*_read_model(path, device), cls=cls)

    @classmethod
    def from_saved(cls, blob: dict, path: Path) -> Estimator:
        """Rebuild from a model file's ``hparams`` and load its weights (on the CPU)."""
        hp = dict(blob["hparams"])
        try:
            model = cls(**hp)
        except TypeError as exc:
            raise DataError(f"{path}: its hyper-parameters do not fit {cls.__name__} ({exc})") from exc
        if not model.built:
            raise DataError(f"{path}: the file records no in_channels; it holds no trained {cls.__name__}")
        incompatible = _state_mismatch(model, blob["state_dict"])
        if incompatible:
            raise DataError(f"{path}: its weights are not those of a {cls.__name__} with the recorded "
                            f"hyper-parameters ({incompatible}); the file holds another architecture")
        model.load_state_dict(blob["state_dict"])
        model.history = list(blob.get("history", []))
        return model


def _state_mismatch(model: nn.Module, state: dict) -> str:
    """What keeps ``state`` from loading into ``model`` ('' when nothing)."""
    if not isinstance(state, dict):
        return "no state dict"
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    extra = [k for k in state if k not in own]
    shapes = [k for k in own if k in state and hasattr(state[k], "shape") and tuple(state[k].shape) != tuple(own[k].shape)]
    parts = []
    if missing:
        parts.append(f"{len(missing)} missing, e.g. {missing[0]!r}")
    if extra:
        parts.append(f"{len(extra)} unexpected, e.g. {extra[0]!r}")
    if shapes:
        k = shapes[0]
        parts.append(f"{k!r} has shape {tuple(state[k].shape)}, expected {tuple(own[k].shape)}")
    return "; ".join(parts)


#: files autogcl writes that are not model files :func:`load` restores: format -> what they
#: hold and how to read them
OTHER_FORMATS = {
    "autogcl-semi-classifier-1": (
        "a classifier of an earlier autogcl's semi-supervised protocol (a ResGCN written by `autogcl semi` "
        "up to commit b434260)",
        "rerun its fold: `autogcl semi` now writes SemiSupervised models, which autogcl.load and "
        "autogcl embed --model read"),
}


def _a(name: str) -> str:
    return f"{'an' if name[:1] in 'AEIOU' else 'a'} {name}"


def describe_file(blob) -> str:
    """What a file autogcl reads holds, in words ("a GraphCL model", "a molecule encoder", ...)."""
    from .. import molecules

    if not isinstance(blob, dict):
        return f"a {type(blob).__name__}, not an autogcl file"
    fmt = blob.get("format")
    if fmt == MODEL_FORMAT:
        return f"{_a(str(blob.get('class')))} model"
    if fmt == molecules.ENCODER_FORMAT:
        return "a molecule encoder"
    if fmt == molecules.PREDICTOR_FORMAT:
        return "a fine-tuned molecule predictor"
    if fmt in OTHER_FORMATS:
        return OTHER_FORMATS[fmt][0]
    if "modules" in blob and "optimizers" in blob:
        return "a training checkpoint (fit(checkpoint=...)), not a model"
    if blob and all(isinstance(v, torch.Tensor) for v in blob.values()):
        return f"a bare state dict of {len(blob)} tensors (e.g. {next(iter(blob))!r})"
    return f"format {fmt!r}" if fmt else "no autogcl format"


def _loader_of(blob) -> str:
    """The call that loads a file of this kind."""
    from .. import molecules

    fmt = blob.get("format") if isinstance(blob, dict) else None
    if fmt == MODEL_FORMAT and blob.get("class") in MODEL_TYPES:
        return f"autogcl.{blob['class']}.load"
    return {molecules.ENCODER_FORMAT: "autogcl.MoleculeEncoder.load",
            molecules.PREDICTOR_FORMAT: "autogcl.MoleculePredictor.load"}.get(fmt, "")


def model_path(name_or_path: str | Path) -> Path:
    """The file of a model: a path, or the name of a shipped encoder (``autogcl-moses-fullx1``,
    :func:`autogcl.pretrained_encoders`); a clear :class:`DataError` when it is neither."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    if path.is_dir():
        raise DataError(f"{path}: a folder, not a model file (name the model.pt inside it)")
    from .. import molecules

    try:
        return molecules.resolve_encoder(path)
    except DataError:
        known = molecules.pretrained_encoders()
        raise DataError(f"{path}: no such model file, nor the name of a shipped encoder (shipped: "
                        f"{', '.join(known) if known else 'none'})") from None


def _read_model(name_or_path, device, map_location=None) -> tuple[Path, torch.device, object]:
    """``(file, device, what the file holds)``, read with ``weights_only=True`` onto the CPU."""
    if map_location is not None:
        device = map_location
    try:
        dev = resolve_device(device)
    except ConfigError as exc:
        raise ConfigError(f"load(device={device!r}): {exc}".replace("use --device cpu or auto",
                                                                  "use device='cpu' or 'auto'")) from exc
    path = model_path(name_or_path)
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a damaged or unsafe file
        raise DataError(f"{path}: not a readable autogcl model ({type(exc).__name__})") from exc
    return path, dev, blob


def _restore(path: Path, dev: torch.device, blob, cls: type | None = None):
    """The model in ``blob`` (any kind when ``cls`` is None, else a ``cls`` or a subclass)."""
    from .. import molecules  # molecule encoders and predictors (the shipped encoder) have their own classes

    is_model = isinstance(blob, dict) and blob.get("format") == MODEL_FORMAT
    found = MODEL_TYPES.get(blob.get("class")) if is_model else None
    if cls is not None and not (found is not None and issubclass(found, cls)):
        use = _loader_of(blob)
        hint = f"use {use} or autogcl.load" if use else "autogcl.load tells what it is"
        if isinstance(blob, dict) and blob.get("format") in OTHER_FORMATS:
            hint = OTHER_FORMATS[blob["format"]][1]
        raise DataError(f"{path}: this file holds {describe_file(blob)}, not {_a(cls.__name__)} model; {hint}")
    if isinstance(blob, dict) and blob.get("format") in molecules.FORMATS:
        return molecules.load_file(path, dev)
    if isinstance(blob, dict) and blob.get("format") in OTHER_FORMATS:
        what, how = OTHER_FORMATS[blob["format"]]
        raise DataError(f"{path}: {what}, not a model autogcl.load restores; {how}")
    if not is_model:
        raise DataError(f"{path}: holds {describe_file(blob)}, not an autogcl model file (format {MODEL_FORMAT}, "
                        "written by a model's save(); a molecule encoder or predictor; or a shipped encoder's name)")
    if found is None:
        raise DataError(f"{path}: holds a model of type {blob.get('class')!r}, which this autogcl cannot load "
                        f"(known: {', '.join(sorted(MODEL_TYPES))})")
    for key in ("hparams", "state_dict"):
        if not isinstance(blob.get(key), dict):
            raise DataError(f"{path}: the model file has no {key}")
    atomic.check_weights(blob, path)  # a tensor damaged on disk: refused by name
    return found.from_saved(blob, path).to(dev)


def load(path: str | Path, device="cpu", map_location=None):
    """Restore any model autogcl writes, whatever its kind: a model's ``save`` (AutoGCL,
    GraphCL, SemiSupervised, any registered type), a molecule encoder or predictor
    (:mod:`autogcl.molecules`), or a shipped encoder by name (``"autogcl-moses-fullx1"``), on
    ``device`` (``"cpu"``, ``"auto"``, ``"cuda"``, ``"cuda:N"``: as ``fit`` and ``embed`` take
    it). Read with ``torch.load(weights_only=True)``: the file cannot run code. Another file
    autogcl writes (a checkpoint, the command line's semi-supervised classifier) is a
    :class:`DataError` saying what it is and what reads it. ``map_location`` is the former
    name of ``device``. ``AutoGCL.load``, ``GraphCL.load``, ... load their own kind only."""
    return _restore(*_read_model(path, device, map_location))
