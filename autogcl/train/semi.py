"""Semi-supervised training strategies (AutoGCL paper, Section 3.2) for a classifier such as ResGCN.

* :class:`SupervisedStrategy`: cross-entropy on labeled batches, optionally on a random
  augmentation of each batch (GraphCL "aug only").
* :class:`LearnableAugStrategy`: cross-entropy on the two learnable views + lambda * L_sim
  ("our aug only").
* :class:`JointStrategy` (AutoGCL Algorithm 2): every epoch (a) a contrastive pass over the
  training graphs (labels unused) with the generators frozen, updating the classifier's
  encoder, then (b) a labeled pass with L_cls(x, x1, x2) + lambda * L_sim updating the
  generators and the classifier. Switches give the ablations (no (a): L_cls [+ L_sim]).
* :class:`JointReleasedStrategy`: the released code's variant: labeled batches only, with
  L_sim (1 - MSE) + mean L_cls + L_cl on the classifier's outputs.

:func:`semi_strategy` is the one table of the named strategies (``autogcl.choices.SEMI_STRATEGIES``)
that :class:`autogcl.SemiSupervised`, and through it the ``autogcl semi`` protocol, train with.

Classifiers are called as ``model(batch)`` (log-probabilities) and ``model.represent(batch)``
(the vector contrasted).
"""

from __future__ import annotations

from ..choices import AUG_RANDOM4, CL_SIMCLR, SIM_COSINE, SIM_MSE
import torch
import torch.nn.functional as F

from ..augment import RandomAugmentor
from ..choices import SEMI_STRATEGIES, check_choice
from ..errors import ConfigError
from ..losses import cl_kwargs, classification_loss, nt_xent, similarity_loss
from .loop import Strategy
from .naive import GraphCLStrategy, NaiveStrategy, sample_views
from .optim import adam

#: the strategies that train two learnable view generators beside the classifier
USES_GENERATORS = frozenset({"naive", "aug", "joint", "joint_cls", "joint_cls_sim", "joint_cl_cls", "joint_released"})
#: the strategies with a contrastive pass (NT-Xent: two graphs a batch at least)
CONTRASTIVE = frozenset({"naive", "graphcl", "joint", "joint_cl_cls", "joint_released"})
#: the strategies whose training epochs read every graph (labeled or not) before or beside the
#: labeled ones: they train on ``(all graphs, labeled graphs)``; the others on the labeled graphs
READS_ALL = frozenset({"naive", "joint", "joint_cls", "joint_cls_sim", "joint_cl_cls", "joint_released"})


def _nll(logp: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.nll_loss(logp, y.view(-1))


class SupervisedStrategy(Strategy):
    terms = ("loss", "cls_loss")

    def __init__(self, model, optimizer, augment=None):
        self.model, self.opt, self.augment = model, optimizer, augment

    def step(self, batch, epoch: int, step: int) -> dict:
        self.opt.zero_grad()
        view = batch if self.augment is None else self.augment(batch)
        loss = _nll(self.model(view), batch.y)
        loss.backward()
        self.opt.step()
        v = loss.detach()
        return {"loss": v, "cls_loss": v}


class LearnableAugStrategy(Strategy):
    """Supervised training on the two learnable views: CE(F(x1)) + CE(F(x2)) + lam * L_sim."""

    terms = ("loss", "cls_loss", "sim_loss")

    def __init__(self, model, gen1, gen2, opt_model, opt_gen, lam: float = 1.0, sim_kind: str = SIM_COSINE):
        self.model, self.gen1, self.gen2 = model, gen1, gen2
        self.opt_model, self.opt_gen, self.lam, self.sim_kind = opt_model, opt_gen, lam, sim_kind

    def modules(self) -> dict:
        return {"model": self.model, "gen1": self.gen1, "gen2": self.gen2}

    def optimizers(self) -> dict:
        return {"model": self.opt_model, "gen": self.opt_gen}

    def step(self, batch, epoch: int, step: int) -> dict:
        self.opt_model.zero_grad()
        self.opt_gen.zero_grad()
        (x1, s1), (x2, s2) = self.gen1(batch), self.gen2(batch)
        cls = classification_loss([self.model(x1), self.model(x2)], batch.y)
        sim = similarity_loss(s1, s2, self.sim_kind)
        loss = cls + self.lam * sim
        loss.backward()
        self.opt_model.step()
        self.opt_gen.step()
        return {"loss": loss.detach(), "cls_loss": cls.detach(), "sim_loss": sim.detach()}


class JointStrategy(Strategy):
    """Algorithm 2 and its loss ablations.

    ``train_epoch((unlabeled_loader, labeled_loader), epoch)``.

    Args:
        use_cl: run the contrastive pass (a) over the unlabeled loader.
        use_sim: add ``lam * L_sim`` in the labeled pass (b).
        cls_reduce: ``sum`` (published) or ``mean`` (released) of the three cross-entropies.
    """

    def __init__(self, model, gen1, gen2, opt_model, opt_gen, use_cl: bool = True, use_sim: bool = True,
                 lam: float = 1.0, tau: float = 0.5, cl_variant: str = CL_SIMCLR, sim_kind: str = SIM_COSINE,
                 cls_reduce: str = "sum"):
        self.model, self.gen1, self.gen2 = model, gen1, gen2
        self.opt_model, self.opt_gen = opt_model, opt_gen
        self.use_cl, self.use_sim, self.lam, self.tau = use_cl, use_sim, lam, tau
        self.cl_variant, self.sim_kind, self.cls_reduce = cl_variant, sim_kind, cls_reduce

    def modules(self) -> dict:
        return {"model": self.model, "gen1": self.gen1, "gen2": self.gen2}

    def optimizers(self) -> dict:
        return {"model": self.opt_model, "gen": self.opt_gen}

    def contrastive_step(self, batch, epoch: int, step: int) -> dict:
        """(a): generators frozen (eval mode, no gradient); only the classifier moves."""
        self.opt_model.zero_grad()
        picks = sample_views()
        views = {0: batch}
        with torch.no_grad():
            for i, gen in ((1, self.gen1), (2, self.gen2)):
                if i in picks:
                    views[i] = gen(batch)[0]
        z1 = self.model.represent(views[picks[0]])
        z2 = z1 if picks[1] == picks[0] else self.model.represent(views[picks[1]])
        cl = nt_xent(z1, z2, self.tau, **cl_kwargs(self.cl_variant, "autogcl"))
        cl.backward()
        self.opt_model.step()
        return {"cl_loss": cl.detach()}

    def labeled_step(self, batch, epoch: int, step: int) -> dict:
        """(b): L_cls(x, x1, x2) [+ lam * L_sim]; generators and classifier move."""
        self.opt_model.zero_grad()
        self.opt_gen.zero_grad()
        (x1, s1), (x2, s2) = self.gen1(batch), self.gen2(batch)
        cls = classification_loss([self.model(v) for v in (batch, x1, x2)], batch.y, self.cls_reduce)
        sim = similarity_loss(s1, s2, self.sim_kind)
        loss = cls + self.lam * sim if self.use_sim else cls
        loss.backward()
        self.opt_model.step()
        self.opt_gen.step()
        return {"loss": loss.detach(), "cls_loss": cls.detach(), "sim_loss": sim.detach()}

    def train_epoch(self, loaders, epoch: int) -> dict:
        unlabeled, labeled = loaders
        out = {}
        if self.use_cl:
            self.model.train()
            self.gen1.eval()
            self.gen2.eval()
            out.update(self._run_epoch(unlabeled, epoch, self.contrastive_step, ("cl_loss",)))
            t_cl = out.pop("time_s")
        else:
            t_cl = 0.0
        for m in self.modules().values():
            m.train()
        sup = self._run_epoch(labeled, epoch, self.labeled_step, ("loss", "cls_loss", "sim_loss"))
        out.update(sup)
        out["time_s"] = sup["time_s"] + t_cl
        if self.use_cl:
            out["loss"] = out["loss"] + out["cl_loss"]
        return out


class JointReleasedStrategy(Strategy):
    """The released code's joint training: labeled batches only, loss =
    (1 - MSE(keep1, keep2)) + mean(CE(x), CE(x1), CE(x2)) + NT-Xent(F(x1), F(x2)) on the
    classifier's log-probabilities (positive left out of the denominator, tau 0.5)."""

    terms = ("loss", "cls_loss", "sim_loss", "cl_loss")

    def __init__(self, model, gen1, gen2, opt_model, opt_gen, tau: float = 0.5):
        self.model, self.gen1, self.gen2 = model, gen1, gen2
        self.opt_model, self.opt_gen, self.tau = opt_model, opt_gen, tau

    def modules(self) -> dict:
        return {"model": self.model, "gen1": self.gen1, "gen2": self.gen2}

    def optimizers(self) -> dict:
        return {"model": self.opt_model, "gen": self.opt_gen}

    def step(self, batch, epoch: int, step: int) -> dict:
        self.opt_model.zero_grad()
        self.opt_gen.zero_grad()
        (x1, s1), (x2, s2) = self.gen1(batch), self.gen2(batch)
        sim = similarity_loss(s1, s2, SIM_MSE)
        out0, out1, out2 = self.model(batch), self.model(x1), self.model(x2)
        cls = (_nll(out0, batch.y) + _nll(out1, batch.y) + _nll(out2, batch.y)) / 3
        cl = nt_xent(out1, out2, self.tau, exclude_positive=True, symmetric=True)
        loss = sim + cls + cl
        loss.backward()
        self.opt_gen.step()
        self.opt_model.step()
        return {"loss": loss.detach(), "cls_loss": cls.detach(), "sim_loss": sim.detach(), "cl_loss": cl.detach()}

    def train_epoch(self, loaders, epoch: int) -> dict:
        for m in self.modules().values():
            m.train()
        return self._run_epoch(loaders[1], epoch, self.step)


def semi_strategy(name: str, model, generators=(), *, lr: float, lam: float = 1.0, tau: float = 0.5,
                  cl_variant: str = CL_SIMCLR, sim_loss: str = SIM_COSINE, aug: str = AUG_RANDOM4,
                  aug_ratio: float = 0.2):
    """``(pre-training strategy or None, training strategy)`` of the semi-supervised strategy
    ``name`` over a classifier (``model(batch)``: log-probabilities, ``model.represent(batch)``:
    the vector contrasted) and, for :data:`USES_GENERATORS`, its two view generators; Adam at
    ``lr`` (the generators their own). Pre-training reads every graph; training reads
    ``(all graphs, labeled graphs)`` for :data:`READS_ALL`, else the labeled graphs.

    * ``supervised``: cross-entropy on the labeled graphs; ``graphcl_aug``: on a random
      augmentation (``aug``, ``aug_ratio``) of each labeled batch;
    * ``graphcl``: GraphCL pre-training (two random augmentations, NT-Xent), then ``supervised``;
    * ``aug``: cross-entropy on the two learnable views + ``lam`` x L_sim;
    * ``naive``: AutoGCL's naive contrastive pre-training, then the labeled pass L_cls(x, x1, x2);
    * ``joint`` (Algorithm 2): a contrastive pass over every graph, then L_cls + ``lam`` x L_sim;
      ``joint_cls``, ``joint_cls_sim``, ``joint_cl_cls``: its loss ablations;
    * ``joint_released``: the released code's joint variant (:class:`JointReleasedStrategy`)."""
    check_choice("strategy", name, SEMI_STRATEGIES)
    opt = adam(model.parameters(), lr=lr)
    if name in ("supervised", "graphcl_aug"):
        return None, SupervisedStrategy(model, opt, RandomAugmentor(aug, aug_ratio) if name == "graphcl_aug" else None)
    if name == "graphcl":
        augs = RandomAugmentor(aug, aug_ratio), RandomAugmentor(aug, aug_ratio)
        pre = GraphCLStrategy(model, *augs, opt, tau=tau, cl_variant=cl_variant, encode=model.represent)
        return pre, SupervisedStrategy(model, opt)
    if len(generators) != 2:
        raise ConfigError(f"the {name} strategy trains two view generators; got {len(generators)}")
    g1, g2 = generators
    opt_gen = adam([*g1.parameters(), *g2.parameters()], lr=lr)
    if name == "aug":
        return None, LearnableAugStrategy(model, g1, g2, opt, opt_gen, lam, sim_loss)
    if name == "joint_released":
        return None, JointReleasedStrategy(model, g1, g2, opt, opt_gen, tau=tau)
    if name == "naive":
        pre_opt = adam([*model.parameters(), *g1.parameters(), *g2.parameters()], lr=lr)
        pre = NaiveStrategy(model, g1, g2, pre_opt, tau=tau, cl_variant=cl_variant, sim_kind=sim_loss,
                            encode=model.represent)
        return pre, JointStrategy(model, g1, g2, opt, opt_gen, use_cl=False, use_sim=False)
    use_cl, use_sim = name in ("joint", "joint_cl_cls"), name in ("joint", "joint_cls_sim")
    return None, JointStrategy(model, g1, g2, opt, opt_gen, use_cl=use_cl, use_sim=use_sim, lam=lam, tau=tau,
                               cl_variant=cl_variant, sim_kind=sim_loss)
