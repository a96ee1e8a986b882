"""Transfer pre-training (AutoGCL paper, Section 4 and Table 4; docs/method.md): the library's
:class:`autogcl.api.pretrain.MoleculePretrainer` (the naive strategy with learnable generators
on atom-level features, or GraphCL's random augmentations) run as one unit in a run folder.

What is the protocol's: the corpus (the given file, else the MOSES file of the data roots,
recorded by its content), the run folder (one unit, locked, resumed with ``resume``, its
checkpoint in the unit's work folder) and its outputs: ``encoder.pt`` (written after every
epoch; the encoder to fine-tune), ``corpus.json``, ``metrics.csv`` and ``result.json``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from .. import atomic, paths, units
from ..api.pretrain import MoleculePretrainer
from ..data.datasets import fingerprint
from ..devices import engine_of, resolve_device, runtime_info
from ..errors import DataError
from ..models.mol_gin import save_encoder
from ..train import distributed
from ..train.pretrain import peak_rss_mb
from .configs import DEFAULT_CORPUS, METHODS, PretrainConfig  # noqa: F401 (re-exported)

log = logging.getLogger(__name__)


def _upgrade_fingerprint(unit: units.Unit, current: list) -> None:
    """Carry a run folder recorded before corpora were named by content (name, size and
    modification time) over to the content digest, so that ``--resume`` keeps it: only where
    the name and size match, with a warning (a same-size edit of the corpus is then not caught)."""
    for folder in (unit.dir, unit.partial):
        path = folder / "config.json"
        if not path.is_file():
            continue
        old = atomic.read_json(path)
        fp = old.get("corpus_fingerprint")
        if isinstance(fp, list) and len(fp) == 3 and isinstance(fp[2], int) and fp[:2] == current[:2]:
            atomic.atomic_write_json(path, {**old, "corpus_fingerprint": current})
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
    """The strategy of a run of ``cfg`` (:meth:`autogcl.api.pretrain.MoleculePretrainer.build_strategy`)."""
    return MoleculePretrainer(**cfg.pretrainer_options()).build_strategy()


def pretrain(cfg: PretrainConfig, out: Path, data_root=None, resume: bool = False,
             workers: int | None = None, show_progress: bool | None = None,
             max_steps: int | None = None, device="cpu", restart_damaged: bool = False, executor=None) -> dict:
    """Pre-train into the run folder ``out`` (one long unit, through :func:`autogcl.units.run_units`
    on ``executor``: by default here); returns the result.

    Started by ``torchrun`` as several processes (``torchrun --nproc_per_node N -m autogcl
    transfer pretrain ...``, or a script of yours calling this function), it trains
    data-parallel (:mod:`autogcl.train.distributed`): ``batch_size`` is the global batch,
    rank 0 writes the run folder, and ``result.json`` records ``world_size``.

    ``max_steps`` stops after that many optimizer steps in total (for smoke tests; the run
    is then finished early and says so)."""
    out = Path(out)
    ctx = distributed.init(device) if distributed.launched() else None
    if ctx is not None:
        distributed.check_batch(cfg.batch_size, ctx)
        device = engine_of(device).on(ctx.device)  # its precision and kernels too
        if ctx.is_main:
            units.check_run_folder(out, "pre-training")
    else:
        units.check_run_folder(out, "pre-training")
    engine = engine_of(device)  # the device, and how training computes on it
    resolve_device(engine)  # a device this machine lacks is an error before any work
    corpus_path = resolve_corpus(cfg.corpus, data_root)
    cfg = PretrainConfig.from_dict({**cfg.to_dict(), "corpus": str(corpus_path),
                                    "corpus_fingerprint": fingerprint([corpus_path])[0]})
    unit = units.Unit(dir=out, config=cfg.to_dict(), seed=cfg.seed, label=f"pretrain {cfg.method}")
    if resume and (ctx is None or ctx.is_main):  # only a run to be continued is carried over
        _upgrade_fingerprint(unit, cfg.corpus_fingerprint)

    main = ctx is None or ctx.is_main

    def fn(unit):
        # read in the process that trains (a Ray worker sets its own torch threads), not the driver
        runtime = {**runtime_info(engine), **({"world_size": ctx.world_size} if ctx is not None else {})}
        work = units.start_work(unit, runtime) if main else unit.partial
        pretrainer = MoleculePretrainer(**cfg.pretrainer_options())

        def write_encoder(rows, encoder):
            save_encoder(encoder, work / "encoder.pt", _encoder_meta(cfg, pretrainer.corpus_summary, rows))

        pretrainer.fit(corpus_path, work, device=engine, workers=workers, show_progress=show_progress,
                       max_steps=max_steps, on_epoch=write_encoder)
        rows, corpus = pretrainer.history, pretrainer.corpus_summary
        if main:
            atomic.atomic_write_json(work / "corpus.json", corpus)
        result = {"protocol": "pretrain", "method": cfg.method, "seed": cfg.seed,
                  "epochs": len(rows), "stopped_early": pretrainer.stopped_early,
                  "molecules_seen": int(sum(r["molecules"] for r in rows)),
                  "steps": int(sum(r["steps"] for r in rows)),
                  "train_time_s": float(sum(r["time_s"] for r in rows)),
                  "molecules_per_s": float(sum(r["molecules"] for r in rows) /
                                           max(sum(r["time_s"] for r in rows), 1e-9)),
                  "peak_rss_mb": peak_rss_mb(), "corpus": corpus, "config": cfg.to_dict(),
                  "world_size": 1 if ctx is None else ctx.world_size, "runtime": runtime}
        return units.publish(unit, rows, result) if main else result

    if ctx is not None:
        return _run_distributed(unit, fn, resume, restart_damaged, ctx)
    return units.run_units([unit], fn, resume, f"pretrain {cfg.method}", what="run", show_progress=False,
                          restart_damaged=restart_damaged, executor=executor, lock_folder=False)[0]


def _run_distributed(unit: units.Unit, fn, resume: bool, restart_damaged: bool, ctx) -> dict:
    """The one unit of a pre-training run on every process of a distributed run: rank 0 checks
    and locks the run folder and tells the others whether to train; all train; rank 0 publishes."""
    import shutil

    from ..errors import AutoGCLError, Preempted

    decision = None
    if ctx.is_main:
        try:
            paths.check_writable(unit.dir.parent)
            units.check_resumable([unit], resume)
            if not unit.finished and not resume and unit.partial.exists():
                shutil.rmtree(unit.partial)
            decision = "finished" if unit.finished else "run"
        except AutoGCLError as exc:
            decision = ("error", str(exc))
    decision = ctx.broadcast(decision)
    if isinstance(decision, tuple):  # every process agreed on it: leave the group together
        distributed.shutdown()
        raise DataError(decision[1]) if ctx.is_main else SystemExit(2)
    if decision == "run":
        try:
            if ctx.is_main:
                units.run_one(unit, fn, restart_damaged)  # holds the unit's lock while it trains
            else:
                fn(unit)
        except Preempted:  # every process stopped at the same step: leave the group cleanly
            distributed.shutdown()
            raise
    ctx.barrier()  # rank 0 has published
    return unit.result()


def _encoder_meta(cfg: PretrainConfig, corpus: dict, rows: list[dict]) -> dict:
    return {"method": cfg.method, "epochs": len(rows),
            "molecules_seen": int(sum(r["molecules"] for r in rows)),
            "corpus": corpus, "pretrain_config": cfg.to_dict()}
