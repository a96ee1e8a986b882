"""The semi-supervised estimator: a GIN graph classifier trained on a few labeled graphs
among many unlabeled ones, with AutoGCL's joint strategy (the paper's Algorithm 2) or a
baseline."""

from __future__ import annotations

import torch

from ..augment import RandomAugmentor, ViewGenerator
from ..data.batching import GraphLoader
from ..choices import (
    AUGMENTATIONS,
    AUG_RANDOM4,
    CL_SIMCLR,
    DROPPED,
    DROP_ISOLATE,
    MASK_SCALAR,
    MASK_TOKENS,
    SIM_COSINE,
    SIM_MSE,
)
from ..devices import resolve_device
from ..errors import ConfigError, DataError
from ..models import GINClassifier, GINEncoder
from ..models.embed import embed as _embed
from ..train import GraphCLStrategy, JointStrategy, NaiveStrategy, SupervisedStrategy, Trainer
from ..train.optim import adam
from .base import Estimator, _label, register_model_type

__all__ = ["SEMI_STRATEGIES", "SemiSupervised"]

#: the strategies of :class:`SemiSupervised`
SEMI_STRATEGIES = ("joint", "naive", "graphcl", "supervised")


@register_model_type
class SemiSupervised(Estimator):
    """A graph classifier (GIN encoder, ``num_layers`` x ``hidden``, and a two-layer head)
    trained on partly labeled graphs. A graph is unlabeled when it has no ``y``, ``y`` is
    ``None``, -1 or NaN (or give ``labels=`` to ``fit``, with -1 for unlabeled).

    Args (beyond :class:`autogcl.api.Estimator`'s):
        num_classes: ``None`` reads it off the labels (the largest class index + 1).
        strategy:
            ``"joint"`` (default; AutoGCL's joint strategy, Algorithm 2 of the paper): every
            epoch a contrastive pass over all graphs (views from two learnable generators,
            which stay fixed in it), then a labeled pass with the cross-entropy of the graph
            and both views plus ``lam`` x L_sim, which also trains the generators;
            ``"naive"``: AutoGCL's naive contrastive pre-training on all graphs for
            ``pretrain_epochs``, then the labeled pass alone;
            ``"graphcl"``: GraphCL pre-training (random ``aug``) on all graphs, then supervised
            training on the labeled graphs;
            ``"supervised"``: the labeled graphs only (the baseline without unlabeled data).
        lam, tau, cl_variant, sim_loss: L_sim weight, NT-Xent temperature and form, L_sim form.
        add_mask, dropped, mask_token, gen_hidden, gen_layers: the view generators (as
            :class:`autogcl.AutoGCL`).
        aug, aug_ratio: the GraphCL strategy's augmentation.
    """

    def __init__(self, in_channels: int | None = None, num_classes: int | None = None, hidden: int = 128,
                 num_layers: int = 3, *, strategy: str = "joint", lam: float = 1.0, tau: float = 0.5,
                 cl_variant: str = CL_SIMCLR, sim_loss: str = SIM_COSINE, add_mask: bool = False,
                 dropped: str = DROP_ISOLATE, mask_token: str = MASK_SCALAR, gen_hidden: int = 128, gen_layers: int = 2,
                 aug: str = AUG_RANDOM4, aug_ratio: float = 0.2, features: str | None = "auto",
                 recipe: str | None = None, edge_dim: int | str | None = None, lr: float = 0.001):
        super().__init__(in_channels, hidden, num_layers, features=features, recipe=recipe, edge_dim=edge_dim,
                         lr=lr)
        if strategy not in SEMI_STRATEGIES:
            raise ConfigError(f"unknown strategy {strategy!r}; choose from {', '.join(SEMI_STRATEGIES)}")
        if num_classes is not None and (not isinstance(num_classes, int) or num_classes < 2):
            raise ConfigError(f"num_classes must be an int of at least 2, got {num_classes!r}")
        if sim_loss not in (SIM_COSINE, SIM_MSE):
            raise ConfigError(f"unknown similarity loss {sim_loss!r}; choose cosine or mse")
        if dropped not in DROPPED or mask_token not in MASK_TOKENS:
            raise ConfigError(f"dropped must be one of {DROPPED} and mask_token one of {MASK_TOKENS}")
        if aug not in AUGMENTATIONS:
            raise ConfigError(f"unknown augmentation {aug!r}; choose from {', '.join(AUGMENTATIONS)}")
        RandomAugmentor(aug, aug_ratio)  # validates the ratio
        if not tau > 0 or lam < 0:
            raise ConfigError(f"tau must be positive and lam at least 0 (got {tau}, {lam})")
        self.hparams.update(num_classes=num_classes, strategy=strategy, lam=lam, tau=tau, cl_variant=cl_variant,
                            sim_loss=sim_loss, add_mask=add_mask, dropped=dropped, mask_token=mask_token,
                            gen_hidden=gen_hidden, gen_layers=gen_layers, aug=aug, aug_ratio=aug_ratio)
        if in_channels is not None and num_classes is not None and edge_dim != "auto":
            self._ensure_built(in_channels, edge_dim)

    @property
    def built(self) -> bool:
        return super().built and self.hparams["num_classes"] is not None

    def _ensure_built(self, in_channels: int, edge_dim: int | None) -> None:
        if self.hparams["num_classes"] is not None:  # else built in fit, once the labels are read
            super()._ensure_built(in_channels, edge_dim)
        else:
            self._pending = (in_channels, edge_dim)

    def _build(self, in_channels: int, edge_dim: int | None) -> None:
        h = self.hparams
        self.encoder = GINEncoder(in_channels, h["hidden"], h["num_layers"], edge_dim=edge_dim)
        self.classifier = GINClassifier(self.encoder, h["num_classes"], h["hidden"])
        self.gen1, self.gen2 = (ViewGenerator(in_channels, h["gen_hidden"], h["gen_layers"], h["add_mask"],
                                              h["dropped"], h["mask_token"]) for _ in range(2))

    # ------------------------------------------------------------------ labels
    def _labels(self, data, labels) -> torch.Tensor:
        """The class of every graph (-1: unlabeled), from ``labels`` or the graphs' ``y``."""
        prepared = self.prepare(data)
        n = len(prepared.store)
        if labels is None:
            if prepared.bad_label:
                raise DataError(f"{prepared.bad_label}; a label is a class index 0, 1, ... (-1 or no y: unlabeled)")
            return prepared.labels
        if isinstance(labels, torch.Tensor):
            labels = labels.view(-1).tolist() if labels.dim() <= 1 or labels.shape[-1] == 1 else list(labels)
        labels = list(labels)
        if len(labels) != n:
            raise DataError(f"labels has {len(labels)} entries for {n} graphs (one per graph; -1 for unlabeled)")
        out = []
        for i, y in enumerate(labels):
            value, problem = _label(y)
            if problem:
                raise DataError(f"labels[{i}]: {problem}; a label is a class index 0, 1, ... (-1: unlabeled)")
            out.append(value)
        return torch.tensor(out, dtype=torch.long)

    # ------------------------------------------------------------------ training
    def fit(self, data, labels=None, epochs: int = 30, pretrain_epochs: int = 30, batch_size: int | None = None,
            device="auto", seed: int | None = None, progress: bool | None = None, evaluate=None) -> list[dict]:
        """Train on ``data`` (a PyG dataset, a list of ``Data``, a ``Batch`` or a
        ``DataLoader``) whose unlabeled graphs carry no label, and return one row per epoch
        (``phase`` "pretrain" for the baselines' pre-training, then "train").

        ``labels``: one class index per graph (-1 for unlabeled) instead of the graphs' ``y``.
        ``pretrain_epochs``: the ``naive`` and ``graphcl`` strategies' pre-training.
        ``evaluate(epoch)``: called after every training epoch; what it returns joins the row
        (for a validation score, e.g. ``lambda e: {"val": model.score(val_graphs)}``)."""
        for name, value in (("epochs", epochs), ("pretrain_epochs", pretrain_epochs)):
            if not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name} must be an int of at least 0, got {value!r}")
        gen = self._generator(seed)
        prepared = self.prepare(data)
        y = self._labels(data, labels)
        labeled = (y >= 0).nonzero().view(-1)
        if labeled.numel() == 0:
            raise DataError(f"all {len(y)} graphs are unlabeled (no y, or y = -1): the semi-supervised estimator "
                            "needs some labeled graphs (for unlabeled graphs only, use autogcl.AutoGCL)")
        h = self.hparams
        top = int(y.max()) + 1
        if h["num_classes"] is None:
            h["num_classes"] = max(2, top)
            super()._ensure_built(*self._pending)
        elif top > h["num_classes"]:
            bad = int((y >= h["num_classes"]).nonzero()[0])
            raise DataError(f"graph {bad} has label {int(y[bad])}, but the model has {h['num_classes']} classes")
        if labels is not None or not torch.equal(prepared.labels, y):
            lab_store = prepared.store.with_graph_values("y", y)
        else:
            lab_store = prepared.store
        size = self._batch_size(data, batch_size, 128)
        dev = resolve_device(device)
        self.to(dev)
        everything = self.loader(data, size, shuffle=True, generator=gen, device=dev)
        labeled_loader = GraphLoader(lab_store, size, shuffle=True, generator=gen, indices=labeled, device=dev)
        pre, fine, fine_data = self._strategies(everything, labeled_loader)
        rows = []
        if pre is not None and pretrain_epochs:
            trainer = Trainer(pre, device=dev, loader_gen=gen, desc=f"{type(self).__name__} pretrain",
                              show_progress=progress)
            rows += trainer.fit(everything, pretrain_epochs, row_fields={"phase": "pretrain"})
        trainer = Trainer(fine, device=dev, loader_gen=gen, desc=type(self).__name__, show_progress=progress)
        rows += trainer.fit(fine_data, epochs, evaluate=evaluate, row_fields={"phase": "train"})
        self.history.extend(rows)
        self._check_trained()
        return rows

    def _strategies(self, everything, labeled):
        """(pre-training strategy or None, training strategy, what the latter trains on)."""
        h, model = self.hparams, self.classifier
        opt = adam(model.parameters(), lr=h["lr"])
        kind = h["strategy"]
        if kind == "supervised":
            return None, SupervisedStrategy(model, opt), labeled
        if kind == "graphcl":
            augs = RandomAugmentor(h["aug"], h["aug_ratio"]), RandomAugmentor(h["aug"], h["aug_ratio"])
            pre = GraphCLStrategy(model, *augs, opt, tau=h["tau"], cl_variant=h["cl_variant"], encode=model.represent)
            return pre, SupervisedStrategy(model, opt), labeled
        opt_gen = adam([*self.gen1.parameters(), *self.gen2.parameters()], lr=h["lr"])
        if kind == "naive":
            pre_opt = adam([*model.parameters(), *self.gen1.parameters(), *self.gen2.parameters()], lr=h["lr"])
            pre = NaiveStrategy(model, self.gen1, self.gen2, pre_opt, tau=h["tau"], cl_variant=h["cl_variant"],
                                sim_kind=h["sim_loss"], encode=model.represent)
            return pre, JointStrategy(model, self.gen1, self.gen2, opt, opt_gen, use_cl=False, use_sim=False), \
                (everything, labeled)
        joint = JointStrategy(model, self.gen1, self.gen2, opt, opt_gen, use_cl=True, use_sim=True, lam=h["lam"],
                              tau=h["tau"], cl_variant=h["cl_variant"], sim_kind=h["sim_loss"])
        return None, joint, (everything, labeled)

    # ------------------------------------------------------------------ prediction
    def _require_built(self) -> None:
        if not self.built:
            raise ConfigError("the model is not trained yet (fit it first, or give in_channels and num_classes)")

    @torch.no_grad()
    def predict_proba(self, data, batch_size: int = 512, device=None) -> torch.Tensor:
        """Class probabilities of every graph (``graphs x num_classes``, CPU tensor)."""
        self.prepare(data)
        self._require_built()
        self._to(device)
        logp, _ = _embed(self.classifier, self.loader(data, batch_size))
        return logp.exp()

    def predict(self, data, batch_size: int = 512, device=None) -> torch.Tensor:
        """The predicted class of every graph (CPU long tensor)."""
        return self.predict_proba(data, batch_size, device).argmax(1)

    @torch.no_grad()
    def embed(self, data, batch_size: int = 512, device=None) -> torch.Tensor:
        """The classifier's graph embeddings (its encoder's, ``graphs x num_layers * hidden``)."""
        self.prepare(data)
        self._require_built()
        self._to(device)
        emb, _ = _embed(self.encoder, self.loader(data, batch_size))
        return emb

    def score(self, data, labels=None, batch_size: int = 512, device=None) -> float:
        """Accuracy on the labeled graphs of ``data`` (``labels``, or the graphs' ``y``)."""
        y = self._labels(data, labels)
        known = y >= 0
        if not bool(known.any()):
            raise DataError(f"none of the {len(y)} graphs has a label to score against")
        pred = self.predict(data, batch_size, device)
        return float((pred[known] == y[known]).double().mean())

    def forward(self, batch) -> torch.Tensor:
        """Class log-probabilities of a batch (with gradients)."""
        return self.classifier(batch)

