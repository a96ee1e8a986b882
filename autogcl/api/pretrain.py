"""Contrastive pre-training of the molecule GIN on an unlabeled SMILES corpus, as a library
call: :class:`MoleculePretrainer` (and :func:`pretrain_molecules`, its one-line form) gives a
:class:`autogcl.molecules.MoleculeEncoder` to embed or fine-tune.

The corpus is read chunk by chunk (:class:`autogcl.data.corpus.MoleculeCorpus`), so memory
holds one chunk; with a checkpoint folder, a checkpoint (weights, optimizer, RNG states,
position in the epoch) is written after every chunk and epoch, and at a signal's stop (the last
finished step), and the same call continues an interrupted run from it with the numbers of an
unbroken one. Started by ``torchrun`` as several
processes, it trains data-parallel (:mod:`autogcl.train.distributed`; ``batch_size`` is the
global batch). ``autogcl transfer pretrain`` is this call inside a run folder.

::

    from autogcl.api.pretrain import pretrain_molecules

    encoder = pretrain_molecules("moses_train.csv.gz", "runs/my-pretrain", epochs=20, device="cuda")
    encoder.save("encoder.pt")
"""

from __future__ import annotations

import inspect
import logging
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch

from .. import seeding
from ..augment import MoleculeViewGenerator, RandomAugmentor

from ..choices import (
    AUGMENTATIONS,
    AUG_RANDOM4,
    CL_SIMCLR,
    CL_VARIANTS,
    DROPPED,
    DROP_REMOVE,
    SAMPLE_REPLACEMENT,
    SIM_COSINE,
    SIM_LOSSES,
    VIEW_SAMPLINGS,
    check_choice,
)
from ..data.corpus import MoleculeCorpus
from ..data.molecules import VOCAB
from ..devices import engine_of
from ..errors import ConfigError, DataError
from ..models.gin import ContrastModel
from ..models.mol_gin import MolEncoder, MolNodeScorer
from ..train import GraphCLStrategy, NaiveStrategy, distributed
from ..train.optim import adam
from ..train.loop import check_fit_plan
from ..train.pretrain import ChunkedTrainer, chunk_plan
from ..train.tracking import fit_tracker

__all__ = ["MoleculePretrainer", "pretrain_molecules"]

log = logging.getLogger(__name__)

#: the checkpoint file a pre-training writes in its checkpoint folder
CHECKPOINT = "checkpoint.pt"


def _naive(p: MoleculePretrainer, model: ContrastModel):
    """AutoGCL's naive strategy: two learnable view generators on atom-level features."""
    num_ops = 3 if p.add_mask else 2
    gens = [MoleculeViewGenerator(MolNodeScorer(num_ops, VOCAB, p.gen_hidden, p.gen_layers),
                                  add_mask=p.add_mask, dropped=p.dropped, static_shapes=p.static_views)
            for _ in range(2)]
    params = list(model.parameters()) + list(gens[0].parameters()) + list(gens[1].parameters())
    return NaiveStrategy(model, gens[0], gens[1], adam(params, lr=p.lr), tau=p.temperature, cl_variant=p.cl_variant,
                         sim_kind=SIM_COSINE if p.sim_loss == "none" else p.sim_loss,
                         sim_weight=0.0 if p.sim_loss == "none" else 1.0, view_sampling=p.view_sampling,
                         measure_sim=False)  # a generator whose view no loss needs is not run


def _graphcl(p: MoleculePretrainer, model: ContrastModel):
    """GraphCL: two random augmentations of every molecule."""
    aug1, aug2 = RandomAugmentor(p.aug, p.aug_ratio), RandomAugmentor(p.aug, p.aug_ratio)
    return GraphCLStrategy(model, aug1, aug2, adam(model.parameters(), lr=p.lr), tau=p.temperature,
                           cl_variant=p.cl_variant)


#: the pre-training methods, by name
STRATEGIES = {"autogcl": _naive, "graphcl": _graphcl}


class MoleculePretrainer:
    """Pre-train the molecule GIN of Hu et al. (``num_layers`` x ``dim``) contrastively.

    ``method``: ``"autogcl"`` (learnable view generators, the naive strategy: ``gen_hidden``,
    ``gen_layers``, ``add_mask``, ``dropped``, ``sim_loss``, ``view_sampling``, ``static_views``:
    atoms removed in place, :class:`autogcl.augment.learnable.MoleculeViewGenerator`'s
    ``static_shapes``; ``pad_atoms``: with it, every batch padded to a multiple of that many atoms,
    :func:`autogcl.data.batching.pad_batch`) or ``"graphcl"``
    (random augmentations ``aug`` at ``aug_ratio``). ``tau``: the NT-Xent temperature (default
    0.5 for autogcl, 0.1 for graphcl). ``chunk_size``, ``max_molecules``, ``smiles_col``: how
    the corpus is read. The defaults are those of ``autogcl transfer pretrain`` (the paper's).

    After :meth:`fit`: ``history`` (a row per epoch: molecules, steps, time, throughput, mean
    loss terms, peak memory), ``stopped_early`` and ``corpus_summary``."""

    def __init__(self, method: str = "autogcl", *, epochs: int = 20, batch_size: int = 256, lr: float = 0.001,
                 dim: int = 300, num_layers: int = 5, gen_hidden: int = 128, gen_layers: int = 2,
                 add_mask: bool = True, dropped: str = DROP_REMOVE, tau: float | None = None,
                 cl_variant: str = CL_SIMCLR, sim_loss: str = "none", view_sampling: str = SAMPLE_REPLACEMENT,
                 aug: str = AUG_RANDOM4, aug_ratio: float = 0.2, chunk_size: int = 50_000,
                 max_molecules: int | None = None, smiles_col: str | None = None, seed: int = 0,
                 static_views: bool = False, pad_atoms: int | None = None):
        for name, value, allowed in (("method", method, tuple(STRATEGIES)), ("dropped", dropped, DROPPED),
                                     ("cl_variant", cl_variant, CL_VARIANTS), ("sim_loss", sim_loss, SIM_LOSSES),
                                     ("view_sampling", view_sampling, VIEW_SAMPLINGS),
                                     ("aug", aug, AUGMENTATIONS)):
            check_choice(name, value, allowed)
        for name, value in (("epochs", epochs), ("batch_size", batch_size - 1), ("dim", dim),
                            ("num_layers", num_layers), ("gen_hidden", gen_hidden), ("gen_layers", gen_layers)):
            if value < 1:
                raise ConfigError(f"{name} must be at least {2 if name == 'batch_size' else 1}")
        if chunk_size < 2 or (max_molecules is not None and max_molecules < 2):
            raise ConfigError("chunk_size and max_molecules must be at least 2")
        if not lr > 0 or (tau is not None and not tau > 0) or not 0 <= aug_ratio < 1:
            raise ConfigError(f"lr and tau must be positive and aug_ratio in [0, 1) (got {lr}, {tau}, {aug_ratio})")
        self.method, self.epochs, self.batch_size, self.lr = method, epochs, batch_size, lr
        self.dim, self.num_layers, self.gen_hidden, self.gen_layers = dim, num_layers, gen_hidden, gen_layers
        self.add_mask, self.dropped, self.tau, self.cl_variant = add_mask, dropped, tau, cl_variant
        self.sim_loss, self.view_sampling, self.aug, self.aug_ratio = sim_loss, view_sampling, aug, aug_ratio
        self.chunk_size, self.max_molecules, self.smiles_col, self.seed = chunk_size, max_molecules, smiles_col, seed
        if static_views and (method != "autogcl" or dropped != DROP_REMOVE):
            raise ConfigError(f"static_views removes atoms in place: it needs method 'autogcl' and dropped "
                              f"{DROP_REMOVE!r} (got {method!r}, {dropped!r})")
        if pad_atoms is not None and (not static_views or pad_atoms < 1):
            raise ConfigError(f"pad_atoms pads batches with atoms out of the view: it needs static_views and at least "
                              f"1 atom (got pad_atoms={pad_atoms}, static_views={static_views})")
        self.static_views, self.pad_atoms = static_views, pad_atoms
        self.history: list[dict] = []
        self.stopped_early = False
        self.corpus_summary: dict | None = None

    @property
    def temperature(self) -> float:
        return self.tau if self.tau is not None else (0.5 if self.method == "autogcl" else 0.1)

    def get_params(self) -> dict:
        """The options this pre-training was built with."""
        names = ("method", "epochs", "batch_size", "lr", "dim", "num_layers", "gen_hidden", "gen_layers",
                 "add_mask", "dropped", "tau", "cl_variant", "sim_loss", "view_sampling", "aug", "aug_ratio",
                 "chunk_size", "max_molecules", "smiles_col", "seed", "static_views", "pad_atoms")
        return {k: getattr(self, k) for k in names}

    def build_strategy(self):
        """The contrast model (a fresh molecule GIN), its optimizer and the training strategy
        (``strategy.model.encoder`` is the encoder trained)."""
        return STRATEGIES[self.method](self, ContrastModel(MolEncoder(VOCAB, self.dim, self.num_layers, dropout=0.0)))

    def fit(self, corpus: str | Path, checkpoint_dir: str | Path | None = None, *, device="cpu",
            workers: int | None = None, progress: bool | None = None, max_steps: int | None = None,
            on_epoch: Callable[[list[dict], MolEncoder], None] | None = None, log_dir: str | Path | None = None,
            tracking: str | None = None, show_progress: bool | None = None):
        """Pre-train on the SMILES file ``corpus`` (a CSV with a SMILES column, or ``.smi``;
        ``.gz`` ok) and return the encoder (:class:`autogcl.molecules.MoleculeEncoder`, on
        ``device``, in eval mode).

        ``checkpoint_dir``: the folder of the checkpoint; a checkpoint already there is
        continued (``None``: a temporary one, removed at the end). A second ``fit`` therefore
        trains a new encoder, unless it is given the folder of an earlier fit: then it goes on
        from that checkpoint up to ``epochs`` in all (raise ``epochs`` to train further). ``workers``: processes that
        featurise the corpus. ``max_steps`` stops after that many optimizer steps in total
        (``stopped_early``). ``on_epoch(history, encoder)`` runs after every epoch (on rank 0
        of a data-parallel run), with the encoder being trained. SIGTERM or SIGINT stops the
        fit before its next step with :class:`autogcl.errors.Preempted`, writing the checkpoint
        of the last finished step (a resumed fit trains none of the chunk's steps again).
        ``log_dir``, ``tracking``: every epoch's loss terms, time and molecules/s as TensorBoard
        scalars or MLflow metrics (as :meth:`autogcl.AutoGCL.fit`).
        ``progress``: the progress bar (``None``: in a terminal), as every estimator's ``fit``
        (``show_progress``: its older name)."""
        if progress is not None and show_progress is not None and progress != show_progress:
            raise ConfigError(f"progress={progress!r} and show_progress={show_progress!r} disagree; give progress only")
        show_progress = progress if progress is not None else show_progress
        if not isinstance(corpus, (str, Path)):
            raise DataError(f"the corpus must be the path of a SMILES file (a CSV with a SMILES column, or .smi), "
                            f"got a {type(corpus).__name__}; write a list of SMILES to a .smi file, one a line")
        corpus = Path(corpus).expanduser()
        if not corpus.is_file():
            raise DataError(f"{corpus}: no such SMILES file")
        if checkpoint_dir is None:
            with tempfile.TemporaryDirectory(prefix="autogcl-pretrain-") as tmp:
                return self.fit(corpus, tmp, device=device, workers=workers, show_progress=show_progress,
                                max_steps=max_steps, on_epoch=on_epoch, log_dir=log_dir, tracking=tracking)
        checkpoint = Path(checkpoint_dir) / CHECKPOINT
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        ctx = distributed.init(device) if distributed.launched() else None
        engine = engine_of(device)
        if ctx is not None:
            distributed.check_batch(self.batch_size, ctx)
            engine = engine.on(ctx.device)
        main = ctx is None or ctx.is_main
        tracker = fit_tracker(log_dir, type(self).__name__, tracking) if main else None  # a bad one fails now
        try:
            reader = MoleculeCorpus(corpus, self.smiles_col, self.max_molecules, self.chunk_size, workers=workers,
                                    progress=show_progress is not False and main)
            if ctx is not None and not main:
                ctx.barrier()  # rank 0 featurises the corpus first; the others then read its cache
            chunks = reader.prepare()
            if ctx is not None and main:
                ctx.barrier()
            self.corpus_summary = reader.summary()
            check_fit_plan(chunk_plan([c.molecules for c in chunks], self.batch_size), self.epochs,
                           f"{type(self).__name__}.fit on {corpus.name}", "molecule")
            loader_gen = seeding.seed_everything(self.seed)
            strategy = self.build_strategy()
            if ctx is not None:
                strategy.to(engine)
                distributed.wrap(strategy, ctx, seed=self.seed)
                torch.manual_seed(distributed.rank_seed(self.seed, ctx))  # each process its own noise
            trainer = ChunkedTrainer(strategy, len(chunks), reader.load, self.batch_size, checkpoint, loader_gen,
                                     device=None if ctx is not None else engine, show_progress=show_progress,
                                     desc=f"pretrain {self.method}", dist=ctx, tracker=tracker, pad=self.pad_atoms)
            encoder = strategy.model.encoder
            self.history, self.stopped_early = trainer.fit(
                self.epochs, max_steps=max_steps,
                on_epoch=None if on_epoch is None else lambda rows: on_epoch(rows, encoder))
        finally:
            if tracker is not None:
                tracker.close()
        return self._result(encoder)

    def _result(self, trained: MolEncoder):
        """The trained weights in a :class:`~autogcl.molecules.MoleculeEncoder` of their own."""
        from ..molecules import MoleculeEncoder  # the molecule API imports this package

        out = MoleculeEncoder(self.dim, self.num_layers, VOCAB, meta=self.meta())
        out.encoder.load_state_dict(trained.state_dict())
        return out.to(next(trained.parameters()).device).eval()

    def meta(self) -> dict:
        """What an encoder file records of this pre-training."""
        return {"method": self.method, "epochs": len(self.history),
                "molecules_seen": int(sum(r["molecules"] for r in self.history)),
                "corpus": self.corpus_summary, "pretrain_options": self.get_params()}


def pretrain_molecules(corpus: str | Path, checkpoint_dir: str | Path | None = None, **options):
    """``MoleculePretrainer(**options).fit(corpus, checkpoint_dir, ...)``: the pre-trained
    :class:`autogcl.molecules.MoleculeEncoder` (its ``meta`` records the options, the corpus
    and the epochs). One keyword vocabulary: every keyword of :meth:`MoleculePretrainer.fit`
    (``device``, ``workers``, ``progress``, ``max_steps``, ``on_epoch``, ``log_dir``,
    ``tracking``, ...) goes to the fit, every other to the constructor; an unknown keyword is a
    :class:`ConfigError` naming what both take."""
    fit_names = [k for k in inspect.signature(MoleculePretrainer.fit).parameters if k not in ("self", "corpus",
                                                                                            "checkpoint_dir")]
    init_names = [k for k in inspect.signature(MoleculePretrainer.__init__).parameters if k != "self"]
    unknown = [k for k in options if k not in fit_names and k not in init_names]
    if unknown:
        raise ConfigError(f"pretrain_molecules: unknown option {unknown[0]!r}; it takes the options of "
                          f"MoleculePretrainer ({', '.join(init_names)}) and of its fit ({', '.join(fit_names)})")
    fit = {k: v for k, v in options.items() if k in fit_names}
    return MoleculePretrainer(**{k: v for k, v in options.items() if k not in fit}).fit(corpus, checkpoint_dir, **fit)
