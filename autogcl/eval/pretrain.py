"""Transfer pre-training (SPEC 3.3): contrastive training of the molecule GIN on an
unlabeled SMILES corpus, with the naive strategy (learnable generators on atom-level
features) or GraphCL's random augmentations.

The corpus is read chunk by chunk (:class:`autogcl.data.corpus.MoleculeCorpus`), so memory
holds one chunk. A checkpoint (weights, optimizer, RNG states, position in the epoch) is
written after every chunk and every epoch; ``resume`` continues an interrupted run from
it. The run folder ends with ``encoder.pt`` (the encoder to fine-tune), ``metrics.csv``
and ``result.json``.
"""

from __future__ import annotations

import logging
import resource
import shutil
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
from torch_geometric.loader import DataLoader
from tqdm.auto import tqdm

from .. import paths, runs
from ..augment import MoleculeViewGenerator, RandomAugmentor
from ..data.corpus import MoleculeCorpus
from ..data.datasets import fingerprint
from ..errors import ConfigError, DataError
from ..models.gin import ContrastModel
from ..models.mol_gin import MolEncoder, MolNodeScorer, save_encoder
from ..train import GraphCLStrategy, NaiveStrategy

log = logging.getLogger(__name__)

METHODS = ("autogcl", "graphcl")
DEFAULT_CORPUS = "pretrain/moses_train.csv.gz"


@dataclass
class PretrainConfig:
    corpus: str = ""  # SMILES file; '' = <data root>/pretrain/moses_train.csv.gz
    corpus_fingerprint: list | None = None  # name, size, mtime: a replaced file is never resumed
    smiles_col: str | None = None
    method: str = "autogcl"
    epochs: int = 20
    batch_size: int = 256
    lr: float = 0.001
    max_molecules: int | None = None
    chunk_size: int = 50_000
    dim: int = 300
    num_layers: int = 5
    gen_hidden: int = 128
    gen_layers: int = 2
    add_mask: bool = True
    dropped: str = "remove"
    tau: float | None = None  # None: 0.5 for autogcl (released), 0.1 for graphcl (its chem code)
    cl_variant: str = "simclr"
    sim_kind: str = "cosine"
    sim_weight: float = 0.0
    view_sampling: str = "replacement"
    aug: str = "random4"
    aug_ratio: float = 0.2
    seed: int = 0

    def __post_init__(self):
        if self.method not in METHODS:
            raise ConfigError(f"unknown pre-training method {self.method!r}; choose from {METHODS}")
        if self.epochs < 1 or self.batch_size < 2:
            raise ConfigError("epochs must be >= 1 and batch size >= 2 (contrastive loss)")
        if self.aug not in RandomAugmentor.names:
            raise ConfigError(f"unknown augmentation {self.aug!r}; choose from {', '.join(RandomAugmentor.names)}")
        if not 0.0 <= self.aug_ratio < 1.0:
            raise ConfigError(f"augmentation ratio must be in [0, 1), got {self.aug_ratio}")
        if self.chunk_size < 2 or (self.max_molecules is not None and self.max_molecules < 2):
            raise ConfigError("--chunk-size and --max-molecules must be at least 2")

    @property
    def temperature(self) -> float:
        if self.tau is not None:
            return self.tau
        return 0.5 if self.method == "autogcl" else 0.1

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> PretrainConfig:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


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
    encoder = MolEncoder(cfg.dim, cfg.num_layers, dropout=0.0)
    model = ContrastModel(encoder)
    if cfg.method == "autogcl":
        num_ops = 3 if cfg.add_mask else 2
        gens = [MoleculeViewGenerator(MolNodeScorer(num_ops, cfg.gen_hidden, cfg.gen_layers),
                                      add_mask=cfg.add_mask, dropped=cfg.dropped) for _ in range(2)]
        params = list(model.parameters()) + list(gens[0].parameters()) + list(gens[1].parameters())
        opt = torch.optim.Adam(params, lr=cfg.lr)
        return NaiveStrategy(model, gens[0], gens[1], opt, tau=cfg.temperature,
                             cl_variant=cfg.cl_variant, sim_kind=cfg.sim_kind,
                             sim_weight=cfg.sim_weight, view_sampling=cfg.view_sampling)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    aug1, aug2 = RandomAugmentor(cfg.aug, cfg.aug_ratio), RandomAugmentor(cfg.aug, cfg.aug_ratio)
    return GraphCLStrategy(model, aug1, aug2, opt, tau=cfg.temperature, cl_variant=cfg.cl_variant)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def pretrain(cfg: PretrainConfig, out: Path, data_root=None, resume: bool = False,
             workers: int | None = None, show_progress: bool | None = None,
             max_steps: int | None = None) -> dict:
    """Pre-train into the run folder ``out``; returns the result.

    ``max_steps`` stops after that many optimizer steps in total (for smoke tests; the run
    is then finished early and says so)."""
    out = Path(out)
    corpus_path = resolve_corpus(cfg.corpus, data_root)
    cfg = PretrainConfig.from_dict({**cfg.to_dict(), "corpus": str(corpus_path),
                                    "corpus_fingerprint": fingerprint([corpus_path])[0]})
    unit = runs.Unit(dir=out, config=cfg.to_dict(), seed=cfg.seed, label=f"pretrain {cfg.method}")
    runs.check_resumable([unit], resume)
    if unit.finished:
        return unit.result()
    work = unit.partial
    if work.exists() and not resume:
        shutil.rmtree(work)
    runs.start_work(unit)

    corpus = MoleculeCorpus(corpus_path, cfg.smiles_col, cfg.max_molecules, cfg.chunk_size,
                            workers=workers, progress=show_progress is not False)
    chunks = corpus.prepare()
    runs.atomic_write_json(work / "corpus.json", corpus.summary())
    disable = None if show_progress is None else not show_progress

    loader_gen = runs.seed_everything(cfg.seed)
    strategy = build_strategy(cfg)
    ckpt = work / "checkpoint.pt"
    state = runs.load_checkpoint(ckpt, strategy.modules(), strategy.opt, loader_gen)
    if state is None:
        state = {"rows": [], "epoch": 1, "pos": 0, "order": None, "acc": None}
    else:
        log.info("pretrain: resuming at epoch %d, chunk %d of %d", state["epoch"], state["pos"] + 1, len(chunks))
    rows, epoch, pos, order, acc = (state[k] for k in ("rows", "epoch", "pos", "order", "acc"))

    def save_ckpt():
        runs.save_checkpoint(ckpt, strategy.modules(), strategy.opt, loader_gen, rows=rows, epoch=epoch,
                             pos=pos, order=order, acc=acc)

    steps = sum(r["steps"] for r in rows) + (acc["steps"] if acc else 0)
    stopped_early = False
    epochs_bar = tqdm(total=cfg.epochs, initial=epoch - 1, desc=f"pretrain {cfg.method}", unit="epoch",
                      disable=disable)
    while epoch <= cfg.epochs and not stopped_early:
        if order is None:
            order = torch.randperm(len(chunks), generator=loader_gen).tolist()
            acc = {"molecules": 0, "steps": 0, "time_s": 0.0, "sums": {}}
        while pos < len(order):
            ds = corpus.load(order[pos])
            # never a last batch of one molecule: nothing to contrast, and BatchNorm needs 2 nodes
            drop = len(ds) > cfg.batch_size or len(ds) % cfg.batch_size == 1
            loader = DataLoader(ds, batch_size=cfg.batch_size, shuffle=True, drop_last=drop, generator=loader_gen)
            count = {"steps": 0, "molecules": 0}
            limit = None if max_steps is None else max_steps - steps
            bar = tqdm(_counted(loader, count, limit), total=len(loader) if limit is None else min(limit, len(loader)),
                       desc=f"epoch {epoch} chunk {pos + 1}/{len(order)}", unit="batch", leave=False,
                       disable=disable)
            t0 = time.perf_counter()
            stats = strategy.train_epoch(bar, epoch)
            n_steps, n_mol = count["steps"], count["molecules"]
            acc["molecules"] += n_mol
            acc["steps"] += n_steps
            acc["time_s"] += time.perf_counter() - t0
            for k in strategy.terms:
                if k in stats and stats[k] == stats[k]:
                    acc["sums"][k] = acc["sums"].get(k, 0.0) + stats[k] * n_mol
            steps += n_steps
            pos += 1
            save_ckpt()
            if max_steps is not None and steps >= max_steps:
                stopped_early = True
                break
        row = {"epoch": epoch, "molecules": acc["molecules"], "steps": acc["steps"],
               "time_s": acc["time_s"], "molecules_per_s": acc["molecules"] / max(acc["time_s"], 1e-9),
               **{k: v / max(acc["molecules"], 1) for k, v in acc["sums"].items()},
               "peak_rss_mb": _peak_rss_mb()}
        rows.append(row)
        log.info("pretrain epoch %d: %s", epoch, {k: round(v, 4) for k, v in row.items()
                                                   if isinstance(v, float)})
        epochs_bar.update(1)
        epochs_bar.set_postfix(loss=f"{row.get('loss', float('nan')):.3f}")
        epoch, pos, order, acc = epoch + 1, 0, None, None
        save_ckpt()
        save_encoder(strategy.model.encoder, work / "encoder.pt", _encoder_meta(cfg, corpus, rows))
    epochs_bar.close()

    result = {"protocol": "pretrain", "method": cfg.method, "seed": cfg.seed,
              "epochs": len(rows), "stopped_early": stopped_early,
              "molecules_seen": int(sum(r["molecules"] for r in rows)),
              "steps": int(sum(r["steps"] for r in rows)),
              "train_time_s": float(sum(r["time_s"] for r in rows)),
              "molecules_per_s": float(sum(r["molecules"] for r in rows) /
                                       max(sum(r["time_s"] for r in rows), 1e-9)),
              "peak_rss_mb": _peak_rss_mb(), "corpus": corpus.summary(), "config": cfg.to_dict()}
    return runs.publish(unit, rows, result)


def _counted(loader, count: dict, limit: int | None):
    """Yield the loader's batches (at most ``limit``), counting steps and molecules."""
    for batch in loader:
        if limit is not None and count["steps"] >= limit:
            return
        count["steps"] += 1
        count["molecules"] += int(batch.num_graphs)
        yield batch


def _encoder_meta(cfg: PretrainConfig, corpus: MoleculeCorpus, rows: list[dict]) -> dict:
    return {"method": cfg.method, "epochs": len(rows),
            "molecules_seen": int(sum(r["molecules"] for r in rows)),
            "corpus": corpus.summary(), "pretrain_config": cfg.to_dict()}
