"""The estimators researchers use on their own graphs: :class:`AutoGCL` (learnable view
generators, the naive strategy) and :class:`GraphCL` (random augmentations).

Each wraps a GIN encoder and its projection head; ``fit`` trains it contrastively on any PyG
dataset or sequence of ``Data`` (labels unused), on any device, with a progress bar, and
returns the per-epoch history; ``embed`` gives graph embeddings as a tensor; ``save`` and
:func:`load` store and restore the whole model (architecture, feature rule, weights,
history) and load safely (``weights_only``). The unsupervised protocol builds its models
with these classes. See ``docs/api.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

from . import __version__, runs
from .augment import RandomAugmentor, ViewGenerator
from .augment.learnable import DROPPED_MODES, MASK_TOKENS, ViewDecision
from .choices import SIM_LOSSES
from .data.features import DEFAULT_RECIPE, NodeFeatures
from .devices import resolve_device
from .errors import ConfigError, DataError
from .losses import cl_kwargs
from .models import ContrastModel, GINEncoder
from .models.embed import embed as _embed
from .models.embed import module_device
from .train import GraphCLStrategy, NaiveStrategy, Trainer

__all__ = ["AutoGCL", "ContrastiveLearner", "GraphCL", "load"]

MODEL_FORMAT = "autogcl-model-1"


@contextmanager
def _eval_mode(*modules: nn.Module):
    """Modules in eval mode inside the block, their own mode restored after it."""
    was = [m.training for m in modules]
    for m in modules:
        m.eval()
    try:
        yield
    finally:
        for m, w in zip(modules, was):
            m.train(w)


class ContrastiveLearner(nn.Module):
    """Shared base of :class:`AutoGCL` and :class:`GraphCL`: a GIN encoder
    (``num_layers`` x ``hidden``, embedding ``num_layers * hidden``) with a projection head.

    Args:
        in_channels: node feature size; ``None`` infers it from the first data seen.
        features: how graphs get ``x``: ``"auto"`` (default) keeps a graph's ``x`` and gives a
            graph without one the ``deg+odeg100`` degree features; a recipe string (e.g.
            ``"deg+odeg100"``, ``"constant"``; see :class:`autogcl.NodeFeatures`) applies it to
            every graph; ``None`` uses ``x`` as it is (an error where it is missing).
    """

    def __init__(self, in_channels: int | None = None, hidden: int = 128, num_layers: int = 5, *,
                 features: str | None = "auto", lr: float = 0.001, tau: float = 0.5, cl_variant: str = "simclr"):
        super().__init__()
        if hidden < 1 or num_layers < 1:
            raise ConfigError(f"hidden and num_layers must be at least 1 (got {hidden}, {num_layers})")
        if not lr > 0:
            raise ConfigError(f"lr must be positive, got {lr}")
        if not tau > 0:
            raise ConfigError(f"tau must be positive, got {tau}")
        if features not in (None, "auto"):
            NodeFeatures(features)  # validates the recipe now
        cl_kwargs(cl_variant, "autogcl")  # validates the NT-Xent variant now
        self.hparams = {"in_channels": in_channels, "hidden": hidden, "num_layers": num_layers,
                        "features": features, "lr": lr, "tau": tau, "cl_variant": cl_variant}
        self.history: list[dict] = []
        self._strategy = None
        if in_channels is not None:
            self._build(in_channels)

    # ------------------------------------------------------------------ construction
    def _build(self, in_channels: int) -> None:
        """Create the modules (in the order that fixes their seeded initial weights)."""
        self.hparams["in_channels"] = int(in_channels)
        self.encoder = GINEncoder(in_channels, self.hparams["hidden"], self.hparams["num_layers"])
        self.contrast = ContrastModel(self.encoder)

    @property
    def built(self) -> bool:
        return self.hparams["in_channels"] is not None and hasattr(self, "contrast")

    @property
    def out_channels(self) -> int:
        """Size of the graph embeddings (``num_layers * hidden``)."""
        return self.hparams["hidden"] * self.hparams["num_layers"]

    @property
    def device(self) -> torch.device:
        return module_device(self)

    def make_strategy(self, lr: float | None = None):
        """A fresh training strategy (and optimizer) over this model's modules."""
        raise NotImplementedError

    # ------------------------------------------------------------------ data
    def prepare(self, data) -> list[Data] | object:
        """The graphs as the encoder reads them: the feature rule applied, every graph checked
        (nodes present, ``x`` of the model's width). Accepts a PyG dataset, a sequence of
        ``Data``, one ``Data`` or a ``Batch``."""
        if isinstance(data, Batch):
            data = data.to_data_list()
        elif isinstance(data, Data):
            data = [data]
        if not isinstance(data, Sequence) and not hasattr(data, "__getitem__"):
            raise DataError(f"expected a PyG dataset or a sequence of Data, got {type(data).__name__}")
        if len(data) == 0:
            raise DataError("no graphs given (an empty dataset)")
        rule = self.hparams["features"]
        transform = None if rule is None else NodeFeatures(DEFAULT_RECIPE if rule == "auto" else rule)
        out, width = [], self.hparams["in_channels"]
        needs_copy = rule not in (None, "auto")
        for i in range(len(data)):
            g = data[i]
            if not g.num_nodes:
                raise DataError(f"graph {i} has no nodes; remove empty graphs before training")
            has_x = getattr(g, "x", None) is not None
            if transform is not None and (needs_copy or not has_x):
                g = transform(g)
            elif not has_x:
                raise DataError(f"graph {i} has no node features (x is None); use features='auto' or "
                                "a recipe such as 'deg+odeg100'")
            if g.x.dim() != 2:
                raise DataError(f"graph {i}: x must be a (nodes x features) matrix, got shape {tuple(g.x.shape)}")
            if width is None:
                width = int(g.x.shape[1])
            elif g.x.shape[1] != width:
                raise DataError(f"graph {i} has {g.x.shape[1]} node features, the model expects {width}")
            out.append(g)
        if not self.built:
            self._build(width)
        return out

    def _loader(self, data, batch_size: int, shuffle: bool, generator=None) -> DataLoader:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
        return DataLoader(self.prepare(data), batch_size=batch_size, shuffle=shuffle, generator=generator)

    # ------------------------------------------------------------------ training
    def fit(self, data, epochs: int = 30, batch_size: int = 128, device="auto", seed: int | None = None,
            progress: bool | None = None, evaluate=None, checkpoint: str | Path | None = None) -> list[dict]:
        """Train contrastively on ``data`` (labels unused) and return one row per epoch:
        ``epoch``, the loss terms, ``time_s`` and whatever ``evaluate(epoch)`` returns.

        ``device``: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``, ``"cuda:N"``.
        ``seed`` seeds every RNG (data order, views) before training; seed torch yourself
        (``autogcl.seed_everything``) before building the model to fix its initial weights.
        ``checkpoint``: a file to checkpoint every epoch to and to resume from. Calling ``fit``
        again continues training (epochs count on)."""
        if epochs < 0:
            raise ConfigError(f"epochs must be at least 0, got {epochs}")
        gen = runs.seed_everything(seed) if seed is not None else torch.Generator().manual_seed(
            int(torch.randint(2**31 - 1, (1,))))
        loader = self._loader(data, batch_size, shuffle=True, generator=gen)
        if self._strategy is None:
            self._strategy = self.make_strategy()
        done = len(self.history)
        trainer = Trainer(self._strategy, device=resolve_device(device), checkpoint=checkpoint, loader_gen=gen,
                          desc=type(self).__name__, show_progress=progress)
        rows = [r for r in trainer.fit(loader, done + epochs, evaluate=evaluate, start=done + 1)
                if r["epoch"] > done]  # a checkpoint may also hold the rows of earlier calls
        self.history.extend(rows)
        return rows

    @torch.no_grad()
    def embed(self, data, batch_size: int = 512, device=None) -> torch.Tensor:
        """Graph embeddings (``graphs x out_channels``, CPU tensor, eval mode) of any graphs,
        labeled or not, in their order. ``device``: where to compute (default: the model's)."""
        if device is not None:
            self.to(resolve_device(device))
        emb, _ = _embed(self.encoder, self._loader(data, batch_size, shuffle=False))
        return emb

    def forward(self, batch) -> torch.Tensor:
        """The graph embeddings of a batch (with gradients)."""
        return self.encoder(batch)

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path) -> Path:
        """Write the whole model (class, hyper-parameters, feature rule, weights on the CPU,
        history) atomically; :func:`load` restores it."""
        if not self.built:
            raise ConfigError("nothing to save yet: the model has no weights (give in_channels or fit it)")
        state = {k: v.detach().cpu() for k, v in self.state_dict().items()}
        runs.atomic_save({"format": MODEL_FORMAT, "class": type(self).__name__, "hparams": dict(self.hparams),
                          "state_dict": state, "history": list(self.history), "autogcl": __version__}, path)
        return Path(path)


class AutoGCL(ContrastiveLearner):
    """AutoGCL with two learnable view generators, trained with the naive strategy
    (Algorithm 1 of the paper): for each batch the generators make views x1, x2, two views
    drawn with replacement from {x, x1, x2} are contrasted with NT-Xent, and the encoder and
    both generators are updated together.

    Args (beyond :class:`ContrastiveLearner`'s):
        add_mask: generators may also mask nodes (keep / drop / mask instead of keep / drop).
        dropped: ``"isolate"`` (dropped nodes stay as isolated zero-feature nodes, as released)
            or ``"remove"``.
        mask_token: ``"scalar"`` (the batch's mean feature value) or ``"feature"`` (per-feature mean).
        sim_loss: ``"none"`` (published), or add L_sim: ``"cosine"`` or ``"mse"`` (released).
        cl_variant: NT-Xent form: ``"simclr"`` (published) or ``"released"`` (the positive left
            out of the denominator). ``sim_loss="mse", cl_variant="released"`` is the released
            code's form; docs/results/loss_forms.md compares the two.
        view_sampling: ``"replacement"`` (released) or ``"generated"`` (always x1 and x2).
        gen_hidden, gen_layers: the generators' GIN scorer (released: 128, 2).

    ``model.gen1`` and ``model.gen2`` are :class:`autogcl.ViewGenerator` modules;
    :meth:`inspect` shows what they do to a batch.
    """

    def __init__(self, in_channels: int | None = None, hidden: int = 128, num_layers: int = 5, *,
                 add_mask: bool = False, dropped: str = "isolate", mask_token: str = "scalar",
                 sim_loss: str = "none", view_sampling: str = "replacement", gen_hidden: int = 128,
                 gen_layers: int = 2, features: str | None = "auto", lr: float = 0.001, tau: float = 0.5,
                 cl_variant: str = "simclr"):
        if sim_loss not in SIM_LOSSES:
            raise ConfigError(f"unknown similarity loss {sim_loss!r}; choose from {', '.join(SIM_LOSSES)}")
        if view_sampling not in ("replacement", "generated"):
            raise ConfigError(f"unknown view sampling {view_sampling!r}; choose replacement or generated")
        if dropped not in DROPPED_MODES or mask_token not in MASK_TOKENS:
            raise ConfigError(f"dropped must be one of {DROPPED_MODES} and mask_token one of {MASK_TOKENS}; "
                              f"got {dropped!r}, {mask_token!r}")
        self._gen_kwargs = {"add_mask": add_mask, "dropped": dropped, "mask_token": mask_token,
                            "gen_hidden": gen_hidden, "gen_layers": gen_layers, "sim_loss": sim_loss,
                            "view_sampling": view_sampling}
        super().__init__(in_channels, hidden, num_layers, features=features, lr=lr, tau=tau, cl_variant=cl_variant)
        self.hparams.update(self._gen_kwargs)

    def _build(self, in_channels: int) -> None:
        super()._build(in_channels)
        k = self._gen_kwargs
        self.gen1, self.gen2 = (ViewGenerator(in_channels, k["gen_hidden"], k["gen_layers"], k["add_mask"],
                                              k["dropped"], k["mask_token"]) for _ in range(2))

    def make_strategy(self, lr: float | None = None) -> NaiveStrategy:
        h = self.hparams
        params = list(self.contrast.parameters()) + list(self.gen1.parameters()) + list(self.gen2.parameters())
        opt = torch.optim.Adam(params, lr=h["lr"] if lr is None else lr)
        return NaiveStrategy(
            self.contrast, self.gen1, self.gen2, opt, tau=h["tau"], cl_variant=h["cl_variant"],
            sim_kind="cosine" if h["sim_loss"] == "none" else h["sim_loss"],
            sim_weight=0.0 if h["sim_loss"] == "none" else 1.0, view_sampling=h["view_sampling"])

    @torch.no_grad()
    def inspect(self, data, deterministic: bool = False) -> tuple[ViewDecision, ViewDecision]:
        """What both generators do to ``data`` (graphs batched together, in eval mode): the
        operation of every node (0 keep, 1 drop, 2 mask) and the operation probabilities;
        ``deterministic`` takes each node's most probable operation instead of sampling."""
        batch = Batch.from_data_list(self.prepare(data)).to(self.device)
        with _eval_mode(self.gen1, self.gen2):
            return self.gen1.inspect(batch, deterministic), self.gen2.inspect(batch, deterministic)

    @torch.no_grad()
    def views(self, data, deterministic: bool = False):
        """The two generated views of ``data`` (one ``Batch`` each, eval mode)."""
        batch = Batch.from_data_list(self.prepare(data)).to(self.device)
        with _eval_mode(self.gen1, self.gen2):
            return self.gen1(batch, deterministic)[0], self.gen2(batch, deterministic)[0]


class GraphCL(ContrastiveLearner):
    """The GraphCL baseline (You et al. 2020): contrast two random augmentations of each batch.

    Args (beyond :class:`ContrastiveLearner`'s; ``tau`` defaults to 0.2 as released):
        aug: ``random4`` (one of node_drop, subgraph, edge_pert, attr_mask drawn per view and
            batch) or one of them, or ``none``.
        aug_ratio: the augmentation ratio (0.2).
        views: ``"aug-aug"`` (two augmentations) or ``"orig-aug"`` (the graph and one).
    """

    def __init__(self, in_channels: int | None = None, hidden: int = 128, num_layers: int = 5, *,
                 aug: str = "random4", aug_ratio: float = 0.2, views: str = "aug-aug",
                 features: str | None = "auto", lr: float = 0.001, tau: float = 0.2, cl_variant: str = "simclr"):
        RandomAugmentor(aug, aug_ratio)  # validates both
        if views not in ("aug-aug", "orig-aug"):
            raise ConfigError(f"unknown GraphCL views {views!r}; choose aug-aug or orig-aug")
        super().__init__(in_channels, hidden, num_layers, features=features, lr=lr, tau=tau, cl_variant=cl_variant)
        self.hparams.update(aug=aug, aug_ratio=aug_ratio, views=views)

    def make_strategy(self, lr: float | None = None) -> GraphCLStrategy:
        h = self.hparams
        opt = torch.optim.Adam(self.contrast.parameters(), lr=h["lr"] if lr is None else lr)
        augs = RandomAugmentor(h["aug"], h["aug_ratio"]), RandomAugmentor(h["aug"], h["aug_ratio"])
        return GraphCLStrategy(self.contrast, *augs, opt, tau=h["tau"], cl_variant=h["cl_variant"], views=h["views"])


_CLASSES = {"AutoGCL": AutoGCL, "GraphCL": GraphCL}


def load(path: str | Path, map_location="cpu"):
    """Restore a model written by :meth:`ContrastiveLearner.save` (no rebuilding by the caller),
    or a molecule encoder or predictor (:mod:`autogcl.molecules`, e.g. the shipped encoder).
    Read with ``torch.load(weights_only=True)``: the file cannot run code."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such model file")
    try:
        blob = torch.load(path, map_location=resolve_device(map_location), weights_only=True)
    except Exception as exc:  # torch raises many types for a damaged or unsafe file
        raise DataError(f"{path}: not a readable autogcl model ({type(exc).__name__})") from exc
    from . import molecules  # molecule encoders and predictors have their own classes

    if isinstance(blob, dict) and blob.get("format") in molecules.FORMATS:
        return molecules.load_file(path, map_location)
    if not isinstance(blob, dict) or blob.get("format") != MODEL_FORMAT or blob.get("class") not in _CLASSES:
        raise DataError(f"{path}: not an autogcl model file (expected format {MODEL_FORMAT})")
    hp = dict(blob["hparams"])
    model = _CLASSES[blob["class"]](**hp)
    model.load_state_dict(blob["state_dict"])
    model.history = list(blob.get("history", []))
    return model.to(resolve_device(map_location))
