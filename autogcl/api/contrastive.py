"""The unsupervised estimators: :class:`AutoGCL` (learnable view generators, the naive
strategy) and :class:`GraphCL` (random augmentations), over a GIN encoder and its
projection head."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import torch

from ..augment import FixedView, RandomAugmentor, ViewGenerator, as_augmentation
from ..augment.learnable import ViewDecision
from ..choices import (
    AUG_RANDOM4,
    CL_SIMCLR,
    DROPPED,
    DROP_ISOLATE,
    GRAPHCL_VIEWS,
    MASK_SCALAR,
    MASK_TOKENS,
    SAMPLE_REPLACEMENT,
    SIM_COSINE,
    SIM_LOSSES,
    VIEWS_AUG_AUG,
    VIEW_SAMPLINGS,
    check_choice,
)
from ..devices import engine_of, resolve_device
from ..errors import ConfigError, TrainingError
from ..losses import cl_kwargs
from ..models import ContrastModel, GINEncoder
from ..models.embed import embed as _embed
from ..train import GraphCLStrategy, NaiveStrategy, Trainer, check_fit_plan
from ..train.best import BestEpoch, check_patience
from ..train.optim import adam
from .base import Estimator, check_contrastive_batch, eval_mode, register_model_type

log = logging.getLogger(__name__)

__all__ = ["AutoGCL", "ContrastiveLearner", "GraphCL"]


class ContrastiveLearner(Estimator):
    """Shared base of :class:`AutoGCL` and :class:`GraphCL`: a GIN encoder (``num_layers`` x
    ``hidden``; GINE over ``edge_attr`` with ``edge_dim``) whose graph embedding
    (``num_layers * hidden``) is the concatenation of every layer's **sum**-pooled node
    states, unnormalised, and a projection head used in training only.

    Args (beyond :class:`autogcl.api.Estimator`'s): ``lr`` (Adam), ``tau`` (NT-Xent
    temperature), ``cl_variant`` (``"simclr"`` or ``"released"``)."""

    def __init__(self, in_channels: int | None = None, hidden: int = 128, num_layers: int = 5, *,
                 features: str | None = "auto", recipe: str | None = None, edge_dim: int | str | None = None,
                 lr: float = 0.001, tau: float = 0.5, cl_variant: str = CL_SIMCLR):
        super().__init__(in_channels, hidden, num_layers, features=features, recipe=recipe, edge_dim=edge_dim,
                         lr=lr)
        if not tau > 0:
            raise ConfigError(f"tau must be positive, got {tau}")
        cl_kwargs(cl_variant, "autogcl")  # validates the NT-Xent variant now
        self.hparams.update(tau=tau, cl_variant=cl_variant)
        self._strategy = None

    def _build(self, in_channels: int, edge_dim: int | None) -> None:
        self.encoder = GINEncoder(in_channels, self.hparams["hidden"], self.hparams["num_layers"], edge_dim=edge_dim)
        self.contrast = ContrastModel(self.encoder)

    @property
    def out_channels(self) -> int:
        """Size of the graph embeddings (``num_layers * hidden``)."""
        return self.hparams["hidden"] * self.hparams["num_layers"]

    def make_strategy(self, lr: float | None = None):
        """A fresh training strategy (and optimizer) over this model's modules."""
        raise NotImplementedError

    # ------------------------------------------------------------------ training
    def fit(self, data, epochs: int = 30, batch_size: int | None = None, device="auto", seed: int | None = None,
            progress: bool | None = None, evaluate=None, checkpoint: str | Path | None = None,
            log_dir: str | Path | None = None, tracking: str | None = None, monitor: str | None = None,
            patience: int | None = None) -> list[dict]:
        """Train contrastively on ``data`` (labels unused: graphs with and without ``y`` mix
        freely) and return one row per epoch: ``epoch``, the loss terms, ``time_s`` and
        whatever ``evaluate(epoch)`` returns.

        ``data``: a PyG dataset, a list of ``Data``, a ``Data``, a ``Batch`` or a PyG
        ``DataLoader`` (its graphs; its batch size unless ``batch_size`` is given; default 128).
        Batches are shuffled with this call's generator. Contrastive learning needs two graphs
        in a batch (NT-Xent of a single graph is 0): fewer than 2 graphs or ``batch_size=1``
        is an error, and a last batch of one graph is said in the log.
        ``device``: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``, ``"cuda:N"``.
        ``seed`` seeds every RNG (data order, views) before training; seed torch yourself
        (``autogcl.seed_everything``) before building the model to fix its initial weights.
        ``checkpoint``: a file to checkpoint every epoch to and to resume from (a saved model's
        file is refused). Calling ``fit`` again continues training (epochs count on).
        ``progress``: the progress bar (``None``: on a terminal only; elsewhere, e.g. a pipe or
        a notebook's log, each epoch is a ``logging`` INFO line of ``autogcl.train.loop``, shown
        once logging is configured: ``logging.basicConfig(level=logging.INFO)``).
        ``log_dir``: a folder to write TensorBoard scalars to (losses, evaluations, epoch time,
        graphs/s; ``pip install 'autogcl[tensorboard]'``), or with ``tracking="mlflow"`` an
        MLflow tracking store (a URI, or a folder for a local file store) to log the same
        scalars to as the metrics of a run (``pip install 'autogcl[mlflow]'``);
        ``autogcl.choices.TRACKERS``.
        ``monitor``: the name of a score ``evaluate`` returns (higher is better, e.g. a
        validation accuracy): at the end the weights of the epoch with the best one (the first
        on ties) are restored, its row has ``kept=True`` and ``selected_by=monitor``, and
        :attr:`selection` says so (:class:`autogcl.train.best.BestEpoch`, as
        ``SemiSupervised.fit(validation=...)``). ``patience``: with ``monitor``, stop after
        this many epochs without a better score."""
        if not isinstance(epochs, int) or epochs < 0:
            raise ConfigError(f"epochs must be an int of at least 0, got {epochs!r}")
        check_patience(patience)
        if (patience is not None or monitor is not None) and (monitor is None or evaluate is None):
            raise ConfigError("monitor= names a score that evaluate= returns, and patience= waits for it: give "
                              "evaluate=... and monitor='its key' (e.g. monitor='val_acc')")
        keeper = None if monitor is None else BestEpoch(self, monitor, patience)
        self.selection = None
        self._check_checkpoint(checkpoint)
        gen = self._generator(seed)
        store = self.prepare(data).store
        size = self._batch_size(data, batch_size, 128)
        n = len(store)
        check_contrastive_batch(n, size)
        if n % size == 1:
            log.warning("%d graphs in batches of %d: the last batch of every epoch holds one graph, which "
                        "teaches nothing (NT-Xent of one graph is 0); a batch_size that leaves no single graph "
                        "over avoids it", n, size)
        dev = resolve_device(device)
        self.to(dev)
        self._deterministic = engine_of(device).deterministic  # kept for the embeddings after the fit
        if self._strategy is None:
            self._strategy = self.make_strategy()
        loader = self.loader(data, size, shuffle=True, generator=gen, device=dev)
        check_fit_plan(loader, epochs, f"{type(self).__name__}.fit")
        done = len(self.history)
        tracker = self._tracker(log_dir, type(self).__name__, tracking)
        trainer = Trainer(self._strategy, device=engine_of(device), checkpoint=checkpoint, loader_gen=gen,
                          desc=type(self).__name__, show_progress=progress, tracker=tracker)  # an Engine's settings too

        def evaluate_epoch(epoch):
            reported = evaluate(epoch)
            if isinstance(reported, Mapping) and monitor in reported:
                keeper.observe(epoch, reported[monitor])
            return reported

        try:
            rows = [{k: v for k, v in r.items() if not (k == "sim_loss" and v != v)}  # NaN: not measured
                    for r in trainer.fit(loader, done + epochs, evaluate=evaluate if keeper is None else evaluate_epoch,
                                         start=done + 1, stop=None if keeper is None else keeper.stop,
                                         extra=None if keeper is None else keeper.state)
                    if r["epoch"] > done]  # a checkpoint may also hold the rows of earlier calls
        finally:
            if tracker is not None:
                tracker.close()
        if keeper is not None:
            kept = keeper.restore()
            for r in rows:
                if r["epoch"] == kept:
                    r.update(kept=True, selected_by=monitor)
            self.selection = {"epoch": kept, monitor: keeper.state["best_score"], "criterion": f"best {monitor}",
                              "epochs_run": len(rows), "stopped_early": len(rows) < epochs and patience is not None}
            if kept is None:
                log.warning("monitor=%r: no epoch reported it; the last epoch is kept", monitor)
        self.history.extend(rows)
        self._check_trained()
        return rows

    #: how the last ``fit(monitor=...)`` chose its epoch (``None``: it kept the last epoch)
    selection: dict | None = None

    @torch.no_grad()
    def embed(self, data, batch_size: int = 512, device=None) -> torch.Tensor:
        """Graph embeddings (``graphs x out_channels``, CPU tensor, eval mode) of any graphs,
        labeled or not, in their order: the sum over each graph's nodes of every layer's
        output, concatenated (unnormalised: standardise them before a gradient-trained probe,
        e.g. ``autogcl.LinearProbe(standardize=True)``). ``device``: where to compute
        (default: the model's). An untrained model (built from the data) embeds too, with its
        random initial weights: a warning says so (once per model)."""
        self._warn_untrained()
        self._to(device)
        loader = self.loader(data, batch_size)
        with self._kernels(device):
            emb, _ = _embed(self.encoder, loader)
        if not bool(torch.isfinite(emb).all()):
            raise TrainingError("the embeddings are not finite (diverged weights?)")
        return emb

    def evaluate(self, data, labels=None, evaluator=None, batch_size: int = 512, device=None) -> dict:
        """Embed ``data`` and score the embeddings with ``evaluator`` (default
        ``autogcl.SVMEvaluator()``; ``autogcl.LinearProbe(standardize=True)`` for a linear
        probe) against ``labels`` (default: the graphs' ``y``)."""
        from ..eval.evaluators import SVMEvaluator

        prepared = self.prepare(data)
        y = prepared.labels if labels is None else labels
        return (evaluator or SVMEvaluator())(self.embed(data, batch_size, device), y)

    def forward(self, batch) -> torch.Tensor:
        """The graph embeddings of a batch (with gradients)."""
        return self.encoder(batch)

    def _all(self, data):
        prepared = self.prepare(data)
        store = prepared.store
        return store.batch(torch.arange(len(store))).to(self.device)


@register_model_type
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
        gen_hidden, gen_layers: the generators' GIN scorer (released: 128, 2). The generators
            read node features only (never ``edge_attr``).
        view1, view2: ``None`` (default: a learnable generator) or an augmentation of one's
            own (a :class:`autogcl.augment.Compose`, :class:`autogcl.RandomAugmentor`, any
            callable taking a ``Batch``) that makes that view instead, unlearned
            (:class:`autogcl.augment.FixedView`); L_sim, which compares two generators, is
            then off (``sim_loss="none"``).

    ``model.gen1`` and ``model.gen2`` are :class:`autogcl.ViewGenerator` modules (or
    ``FixedView`` ones); :meth:`inspect` shows what the learnable ones do to a batch.
    """

    def __init__(self, in_channels: int | None = None, hidden: int = 128, num_layers: int = 5, *,
                 add_mask: bool = False, dropped: str = DROP_ISOLATE, mask_token: str = MASK_SCALAR,
                 sim_loss: str = "none", view_sampling: str = SAMPLE_REPLACEMENT, gen_hidden: int = 128,
                 gen_layers: int = 2, features: str | None = "auto", recipe: str | None = None,
                 edge_dim: int | str | None = None, lr: float = 0.001, tau: float = 0.5, cl_variant: str = CL_SIMCLR,
                 view1=None, view2=None):
        check_choice("similarity loss", sim_loss, SIM_LOSSES)
        check_choice("view sampling", view_sampling, VIEW_SAMPLINGS)
        check_choice("dropped", dropped, DROPPED)
        check_choice("mask_token", mask_token, MASK_TOKENS)
        views = [_view_spec(v) for v in (view1, view2)]
        if any(v is not None for v, _ in views) and sim_loss != "none":
            raise ConfigError(f"sim_loss={sim_loss!r} compares two learnable generators; with an augmentation of "
                              "your own as a view use sim_loss='none'")
        self._fixed = [aug for _, aug in views]
        self._gen_kwargs = {"add_mask": add_mask, "dropped": dropped, "mask_token": mask_token,
                            "gen_hidden": gen_hidden, "gen_layers": gen_layers, "sim_loss": sim_loss,
                            "view_sampling": view_sampling}
        super().__init__(in_channels, hidden, num_layers, features=features, recipe=recipe, edge_dim=edge_dim,
                         lr=lr, tau=tau, cl_variant=cl_variant)
        self.hparams.update(self._gen_kwargs, view1=views[0][0], view2=views[1][0])
        if in_channels is not None and edge_dim != "auto":  # "auto": built when the data is seen
            self._ensure_built(in_channels, edge_dim)

    def _build(self, in_channels: int, edge_dim: int | None) -> None:
        super()._build(in_channels, edge_dim)
        k = self._gen_kwargs
        self.gen1, self.gen2 = (
            ViewGenerator(in_channels, k["gen_hidden"], k["gen_layers"], k["add_mask"], k["dropped"], k["mask_token"])
            if self.hparams[f"view{i}"] is None else FixedView(self._fixed[i - 1]) for i in (1, 2))

    def set_views(self, view1=None, view2=None) -> None:
        """Give a loaded model its own views' augmentations again (those its file records by
        ``repr`` only), before another ``fit``."""
        for i, aug in ((1, view1), (2, view2)):
            gen = getattr(self, f"gen{i}", None)
            if aug is not None:
                if not isinstance(gen, FixedView):
                    raise ConfigError(f"view {i} is a learnable generator; it takes no augmentation")
                gen.augmentation = _view_spec(aug)[1]
                self._fixed[i - 1] = gen.augmentation
                self.hparams[f"view{i}"] = _view_spec(aug)[0]
        self._strategy = None

    def _learnable(self) -> list:
        gens = [g for g in (self.gen1, self.gen2) if isinstance(g, ViewGenerator)]
        if not gens:
            raise ConfigError("both views are augmentations of your own: there is no generator to inspect")
        return gens

    def make_strategy(self, lr: float | None = None) -> NaiveStrategy:
        h = self.hparams
        for i, gen in ((1, self.gen1), (2, self.gen2)):
            if isinstance(gen, FixedView) and gen.augmentation is None:
                raise ConfigError(f"view {i} was an augmentation of your own ({h[f'view{i}']}), which a model file "
                                  "does not hold; give it again with model.set_views(...) before fit")
        params = list(self.contrast.parameters()) + list(self.gen1.parameters()) + list(self.gen2.parameters())
        opt = adam(params, lr=h["lr"] if lr is None else lr)
        return NaiveStrategy(
            self.contrast, self.gen1, self.gen2, opt, tau=h["tau"], cl_variant=h["cl_variant"],
            sim_kind=SIM_COSINE if h["sim_loss"] == "none" else h["sim_loss"],
            sim_weight=0.0 if h["sim_loss"] == "none" else 1.0, view_sampling=h["view_sampling"])

    @torch.no_grad()
    def inspect(self, data, deterministic: bool = False) -> tuple[ViewDecision, ViewDecision]:
        """What both generators do to ``data`` (graphs batched together, in eval mode): the
        operation of every node (0 keep, 1 drop, 2 mask) and the operation probabilities;
        ``deterministic`` takes each node's most probable operation instead of sampling
        (``None`` in the place of a view made by an augmentation of one's own)."""
        batch = self._all(data)
        gens = self._learnable()
        with eval_mode(*gens):
            return tuple(g.inspect(batch, deterministic) if isinstance(g, ViewGenerator) else None
                         for g in (self.gen1, self.gen2))

    @torch.no_grad()
    def views(self, data, deterministic: bool = False):
        """The two generated views of ``data`` (one ``Batch`` each, eval mode)."""
        batch = self._all(data)
        with eval_mode(self.gen1, self.gen2):
            return self.gen1(batch, deterministic)[0], self.gen2(batch, deterministic)[0]


def _view_spec(view):
    """``(what hparams record, the augmentation)`` of a view option: ``(None, None)`` for a
    learnable generator; ``("custom:<repr>", aug)`` for an augmentation (``aug`` None when a
    loaded model's record is given back)."""
    if view is None:
        return None, None
    if isinstance(view, str) and view.startswith("custom:"):
        return view, None
    if isinstance(view, str):
        view = RandomAugmentor(view)  # a name: GraphCL's augmentation with its default ratio
    if not callable(view):
        raise ConfigError(f"view: {view!r} is neither None (a learnable generator) nor an augmentation")
    return f"custom:{view!r}", as_augmentation(view)


@register_model_type
class GraphCL(ContrastiveLearner):
    """The GraphCL baseline (You et al. 2020): contrast two random augmentations of each batch.

    Args (beyond :class:`ContrastiveLearner`'s; ``tau`` defaults to 0.2 as released):
        aug: ``random4`` (one of node_drop, subgraph, edge_pert, attr_mask drawn per view and
            batch), one of them, ``none``, or an augmentation object of one's own (an
            :class:`autogcl.augment.Compose`, :class:`autogcl.augment.RandomChoice`, or any
            callable taking a ``Batch`` and returning its view); a pair ``(first, second)``
            gives each view its own.
        aug_ratio: the augmentation ratio of named augmentations (0.2).
        views: ``"aug-aug"`` (two augmentations) or ``"orig-aug"`` (the graph and the second).

    A model trained with augmentation objects saves their ``repr`` only: after
    :func:`autogcl.load` it embeds as saved, and ``model.set_augmentations(...)`` gives it
    augmentations again before another ``fit``.
    """

    def __init__(self, in_channels: int | None = None, hidden: int = 128, num_layers: int = 5, *,
                 aug=AUG_RANDOM4, aug_ratio: float = 0.2, views: str = VIEWS_AUG_AUG,
                 features: str | None = "auto", recipe: str | None = None, edge_dim: int | str | None = None,
                 lr: float = 0.001, tau: float = 0.2, cl_variant: str = CL_SIMCLR):
        check_choice("GraphCL views", views, GRAPHCL_VIEWS)
        super().__init__(in_channels, hidden, num_layers, features=features, recipe=recipe, edge_dim=edge_dim,
                         lr=lr, tau=tau, cl_variant=cl_variant)
        self.hparams.update(aug_ratio=aug_ratio, views=views)
        self._augs = None
        self.set_augmentations(aug)
        if in_channels is not None and edge_dim != "auto":  # "auto": built when the data is seen
            self._ensure_built(in_channels, edge_dim)

    def set_augmentations(self, aug) -> None:
        """The augmentation(s) of the two views: a name, an object, or a pair (see the class)."""
        pair = list(aug) if isinstance(aug, (list, tuple)) else [aug, aug]
        if len(pair) != 2:
            raise ConfigError(f"aug: one augmentation or a pair of them, got {len(pair)}")
        augs, names = [], []
        for a in pair:
            if isinstance(a, str) and a.startswith("custom:"):  # a loaded model's record of an object
                augs.append(None)
                names.append(a)
            elif isinstance(a, str):
                augs.append(RandomAugmentor(a, self.hparams["aug_ratio"]))  # validates name and ratio
                names.append(a)
            elif callable(a):
                augs.append(as_augmentation(a))  # a per-graph PyG transform runs per graph; views are checked
                names.append(f"custom:{a!r}")
            else:
                raise ConfigError(f"aug: {a!r} is neither an augmentation name nor a callable augmentation")
        self._augs = augs
        self.hparams["aug"] = names[0] if names[0] == names[1] and isinstance(aug, str) else names
        self._strategy = None

    def make_strategy(self, lr: float | None = None) -> GraphCLStrategy:
        h = self.hparams
        if any(a is None for a in self._augs):
            raise ConfigError(f"this GraphCL was trained with augmentations of its own ({h['aug']}), which a model "
                              "file does not hold; give them again with model.set_augmentations(...) before fit")
        opt = adam(self.contrast.parameters(), lr=h["lr"] if lr is None else lr)
        return GraphCLStrategy(self.contrast, *self._augs, opt, tau=h["tau"], cl_variant=h["cl_variant"],
                               views=h["views"])
