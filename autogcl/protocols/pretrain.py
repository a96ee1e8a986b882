"""Transfer pre-training (AutoGCL paper, Section 4 and Table 4; docs/method.md): contrastive
training of the molecule GIN on an unlabeled SMILES corpus, with the naive strategy
(learnable generators on atom-level features) or GraphCL's random augmentations.

The corpus is read chunk by chunk (:class:`autogcl.data.corpus.MoleculeCorpus`), so memory
holds one chunk. A checkpoint (weights, optimizer, RNG states, position in the epoch) is
written after every chunk and every epoch; ``resume`` continues an interrupted run from
it. The run folder ends with ``encoder.pt`` (the encoder to fine-tune), ``metrics.csv``
and ``result.json``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import paths, runs
from ..augment import MoleculeViewGenerator, RandomAugmentor
from ..config import Config, option
from ..data.corpus import MoleculeCorpus
from ..data.datasets import fingerprint
from ..data.molecules import VOCAB
from ..devices import resolve_device, runtime_info
from ..errors import ConfigError, DataError
from ..models.gin import ContrastModel
from ..models.mol_gin import MolEncoder, MolNodeScorer, save_encoder
from ..train import GraphCLStrategy, NaiveStrategy
from ..train.pretrain import ChunkedTrainer, peak_rss_mb

log = logging.getLogger(__name__)

METHODS = ("autogcl", "graphcl")
DEFAULT_CORPUS = "pretrain/moses_train.csv.gz"


@dataclass
class PretrainConfig(Config):
    """Everything that defines a pre-training run."""

    corpus: str = option("", "SMILES file (CSV with a SMILES column, or .smi; .gz ok); default: "
                         "<data root>/pretrain/moses_train.csv.gz")
    # name, size, mtime of the corpus: a replaced file is never resumed
    corpus_fingerprint: list | None = option(None, cli=False)
    smiles_col: str | None = option(None, "SMILES column (default: one named SMILES, else the first)", type=str)
    method: str = option("autogcl", "learnable view generators (naive strategy) or GraphCL's random4",
                         choices=METHODS)
    epochs: int = option(20, "epochs over the corpus", low=1)
    batch_size: int = option(256, "batch size", low=2)
    lr: float = option(0.001, "Adam learning rate", low=0, low_open=True)
    max_molecules: int | None = option(None, "read only the first N SMILES", type=int)
    chunk_size: int = option(50_000, "SMILES per cached chunk (bounds memory)")
    dim: int = option(300, "GIN width", cli=False)
    num_layers: int = option(5, "GIN layers", cli=False)
    gen_hidden: int = option(128, "generator width", cli=False)
    gen_layers: int = option(2, "generator layers", cli=False)
    add_mask: bool = option(True, "generators may also mask atoms", negate="--no-mask")
    dropped: str = option("remove", "dropped atoms are removed or kept as isolated atoms",
                          choices=("remove", "isolate"))
    tau: float | None = option(None, "NT-Xent temperature (default 0.5 autogcl, 0.1 graphcl)", type=float,
                                 low=0, low_open=True)
    cl_variant: str = option("simclr", "NT-Xent form", cli=False)
    sim_loss: str = option("none", "add L_sim to the naive strategy (released code: mse)",
                           choices=("none", "cosine", "mse"), what="similarity loss")
    view_sampling: str = option("replacement", "views contrasted", cli=False)
    aug: str = option("random4", "GraphCL augmentation (method graphcl)", choices=RandomAugmentor.names,
                      what="augmentation")
    aug_ratio: float = option(0.2, "GraphCL augmentation ratio", low=0, high=1, high_open=True)
    seed: int = option(0, "seed", low=0)

    def __post_init__(self):
        self.check_choices()
        if self.chunk_size < 2 or (self.max_molecules is not None and self.max_molecules < 2):
            raise ConfigError("--chunk-size and --max-molecules must be at least 2")
        # after validation: a value out of range is an error even where it does not apply
        self.drop_unused(("aug", "aug_ratio") if self.method == "autogcl" else
                         ("add_mask", "dropped", "sim_loss", "gen_hidden", "gen_layers", "view_sampling"),
                         f"to --method {self.method}")

    @property
    def temperature(self) -> float:
        if self.tau is not None:
            return self.tau
        return 0.5 if self.method == "autogcl" else 0.1



def resolve_corpus(corpus: str, data_root=None) -> Path:
    """The SMILES file: the given path, else the MOSES file in the first data root holding it."""
    if corpus:
        p = Path(corpus).expanduser()
        if not p.is_file():
            raise DataError(f"{p}: no such SMILES file")
        return p.resolve()
    roots = paths.data_roots(data_root)
    for r in roots:
        if (r / DEFAULT_CORPUS).is_file():
            return (r / DEFAULT_CORPUS).resolve()
    looked = ", ".join(str(r / DEFAULT_CORPUS) for r in roots)
    raise DataError(f"no pre-training corpus given and none found (looked in {looked}); "
                    "pass --corpus FILE (a CSV with a SMILES column or a .smi file)")


def build_strategy(cfg: PretrainConfig):
    encoder = MolEncoder(VOCAB, cfg.dim, cfg.num_layers, dropout=0.0)
    model = ContrastModel(encoder)
    if cfg.method == "autogcl":
        num_ops = 3 if cfg.add_mask else 2
        gens = [MoleculeViewGenerator(MolNodeScorer(num_ops, VOCAB, cfg.gen_hidden, cfg.gen_layers),
                                      add_mask=cfg.add_mask, dropped=cfg.dropped) for _ in range(2)]
        params = list(model.parameters()) + list(gens[0].parameters()) + list(gens[1].parameters())
        opt = torch.optim.Adam(params, lr=cfg.lr)
        return NaiveStrategy(model, gens[0], gens[1], opt, tau=cfg.temperature,
                             cl_variant=cfg.cl_variant,
                             sim_kind="cosine" if cfg.sim_loss == "none" else cfg.sim_loss,
                             sim_weight=0.0 if cfg.sim_loss == "none" else 1.0, view_sampling=cfg.view_sampling)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    aug1, aug2 = RandomAugmentor(cfg.aug, cfg.aug_ratio), RandomAugmentor(cfg.aug, cfg.aug_ratio)
    return GraphCLStrategy(model, aug1, aug2, opt, tau=cfg.temperature, cl_variant=cfg.cl_variant)


def pretrain(cfg: PretrainConfig, out: Path, data_root=None, resume: bool = False,
             workers: int | None = None, show_progress: bool | None = None,
             max_steps: int | None = None, device="cpu", restart_damaged: bool = False, executor=None) -> dict:
    """Pre-train into the run folder ``out`` (one long unit, through :func:`autogcl.runs.run_units`
    on ``executor``: by default here); returns the result.

    ``max_steps`` stops after that many optimizer steps in total (for smoke tests; the run
    is then finished early and says so)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; name a folder for the run")
    if out.is_dir() and not (out / "result.json").is_file() and any(out.iterdir()):
        # the finished run replaces the folder: never a folder of someone else's files
        raise ConfigError(f"--out {out} holds other files and no finished pre-training run; name a new or empty "
                          "folder")
    device = resolve_device(device)
    corpus_path = resolve_corpus(cfg.corpus, data_root)
    cfg = PretrainConfig.from_dict({**cfg.to_dict(), "corpus": str(corpus_path),
                                    "corpus_fingerprint": fingerprint([corpus_path])[0]})
    unit = runs.Unit(dir=out, config=cfg.to_dict(), seed=cfg.seed, label=f"pretrain {cfg.method}")

    def fn(unit):
        work = runs.start_work(unit, runtime_info(device))
        corpus = MoleculeCorpus(corpus_path, cfg.smiles_col, cfg.max_molecules, cfg.chunk_size,
                                workers=workers, progress=show_progress is not False)
        chunks = corpus.prepare()
        runs.atomic_write_json(work / "corpus.json", corpus.summary())
        loader_gen = runs.seed_everything(cfg.seed)
        strategy = build_strategy(cfg)
        trainer = ChunkedTrainer(strategy, len(chunks), corpus.load, cfg.batch_size, work / "checkpoint.pt",
                                 loader_gen, device=device, show_progress=show_progress,
                                 desc=f"pretrain {cfg.method}")

        def write_encoder(rows):
            save_encoder(strategy.model.encoder, work / "encoder.pt", _encoder_meta(cfg, corpus, rows))

        rows, stopped_early = trainer.fit(cfg.epochs, max_steps=max_steps, on_epoch=write_encoder)
        result = {"protocol": "pretrain", "method": cfg.method, "seed": cfg.seed,
                  "epochs": len(rows), "stopped_early": stopped_early,
                  "molecules_seen": int(sum(r["molecules"] for r in rows)),
                  "steps": int(sum(r["steps"] for r in rows)),
                  "train_time_s": float(sum(r["time_s"] for r in rows)),
                  "molecules_per_s": float(sum(r["molecules"] for r in rows) /
                                           max(sum(r["time_s"] for r in rows), 1e-9)),
                  "peak_rss_mb": peak_rss_mb(), "corpus": corpus.summary(), "config": cfg.to_dict(),
                  "runtime": runtime_info(device)}
        return runs.publish(unit, rows, result)

    return runs.run_units([unit], fn, resume, f"pretrain {cfg.method}", what="run", show_progress=False,
                          restart_damaged=restart_damaged, executor=executor)[0]


def _encoder_meta(cfg: PretrainConfig, corpus: MoleculeCorpus, rows: list[dict]) -> dict:
    return {"method": cfg.method, "epochs": len(rows),
            "molecules_seen": int(sum(r["molecules"] for r in rows)),
            "corpus": corpus.summary(), "pretrain_config": cfg.to_dict()}
