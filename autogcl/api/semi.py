"""The semi-supervised estimator: a graph classifier (a GIN with a two-layer head, or the
paper's ResGCN) trained on a few labeled graphs among many unlabeled ones, with AutoGCL's
joint strategy (the paper's Algorithm 2), its ablations or a baseline. ``autogcl semi`` fits
it once per fold; :meth:`SemiSupervised.paper` is that protocol's configuration."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import torch
from torch_geometric.data import Data

from ..augment import RandomAugmentor, ViewGenerator
from ..choices import (
    AUGMENTATIONS,
    AUG_RANDOM4,
    BN_STATS,
    CLASSIFIERS,
    CL_SIMCLR,
    DROPPED,
    DROP_ISOLATE,
    MASK_SCALAR,
    MASK_TOKENS,
    SEMI_STRATEGIES,
    SIM_COSINE,
    SIM_LOSSES,
    SMALL_BATCH,
    check_choice,
)
from ..data.batching import GraphLoader
from ..data.datasets import KNOWN_TU_DATASETS, known_name
from ..data.splits import stratified_holdout
from ..devices import Engine, engine_of, resolve_device
from ..errors import ConfigError, DataError
from ..losses import cl_kwargs
from ..models import GINClassifier, GINEncoder
from ..models.embed import embed as _embed
from ..models.norm import settle_batchnorm
from ..models.resgcn import ResGCN
from ..train import Trainer, check_fit_plan
from ..train.best import BestEpoch, check_patience
from ..train.semi import CONTRASTIVE, READS_ALL, USES_GENERATORS, semi_strategy
from .base import Estimator, _label, check_contrastive_batch, register_model_type

__all__ = ["PAPER", "SEMI_STRATEGIES", "SemiSupervised"]

log = logging.getLogger(__name__)

#: the published semi-supervised protocol's classifier and training settings (``autogcl semi``'s
#: defaults, and ``SemiSupervised()``'s): :meth:`SemiSupervised.paper`. Its other settings (``lam``, ``tau``, the
#: generators, ``aug``) are the estimator's defaults, and ``fit``'s 30 epochs (30 of
#: pre-training) too; batches of 64 graphs for the datasets of ``autogcl.choices.SMALL_BATCH``.
PAPER = {"classifier": "resgcn", "hidden": 128, "num_layers": 3, "lr": 0.01, "batch_size": 128, "bn_stats": "running"}


def _drop_last(n: int, size: int) -> bool:
    """Drop an epoch's last batch when it would hold a single graph (a graph-level BatchNorm
    cannot train on it); batches are reshuffled every epoch, so every graph is still seen."""
    return n > 1 and n % size == 1


@register_model_type
class SemiSupervised(Estimator):
    """A graph classifier trained on partly labeled graphs. A graph is unlabeled when it has no
    ``y``, ``y`` is ``None``, -1 or NaN (or give ``labels=`` to ``fit``, with -1 for unlabeled).

    Args (beyond :class:`autogcl.api.Estimator`'s):
        num_classes: ``None`` reads it off the labels (the largest class index + 1).
        classifier: ``"auto"`` (default): ``"resgcn"``, or ``"gin"`` when ``edge_dim`` is
            given (the ResGCN reads no edge features); ``"resgcn"``: the ResGCN of the paper's
            protocol (``num_layers`` GCN blocks of width ``hidden``); ``"gin"``: a GIN encoder
            (``num_layers`` x ``hidden``; GINE over ``edge_attr`` with ``edge_dim``) and a
            two-layer head. The defaults (``classifier``, ``lr`` 0.01, ``bn_stats``
            ``"running"``, batches of 128) are the paper protocol's (:data:`PAPER`): with 10% of
            a TU set's graphs labeled they came out ahead of the earlier default (a GIN at lr
            0.001 with settled statistics) on three of the four TU sets measured
            (``docs/api.md``, "Semi-supervised defaults"; ``scripts/studies/semi_default.py``).
        strategy (``autogcl.choices.SEMI_STRATEGIES``; :func:`autogcl.train.semi.semi_strategy`):
            ``"joint"`` (default; AutoGCL's joint strategy, Algorithm 2 of the paper): every
            epoch a contrastive pass over all graphs (views from two learnable generators,
            which stay fixed in it), then a labeled pass with the cross-entropy of the graph
            and both views plus ``lam`` x L_sim, which also trains the generators;
            ``"joint_cls"``, ``"joint_cls_sim"``, ``"joint_cl_cls"``: its loss ablations;
            ``"joint_released"``: the released code's joint variant;
            ``"naive"``: AutoGCL's naive contrastive pre-training on all graphs for
            ``pretrain_epochs``, then the labeled pass alone;
            ``"graphcl"``: GraphCL pre-training (random ``aug``) on all graphs, then supervised
            training on the labeled graphs; ``"graphcl_aug"``: supervised training on random
            augmentations of the labeled graphs; ``"aug"``: on their two learnable views;
            ``"supervised"``: the labeled graphs only (the baseline without unlabeled data).
        lam, tau, cl_variant, sim_loss: L_sim weight, NT-Xent temperature and form, L_sim form.
        add_mask, dropped, mask_token, gen_hidden, gen_layers: the view generators (as
            :class:`autogcl.AutoGCL`).
        aug, aug_ratio: the GraphCL strategies' augmentation.
        batch_size: ``fit``'s batch size unless it is given one.
        bn_stats: the BatchNorm statistics the classifier predicts with (eval mode).
            ``"settled"``: those of its current weights over the graphs ``fit`` was
            given, computed in one pass (:func:`autogcl.models.norm.settle_batchnorm`) before
            every ``evaluate`` call and at the end of ``fit``; ``"running"``: the running
            averages training leaves (momentum 0.1 from mean 0, variance 1; the published
            protocol's evaluation; default). With few training steps (a labeled set that fits in one
            batch makes one step an epoch) the running averages still hold much of their
            initial values and of earlier weights, and eval mode can predict one class.
    """

    def __init__(self, in_channels: int | None = None, num_classes: int | None = None, hidden: int = 128,
                 num_layers: int = 3, *, classifier: str = "auto", strategy: str = "joint", lam: float = 1.0,
                 tau: float = 0.5, cl_variant: str = CL_SIMCLR, sim_loss: str = SIM_COSINE, add_mask: bool = False,
                 dropped: str = DROP_ISOLATE, mask_token: str = MASK_SCALAR, gen_hidden: int = 128, gen_layers: int = 2,
                 aug: str = AUG_RANDOM4, aug_ratio: float = 0.2, features: str | None = "auto",
                 recipe: str | None = None, edge_dim: int | str | None = None, lr: float = PAPER["lr"],
                 batch_size: int = PAPER["batch_size"], bn_stats: str = PAPER["bn_stats"]):
        super().__init__(in_channels, hidden, num_layers, features=features, recipe=recipe, edge_dim=edge_dim,
                         lr=lr)
        check_choice("strategy", strategy, SEMI_STRATEGIES)
        if classifier == "auto":
            classifier = "gin" if edge_dim is not None else PAPER["classifier"]
        check_choice("classifier", classifier, CLASSIFIERS)
        if classifier == "resgcn" and edge_dim is not None:
            raise ConfigError(f"the resgcn classifier reads no edge features (edge_dim={edge_dim!r}); use "
                              "classifier='gin' for them")
        check_choice("bn_stats", bn_stats, BN_STATS)
        if num_classes is not None and (not isinstance(num_classes, int) or num_classes < 2):
            raise ConfigError(f"num_classes must be an int of at least 2, got {num_classes!r}")
        check_choice("similarity loss", sim_loss, SIM_LOSSES[1:])
        check_choice("dropped", dropped, DROPPED)
        check_choice("mask_token", mask_token, MASK_TOKENS)
        check_choice("augmentation", aug, AUGMENTATIONS)
        RandomAugmentor(aug, aug_ratio)  # validates the ratio
        cl_kwargs(cl_variant, "autogcl")  # validates the NT-Xent form
        if not tau > 0 or lam < 0:
            raise ConfigError(f"tau must be positive and lam at least 0 (got {tau}, {lam})")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive int, got {batch_size!r}")
        self.hparams.update(num_classes=num_classes, classifier=classifier, strategy=strategy, lam=lam, tau=tau,
                            cl_variant=cl_variant, sim_loss=sim_loss, add_mask=add_mask, dropped=dropped,
                            mask_token=mask_token, gen_hidden=gen_hidden, gen_layers=gen_layers, aug=aug,
                            aug_ratio=aug_ratio, batch_size=batch_size, bn_stats=bn_stats)
        if in_channels is not None and num_classes is not None and edge_dim != "auto":
            self._ensure_built(in_channels, edge_dim)

    @classmethod
    def paper(cls, strategy: str = "joint", dataset: str | None = None, **overrides) -> SemiSupervised:
        """The configuration of the paper's semi-supervised protocol (``autogcl semi``'s
        defaults, :data:`PAPER`): a ResGCN classifier (3 GCN blocks of width 128), Adam at lr
        0.01, batches of 128 graphs (64 for ``dataset`` among ``autogcl.choices.SMALL_BATCH``),
        the running BatchNorm statistics, and the estimator's defaults for the rest; ``fit``
        then trains 30 epochs (after 30 of pre-training for ``naive`` and ``graphcl``) as the
        protocol. ``overrides``: any other argument of the class."""
        settings = dict(PAPER, strategy=strategy)
        if dataset is not None and known_name(dataset) is None:  # a typo would silently get batches of 128
            raise ConfigError(f"SemiSupervised.paper: unknown dataset {dataset!r}; the paper's datasets (any case): "
                              f"{', '.join(k for k in KNOWN_TU_DATASETS if k != 'github_stargazers')}; for another "
                              "dataset leave dataset out (batches of 128) or give batch_size=...")
        if known_name(dataset) in SMALL_BATCH:
            settings["batch_size"] = 64
        return cls(**{**settings, **overrides})

    @property
    def built(self) -> bool:
        return (self.hparams["in_channels"] is not None and self.hparams["num_classes"] is not None
                and hasattr(self, "classifier"))

    def _ensure_built(self, in_channels: int, edge_dim: int | None) -> None:
        if self.hparams["num_classes"] is not None:  # else built in fit, once the labels are read
            super()._ensure_built(in_channels, edge_dim)
        else:
            self._pending = (in_channels, edge_dim)

    def _build(self, in_channels: int, edge_dim: int | None) -> None:
        """The classifier, then (for the strategies that have them) the two view generators: the
        order that fixes their seeded initial weights."""
        h = self.hparams
        if h["classifier"] == "resgcn":
            self.classifier = ResGCN(in_channels, h["num_classes"], h["hidden"], num_conv_layers=h["num_layers"])
        else:
            self.encoder = GINEncoder(in_channels, h["hidden"], h["num_layers"], edge_dim=edge_dim)
            self.classifier = GINClassifier(self.encoder, h["num_classes"], h["hidden"])
        if h["strategy"] in USES_GENERATORS:
            self.gen1, self.gen2 = (ViewGenerator(in_channels, h["gen_hidden"], h["gen_layers"], h["add_mask"],
                                                  h["dropped"], h["mask_token"]) for _ in range(2))

    @classmethod
    def from_saved(cls, blob: dict, path: Path) -> Estimator:
        """As :meth:`Estimator.from_saved`; a file of an earlier version, whose model always had
        view generators, loads without those its strategy does not use."""
        if blob["hparams"].get("strategy") not in USES_GENERATORS:
            blob = {**blob, "state_dict": {k: v for k, v in blob["state_dict"].items()
                                           if not k.startswith(("gen1.", "gen2."))}}
        return super().from_saved(blob, path)

    def make_strategies(self):
        """``(pre-training strategy or None, training strategy, "all" or "labeled")``: fresh
        strategies and optimizers over this model's modules, and what training reads
        (:func:`autogcl.train.semi.semi_strategy`)."""
        self._require_built()
        h = self.hparams
        gens = (self.gen1, self.gen2) if h["strategy"] in USES_GENERATORS else ()
        pre, fine = semi_strategy(h["strategy"], self.classifier, gens, lr=h["lr"], lam=h["lam"], tau=h["tau"],
                                  cl_variant=h["cl_variant"], sim_loss=h["sim_loss"], aug=h["aug"],
                                  aug_ratio=h["aug_ratio"])
        return pre, fine, "all" if h["strategy"] in READS_ALL else "labeled"

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
        out = torch.tensor(out, dtype=torch.long)
        problem = self._class_problem(out, "labels")  # e.g. TU-style classes 1, 2 without a class 0
        if problem:
            raise DataError(problem)
        return out

    # ------------------------------------------------------------------ training
    def fit(self, data, labels=None, epochs: int = 30, pretrain_epochs: int = 30, batch_size: int | None = None,
            device="auto", seed: int | torch.Generator | None = None, progress: bool | None = None, evaluate=None,
            checkpoint: str | Path | None = None, desc: str | None = None, log_dir=None,
            tracking: str | None = None, validation=None, patience: int | None = None) -> list[dict]:
        """Train on ``data`` (a PyG dataset, a list of ``Data``, a ``Batch`` or a
        ``DataLoader``) whose unlabeled graphs carry no label, and return one row per epoch
        (``phase`` "pretrain" for the strategies with pre-training, then "train").

        ``log_dir``, ``tracking``: TensorBoard scalars (or MLflow metrics) of both phases (as
        :meth:`autogcl.AutoGCL.fit`).
        ``labels``: one class index per graph (-1 for unlabeled) instead of the graphs' ``y``.
        ``pretrain_epochs``: the ``naive`` and ``graphcl`` strategies' pre-training.
        ``batch_size``: default the model's (``batch_size``), or a DataLoader's own; an epoch's
        last batch is dropped when it would hold a single graph.
        ``device``: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or an
        :class:`autogcl.devices.Engine`. ``seed``: an int seeds every RNG (data order, views)
        before training, and before building a model not built yet; a ``torch.Generator``
        shuffles the batches and seeds nothing.
        ``evaluate(epoch)``: called after every training epoch (with ``bn_stats="settled"``,
        after the statistics are settled); what it returns joins the row (for a validation
        score, e.g. ``lambda e: {"val": model.score(val_graphs)}``).
        ``checkpoint``: a file to checkpoint every epoch to and resume from (pre-training
        beside it, ``NAME-pretrain.pt``). ``desc``: the name of the progress bar and log lines.

        ``validation``: choose the epoch on validation accuracy. A fraction in (0, 1): that
        share of the labeled graphs is held out, stratified by class and drawn from the seed
        (their labels are hidden from training; the graphs stay among the unlabeled ones);
        or graphs with their labels (a dataset or list whose ``y`` is the class, or a pair
        ``(graphs, labels)``). Every training epoch's row then has ``val_acc`` (after
        ``evaluate``'s settling), and at the end the weights of the epoch with the best
        ``val_acc`` (the first on ties) are restored: its row has ``kept=True`` and
        ``selected_by="val_acc"``, and :attr:`selection` says the epoch, its score, the
        validation graphs and whether training stopped early. Pre-training is not selected.
        ``patience``: with ``validation``, stop after this many training epochs without a
        better ``val_acc`` (early stopping)."""
        for name, value in (("epochs", epochs), ("pretrain_epochs", pretrain_epochs)):
            if not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name} must be an int of at least 0, got {value!r}")
        check_patience(patience)
        if patience is not None and validation is None:
            raise ConfigError("patience= stops on the validation score: give validation= too (a fraction of the "
                              "labeled graphs to hold out, or validation graphs with their labels)")
        gen = seed if isinstance(seed, torch.Generator) else self._generator(seed)
        prepared = self.prepare(data)
        y = self._labels(data, labels)
        val_data, val_y, y = self._validation(data, y, validation, gen)
        labeled = (y >= 0).nonzero().view(-1)
        if labeled.numel() == 0:
            raise DataError(f"all {len(y)} graphs are unlabeled (no y, or y = -1): the semi-supervised estimator "
                            "needs some labeled graphs (for unlabeled graphs only, use autogcl.AutoGCL)")
        h = self.hparams
        top = int(y.max()) + 1
        if h["num_classes"] is None:
            if top < 2:
                log.warning("every labeled graph has class 0: a 2-class model is built, which has nothing to tell "
                            "apart (give num_classes=..., or labels of at least two classes)")
            h["num_classes"] = max(2, top)
            super()._ensure_built(*self._pending)
        elif top > h["num_classes"]:
            bad = int((y >= h["num_classes"]).nonzero()[0])
            raise DataError(f"graph {bad} has label {int(y[bad])}, but the model has {h['num_classes']} classes")
        store = prepared.store if torch.equal(prepared.labels, y) else prepared.store.with_graph_values("y", y)
        size = self._batch_size(data, batch_size, h["batch_size"])
        if h["strategy"] in CONTRASTIVE:
            check_contrastive_batch(len(prepared.store) if h["strategy"] in READS_ALL else labeled.numel(), size,
                                    f"strategy {h['strategy']!r} (a contrastive pass)")
        dev = resolve_device(device)
        self.to(dev)
        self._deterministic = engine_of(device).deterministic  # for settling and predictions after it
        n = len(store)
        everything = GraphLoader(store, size, shuffle=True, generator=gen, drop_last=_drop_last(n, size), device=dev)
        labeled_loader = GraphLoader(store, size, shuffle=True, generator=gen, indices=labeled, device=dev,
                                     drop_last=_drop_last(labeled.numel(), size))
        check_fit_plan((everything, labeled_loader), epochs + pretrain_epochs, f"{type(self).__name__}.fit")
        if getattr(self, "_strategies", None) is None:  # a second fit continues with the same optimizers
            self._strategies = self.make_strategies()
        pre, fine, reads = self._strategies
        done = sum(r.get("phase") == "train" for r in self.history)  # a second fit's epochs count on
        settle = h["bn_stats"] == "settled"
        keeper = None if val_data is None else BestEpoch(self, "val_acc", patience)

        def evaluate_epoch(epoch):
            if settle:
                self.settle(data, size)
            out = {}
            if keeper is not None:
                out["val_acc"] = self._accuracy(val_data, val_y, size)
                keeper.observe(epoch, out["val_acc"])
            reported = evaluate(epoch) if evaluate is not None else None
            if keeper is None or not isinstance(reported, Mapping):
                return out if reported is None else reported  # not a dict: the Trainer names the mistake
            if "val_acc" in reported:
                raise ConfigError("evaluate returned 'val_acc', the score validation= records; name yours otherwise")
            return {**out, **reported}

        trainer_device = device if isinstance(device, Engine) else dev
        name = desc or type(self).__name__
        ckpt = None if checkpoint is None else Path(checkpoint)
        rows = []
        tracker = self._tracker(log_dir, type(self).__name__, tracking)  # TensorBoard scalars, both phases (tags by phase)
        try:
            if pre is not None and pretrain_epochs and self.history:  # pre-training is the first fit's start
                log.info("%s: a second fit continues training from the current weights; pre-training is not "
                         "repeated", name)
            elif pre is not None and pretrain_epochs:
                pre_ckpt = None if ckpt is None else ckpt.with_name(f"{ckpt.stem}-pretrain{ckpt.suffix}")
                trainer = Trainer(pre, device=trainer_device, checkpoint=pre_ckpt, loader_gen=gen,
                                  desc=f"{name} pre-train", show_progress=progress, tracker=tracker)
                rows += trainer.fit(everything, pretrain_epochs, row_fields={"phase": "pretrain"})
            trainer = Trainer(fine, device=trainer_device, checkpoint=ckpt, loader_gen=gen, desc=name,
                              show_progress=progress, tracker=tracker)
            fine_data = (everything, labeled_loader) if reads == "all" else labeled_loader
            rows += [r for r in trainer.fit(fine_data, done + epochs, start=done + 1,
                                evaluate=evaluate_epoch if evaluate is not None or keeper is not None else None,
                                stop=None if keeper is None else keeper.stop,
                                extra=None if keeper is None else keeper.state, row_fields={"phase": "train"})
                     if r["epoch"] > done]  # a checkpoint may also hold the rows of earlier calls
        finally:
            if tracker is not None:
                tracker.close()
        if keeper is not None:
            self._keep_best(keeper, rows, epochs, validation, len(val_y[val_y >= 0]))
        if settle:
            self.settle(data, size)
        self.history.extend(rows)
        self._check_trained()
        return rows

    #: how the last ``fit(validation=...)`` chose its epoch (``None``: it kept the last epoch)
    selection: dict | None = None

    def _validation(self, data, y: torch.Tensor, validation, gen: torch.Generator):
        """``(validation graphs, their labels, training labels)`` for ``fit(validation=...)``:
        ``(None, None, y)`` without; a fraction holds out that share of the labeled graphs of
        ``data`` (their training labels become -1), stratified, drawn from ``gen``'s seed."""
        self.selection = None
        if validation is None:
            return None, None, y
        if isinstance(validation, float | int) and not isinstance(validation, bool):
            if not 0 < validation < 1:
                raise ConfigError(f"validation={validation!r}: a fraction of the labeled graphs must lie in (0, 1)")
            labeled = (y >= 0).nonzero().view(-1)
            size = round(float(validation) * labeled.numel())
            if size < 1 or size >= labeled.numel():
                raise DataError(f"validation={validation}: {labeled.numel()} labeled graphs leave {size} to validate "
                                "on; give a fraction that holds out at least one graph and keeps at least one")
            _, held = stratified_holdout(labeled.numpy(), y[labeled].numpy(), size, gen.initial_seed() % 2**32)
            held = torch.as_tensor(held, dtype=torch.long)
            val_y = torch.full_like(y, -1)
            val_y[held] = y[held]
            train_y = y.clone()
            train_y[held] = -1
            return data, val_y, train_y
        if isinstance(validation, tuple) and len(validation) == 2 and not isinstance(validation[1], Data):
            graphs, given = validation
        else:
            graphs, given = validation, None
        val_y = self._labels(graphs, given)
        if not bool((val_y >= 0).any()):
            raise DataError(f"validation: none of its {len(val_y)} graphs has a label to score against")
        return graphs, val_y, y

    def _accuracy(self, data, y: torch.Tensor, batch_size: int) -> float:
        """Accuracy on the graphs of ``data`` whose label in ``y`` is known (no random number is drawn)."""
        known = (y >= 0).nonzero().view(-1)
        loader = GraphLoader(self.prepare(data).store, batch_size, indices=known, generator=torch.Generator(),
                             device=self.device)
        with self._kernels():
            logp, _ = _embed(self.classifier, loader)
        return float((logp.argmax(1) == y[known]).double().mean())

    def _keep_best(self, keeper: BestEpoch, rows: list[dict], epochs: int, validation, n_val: int) -> None:
        """Restore the best validation epoch's weights; mark its row and say so in :attr:`selection`."""
        kept = keeper.restore()
        train = [r for r in rows if r.get("phase") == "train"]
        for r in train:
            if r["epoch"] == kept:
                r.update(kept=True, selected_by="val_acc")
        what = (f"{validation:g} of the labeled graphs" if isinstance(validation, float | int) else "graphs given")
        self.selection = {"epoch": kept, "val_acc": keeper.state["best_score"], "criterion": "best validation accuracy",
                          "validation": f"{what} ({n_val})", "epochs_run": len(train),
                          "stopped_early": len(train) < epochs and keeper.patience is not None}
        if kept is None:
            log.warning("validation: no epoch had a finite validation accuracy; the last epoch is kept")
        else:
            log.info("validation: kept epoch %d of %d (val_acc %.4f)%s", kept, len(train), keeper.state["best_score"],
                     ", stopped early" if self.selection["stopped_early"] else "")

    def settle(self, data, batch_size: int | None = None) -> SemiSupervised:
        """Give the classifier's BatchNorms the statistics of its current weights over ``data``
        (:func:`autogcl.models.norm.settle_batchnorm`, in batches of ``batch_size``, default the
        model's; no random number is drawn): what ``fit`` does with ``bn_stats="settled"``;
        e.g. for a model trained with the running statistics. Returns the model."""
        self.prepare(data)
        self._require_built()
        loader = GraphLoader(self.prepare(data).store, batch_size or self.hparams["batch_size"],
                             generator=torch.Generator(), device=self.device)  # its base seed: from a private generator
        with self._kernels():
            settle_batchnorm(self.classifier, loader)
        return self

    # ------------------------------------------------------------------ prediction
    def _require_built(self) -> None:
        if not self.built:
            raise ConfigError("the model is not trained yet (fit it first, or give in_channels and num_classes)")

    @torch.no_grad()
    def predict_log_proba(self, data, batch_size: int | None = None, device=None) -> torch.Tensor:
        """Class log-probabilities of every graph (``graphs x num_classes``, CPU tensor, eval
        mode); ``batch_size``: default the model's."""
        self.prepare(data)
        self._require_built()
        self._warn_untrained("predict", "the predictions (and scores)")
        self._to(device)
        with self._kernels(device):
            logp, _ = _embed(self.classifier, self.loader(data, batch_size or self.hparams["batch_size"]))
        return logp

    def predict_proba(self, data, batch_size: int | None = None, device=None) -> torch.Tensor:
        """Class probabilities of every graph (``graphs x num_classes``, CPU tensor)."""
        return self.predict_log_proba(data, batch_size, device).exp()

    def predict(self, data, batch_size: int | None = None, device=None) -> torch.Tensor:
        """The predicted class of every graph (CPU long tensor; the first most likely on ties)."""
        return self.predict_log_proba(data, batch_size, device).argmax(1)

    @torch.no_grad()
    def embed(self, data, batch_size: int | None = None, device=None) -> torch.Tensor:
        """The classifier's graph representations, the vectors its contrastive losses use (GIN:
        ``graphs x num_layers * hidden``; ResGCN: ``graphs x hidden``)."""
        self.prepare(data)
        self._require_built()
        self._warn_untrained()
        self._to(device)
        with self._kernels(device):
            emb, _ = _embed(self.classifier, self.loader(data, batch_size or self.hparams["batch_size"]),
                            self.classifier.represent)
        return emb

    def score(self, data, labels=None, batch_size: int | None = None, device=None) -> float:
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
