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
from pathlib import Path

import torch

from .. import paths, runs
from ..augment import MoleculeViewGenerator, RandomAugmentor
from ..data.corpus import MoleculeCorpus
from ..data.datasets import fingerprint
from ..data.molecules import VOCAB
from ..devices import resolve_device, runtime_info
from ..errors import DataError
from ..models.gin import ContrastModel
from ..models.mol_gin import MolEncoder, MolNodeScorer, save_encoder
from ..train import GraphCLStrategy, NaiveStrategy
from ..train.pretrain import ChunkedTrainer, peak_rss_mb
from .configs import DEFAULT_CORPUS, METHODS, PretrainConfig  # noqa: F401 (re-exported)

log = logging.getLogger(__name__)


def _upgrade_fingerprint(unit: runs.Unit, current: list) -> None:
    """Carry a run folder recorded before corpora were named by content (name, size and
    modification time) over to the content digest, so that ``--resume`` keeps it: only where
    the name and size match, with a warning (a same-size edit of the corpus is then not caught)."""
    for folder in (unit.dir, unit.partial):
        path = folder / "config.json"
        if not path.is_file():
            continue
        old = runs.read_json(path)
        fp = old.get("corpus_fingerprint")
        if isinstance(fp, list) and len(fp) == 3 and isinstance(fp[2], int) and fp[:2] == current[:2]:
            runs.atomic_write_json(path, {**old, "corpus_fingerprint": current})
            log.warning("%s: recorded the corpus by its modification time (before autogcl named corpora by "
                        "content); same name and size, so it now records the content digest and continues",
                        folder)


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
    runs.check_run_folder(out, "pre-training")
    device = resolve_device(device)
    corpus_path = resolve_corpus(cfg.corpus, data_root)
    cfg = PretrainConfig.from_dict({**cfg.to_dict(), "corpus": str(corpus_path),
                                    "corpus_fingerprint": fingerprint([corpus_path])[0]})
    unit = runs.Unit(dir=out, config=cfg.to_dict(), seed=cfg.seed, label=f"pretrain {cfg.method}")
    if resume:  # only a run to be continued is carried over; otherwise the folder is left as found
        _upgrade_fingerprint(unit, cfg.corpus_fingerprint)

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
