"""Contrastive pre-training strategies on unlabeled graphs (AutoGCL paper, Section 3.2; GraphCL, You et al. 2020).

* :class:`NaiveStrategy` (AutoGCL Algorithm 1): two learnable generators make views
  x1, x2; two views drawn from {x, x1, x2} are contrasted; the generators and the encoder
  are updated together.
* :class:`GraphCLStrategy`: the baseline with random augmentations.

Both expose ``train_epoch(loader, epoch) -> dict`` of mean loss terms.
"""

from __future__ import annotations

from ..choices import (
    CL_SIMCLR,
    GRAPHCL_VIEWS,
    SAMPLE_REPLACEMENT,
    SIM_COSINE,
    VIEWS_AUG_AUG,
    VIEWS_ORIG_AUG,
    VIEW_SAMPLINGS,
    check_choice,
)
import torch
from torch import nn

from ..augment.learnable import ViewGenerator, sample_grouped, shared_first_aggregate
from ..errors import ConfigError
from ..losses import cl_kwargs, nt_xent, similarity_loss
from .loop import Strategy, optimizer_covers


def sample_views(picks_from: int = 3) -> list[int]:
    """Two draws with replacement from {0: x, 1: x1, 2: x2} (released view sampling)."""
    return torch.randint(picks_from, (2,)).tolist()


def encode_two(model, encode, a, b):
    """The encodings of two views: in one pass of the model where it can read both at once
    (:meth:`autogcl.models.gin.ContrastModel.encode_pair`; only when ``encode`` is the model
    itself), else one pass each."""
    if encode is model and hasattr(model, "encode_pair"):
        return model.encode_pair(a, b)
    return encode(a), encode(b)


def require_optimized(optimizer, **modules: nn.Module) -> None:
    """A clear error when some trainable parameter of ``modules`` is not in ``optimizer``
    (a generator left out of it would silently never learn)."""
    for name, module in modules.items():
        missing = optimizer_covers(optimizer, module)
        if missing:
            raise ConfigError(f"the optimizer does not update {len(missing)} parameter(s) of {name} "
                              f"(e.g. {missing[0]!r}); pass the parameters of the model and of both "
                              "generators to it")


class NaiveStrategy(Strategy):
    """Algorithm 1 with learnable generators ``gen1``, ``gen2`` and a contrast model.

    Args:
        encode: maps a batch to the vectors that are contrasted (default: ``model``; for a
            classifier, e.g. ``ResGCN.represent``).
        sim_weight: weight of L_sim added to the loss (0 = published; 1 = released).
        gen1, gen2: :class:`ViewGenerator` modules, or any module ``gen(batch) -> (view,
            sample)``; a ``sample`` of ``None`` (a fixed augmentation,
            :class:`autogcl.augment.FixedView`) leaves L_sim out of the step.
        view_sampling: ``"replacement"`` (released: two draws from {x, x1, x2} with
            replacement) or ``"generated"`` (always x1 and x2).
        measure_sim: run both generators on every batch, so that L_sim is measured on every
            step even where no loss needs it (the released loop). ``False`` runs only the
            generators whose views are contrasted (both when ``sim_weight`` > 0): a step that
            contrasts x with x1 never runs x2's generator, and ``sim_loss`` is then the mean
            over the steps that ran both (fewer random draws: another random stream).
    """

    terms = ("loss", "cl_loss", "sim_loss")

    def __init__(self, model: nn.Module, gen1: nn.Module, gen2: nn.Module, optimizer,
                 tau: float = 0.5, cl_variant: str = CL_SIMCLR, sim_kind: str = SIM_COSINE,
                 sim_weight: float = 0.0, view_sampling: str = SAMPLE_REPLACEMENT, encode=None,
                 measure_sim: bool = True):
        self.model, self.gen1, self.gen2, self.opt = model, gen1, gen2, optimizer
        self.measure_sim = measure_sim
        require_optimized(optimizer, model=model, gen1=gen1, gen2=gen2)
        self.encode = encode or model
        self.tau, self.cl_variant, self.sim_kind, self.sim_weight = tau, cl_variant, sim_kind, sim_weight
        self.view_sampling = check_choice("view sampling", view_sampling, VIEW_SAMPLINGS)

    #: set by :func:`autogcl.train.distributed.wrap`: the DDP module whose forward is :meth:`losses`,
    #: the gather of embeddings across processes for NT-Xent, the generator of the view draws
    #: (the same on every process)
    forward_module = None
    gather = None
    view_gen = None
    #: where both generators run with the same autograd setting and their scorers can be grouped
    #: (:func:`autogcl.augment.learnable.sample_grouped`: molecule scorers), run them as one network
    #: with one Gumbel draw (another random stream than two draws; ``False``: one pass each)
    group_generators = True

    def modules(self) -> dict:
        return {"model": self.model, "gen1": self.gen1, "gen2": self.gen2}

    def draw_views(self) -> list[int]:
        """Which two of {x, x1, x2} are contrasted in a step."""
        if self.view_sampling != SAMPLE_REPLACEMENT:
            return [1, 2]
        if self.view_gen is not None:
            return torch.randint(3, (2,), generator=self.view_gen).tolist()
        return sample_views()

    def step(self, batch, epoch: int, step: int) -> dict:
        self.opt.zero_grad()
        picks = self.draw_views()
        with self.autocast():
            terms = (self.forward_module or self.losses)(batch, picks)
        terms["loss"].backward()
        self.opt.step()
        # left on the device: the loop reads an epoch's losses (and checks them) at once
        return {k: v.detach() for k, v in terms.items()}

    def losses(self, batch, picks: list[int]) -> dict:
        """The forward pass of a step contrasting views ``picks``: ``cl_loss``, ``sim_loss`` and
        ``loss`` (what is minimised), with their graphs."""
        # both generators score and draw (in this order, so the random stream is that of
        # gen1(batch), gen2(batch)) so that L_sim is measured on every batch (``measure_sim``;
        # else only those whose view is contrasted, or both when L_sim is in the loss); their first
        # GIN layers share one neighbour sum. A generator whose view is not contrasted, when L_sim
        # is not in the loss, runs without autograd and its view is never built: nothing of it
        # reaches the loss. A view drawn twice is encoded once: the loss and gradients are the
        # same as encoding it twice; only the BatchNorm running statistics get one update
        # instead of two.
        gens = {i: g for i, g in ((1, self.gen1), (2, self.gen2))
                if self.measure_sim or self.sim_weight > 0 or i in picks}
        views: dict[int, object] = {0: batch}
        samples: dict[int, torch.Tensor | None] = {}
        # the fast path needs ViewGenerator's own forward (scores -> sample -> apply); a subclass
        # that overrides forward, or a generator of your own, is called as ``gen(batch)``
        if all(isinstance(g, ViewGenerator) and type(g).forward is ViewGenerator.forward for g in gens.values()):
            grads = {i: torch.is_grad_enabled() and (i in picks or self.sim_weight > 0) for i in gens}
            grouped = None
            if self.group_generators and len(gens) == 2 and len(set(grads.values())) == 1:
                with torch.set_grad_enabled(grads[1]):  # one pass of both (one random draw for both)
                    grouped = sample_grouped(list(gens.values()), batch)
            if grouped is not None:
                samples = dict(zip(gens, grouped))
            else:
                first = shared_first_aggregate(list(gens.values()), batch)
                for i, gen in gens.items():
                    with torch.set_grad_enabled(grads[i]):
                        samples[i] = gen.sample(batch, logits=gen.scores(batch, first))
            for i in set(picks) - {0}:
                views[i] = gens[i].make_view(batch, samples[i])
        else:
            for i, gen in gens.items():
                views[i], samples[i] = gen(batch)
        if picks[1] == picks[0]:
            z1 = z2 = self.encode(views[picks[0]])
        else:
            z1, z2 = encode_two(self.model, self.encode, views[picks[0]], views[picks[1]])
        cl = nt_xent(z1, z2, self.tau, **cl_kwargs(self.cl_variant, "autogcl"), gather=self.gather)
        loss = cl
        if samples.get(1) is None or samples.get(2) is None:  # a fixed augmentation, or a generator not run: no L_sim
            return {"cl_loss": cl, "loss": loss}
        sim = similarity_loss(samples[1], samples[2], self.sim_kind, getattr(batch, "node_alive", None))
        if self.sim_weight > 0:
            loss = loss + self.sim_weight * sim
        return {"cl_loss": cl, "sim_loss": sim, "loss": loss}

class GraphCLStrategy(Strategy):
    """GraphCL: contrast two random augmentations (or the graph and one augmentation)."""

    terms = ("loss", "cl_loss")

    def __init__(self, model: nn.Module, aug1, aug2, optimizer, tau: float = 0.2,
                 cl_variant: str = CL_SIMCLR, views: str = VIEWS_AUG_AUG, encode=None):
        self.model, self.aug1, self.aug2, self.opt = model, aug1, aug2, optimizer
        require_optimized(optimizer, model=model)
        self.encode = encode or model
        self.tau, self.cl_variant = tau, cl_variant
        self.views = check_choice("GraphCL views", views, GRAPHCL_VIEWS)

    forward_module = None  # see NaiveStrategy
    gather = None

    def step(self, batch, epoch: int, step: int) -> dict:
        self.opt.zero_grad()
        with self.autocast():
            terms = (self.forward_module or self.losses)(batch, None)
        terms["loss"].backward()
        self.opt.step()
        value = terms["loss"].detach()
        return {"loss": value, "cl_loss": value}

    def losses(self, batch, picks=None) -> dict:
        """The forward pass of a step: the NT-Xent loss of two augmentations of ``batch``."""
        v1 = batch if self.views == VIEWS_ORIG_AUG else self.aug1(batch)
        v2 = self.aug2(batch)
        z1, z2 = encode_two(self.model, self.encode, v1, v2)
        cl = nt_xent(z1, z2, self.tau, **cl_kwargs(self.cl_variant, "graphcl"), gather=self.gather)
        return {"loss": cl}
