"""Command line: ``autogcl unsupervised | semi | transfer | report | visualize | ablate``.

A thin layer over the library: every protocol option is defined once, in its config
dataclass (:mod:`autogcl.protocols`), and how a sweep runs in :class:`autogcl.config.RunOptions`;
the parsers below are generated from them (:func:`autogcl.config.add_options`), so names,
defaults, choices, help and validation are the same from Python and here.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from . import __version__
from .config import comma_list
from .errors import AutoGCLError, ConfigError, DataError, write_failure

log = logging.getLogger("autogcl")

#: RunOptions each command takes, with per-command defaults
SWEEP = ("seeds", "first_seed", "out", "resume", "restart_damaged", "device", "precision", "compile", "deterministic",
         "data_root", "download", "no_progress", "log_dir", "tracking",
         "executor", "ray_address", "cpus_per_unit", "gpus_per_unit")

#: the commands and their one-line help; a command's options (and the modules they come from)
#: are built only when it is the one invoked, so ``autogcl --help`` imports no torch
HELP = {
    "unsupervised": "contrastive pre-training + SVM evaluation (paper Table 2)",
    "semi": "semi-supervised protocol with a ResGCN classifier (paper Table 3)",
    "report": "tables of finished runs beside the published figures",
    "visualize": "figures: generated views, learning curves, t-SNE of embeddings",
    "ablate": "augmentation ablations of the GraphCL rows",
    "transfer": "molecules: contrastive pre-training and MoleculeNet fine-tuning (paper Table 4)",
    "embed": "graph embeddings of a TU dataset, a SMILES file or a saved dataset, to .npy or .csv",
    "reproduce": "run the paper's cells that have no committed run yet (docs/results/gpu_queue.md)",
    "tune": "search an estimator's configuration on validation folds (Ray Tune, Optuna TPE, ASHA)",
    "property": "predict a property of your molecules: fit autogcl.PropertyPredictor on a CSV or SDF file, predict",
}


def _parser(sub, name: str, help: str, description: str):
    return sub.add_parser(name, help=help, description=description,
                          formatter_class=argparse.ArgumentDefaultsHelpFormatter)


def _run_options(p, only, **defaults) -> None:
    from .config import RunOptions, add_options

    add_options(p, RunOptions, only=only, defaults=defaults)


def _run(args):
    from .config import RunOptions, from_args

    run = from_args(RunOptions, args)
    run.export_log_dir()
    return run


def add_unsupervised(sub) -> None:
    from .config import add_options
    from .protocols.configs import UnsupervisedConfig

    p = _parser(sub, "unsupervised", HELP["unsupervised"],
                "Unsupervised protocol: train the GIN encoder with learnable view generators "
                "(autogcl) or random augmentations (graphcl) on the whole dataset, score the embeddings "
                "with an RBF SVM (10-fold CV, C by inner 5-fold search) at the evaluation epochs, repeat "
                "over seeds, and print mean ± std under both selections beside the published figure.")
    add_options(p, UnsupervisedConfig)
    _run_options(p, SWEEP + ("jobs", "save_embeddings", "grid"), out="runs/unsupervised")
    p.set_defaults(func=cmd_protocol)


def _protocol(args):
    """The :class:`autogcl.protocols.base.Protocol` of the parsed command (imported only now: it
    pulls in torch and the models)."""
    if args.command == "unsupervised":
        from .protocols.unsupervised import PROTOCOL
    elif args.command == "semi":
        from .protocols.semi import PROTOCOL
    elif args.command == "transfer":
        from .protocols.transfer import PROTOCOL
    elif args.command == "ablate":
        from .protocols.ablation import PROTOCOL
    else:
        raise ConfigError(f"{args.command} is not a sweep protocol")
    return PROTOCOL


def cmd_protocol(args) -> int:
    """The one handler of every sweep protocol (unsupervised, semi, transfer finetune, ablate): its
    configs from the command line (validated) and, right after, the lock of every sweep it writes,
    before anything heavy is imported or any data read (a second writer of the same sweeps stops
    here, naming the holder); then the protocol, the data, every config's units (at each grid
    point) in one pool of units on the executor, and the tables."""
    from .locks import holding_all
    from .protocols.configs import SWEEP_CONFIGS

    if not str(args.out).strip():
        raise ConfigError("--out is an empty string; name the run folder (. for the current one)")
    cfgs = SWEEP_CONFIGS[args.command].from_command(args)  # torch-free
    with holding_all(Path(args.out), [c.lock_key(args) for c in cfgs]):
        return _run_protocol(args, cfgs)


def _run_protocol(args, cfgs) -> int:
    """:func:`cmd_protocol` once it holds the locks."""
    from .protocols.grid import expand, grid_out, write_reports
    from .protocols.spread import SPREAD
    from .paths import check_writable
    from .units import run_sweeps

    proto = _protocol(args)
    run = _run(args)
    for c in cfgs:
        expand(c, run.grid)  # validated before any data is read
    check_writable(Path(run.out))
    executor = run.make_executor()  # a bad --ray-address is an error before any data is read
    data, cfgs = proto.load(cfgs, run)
    planned = [(c, name, proto.plan(pc, data, grid_out(run.out, name), run))
               for c in cfgs for name, pc in expand(c, run.grid)]
    points = [(c, name) for c, name, ss in planned for _ in ss]  # each sweep's config and grid point
    sweeps = [s for _, _, ss in planned for s in ss]
    summaries = run_sweeps(sweeps, run.resume, proto.desc(cfgs, data, run), proto.unit, run.progress,
                           run.restart_damaged, executor)
    if run.grid:
        print(write_reports(run.out, [(proto.title(c, s), n, sw, s) for (c, n), sw, s in zip(points, sweeps, summaries)]))
    else:
        print(proto.table(summaries, cfgs))
        if proto.name in SPREAD:
            print(f"± is the {SPREAD[proto.name]}")
    tail = proto.report(cfgs, summaries, run)  # may write files of the run (ablation.md): still locked
    if tail:
        print(tail)
    return 0


def add_semi(sub) -> None:
    from .config import add_options
    from .protocols.configs import ROWS, SemiConfig

    p = _parser(sub, "semi", HELP["semi"],
                "Semi-supervised protocol: 10-fold stratified CV (fold seed 12345); in each fold "
                "a labeled 10% of the data drawn from the training part, the rest of it unlabeled, the "
                "previous fold as validation (for the val selection) and the test fold. Rows: "
                + "; ".join(f"{k}: {v}" for k, v in ROWS.items()) + ".")
    add_options(p, SemiConfig)
    _run_options(p, SWEEP + ("fold_limit", "save_embeddings", "grid"), seeds=1, out="runs/semi")
    p.set_defaults(func=cmd_protocol)


def add_report(sub) -> None:
    p = sub.add_parser(
        "report",
        help=HELP["report"],
        description="Collect every summary.json under the given run directories and print "
        "Markdown tables (unsupervised; semi-supervised rows x datasets) with mean ± std under "
        "both selections and the published figures; also written to --out.",
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--out", default=None, help="Markdown file to write (default: RUN_DIR/report.md of the first)")
    p.set_defaults(func=cmd_report)


def _folders(names: list[str], what: str = "RUN_DIR") -> list[Path]:
    """The folders named on the command line; an empty name is an error (it is not ``.``)."""
    if any(not n.strip() for n in names):
        raise ConfigError(f"{what} is an empty string; name a folder (. for the current one)")
    return [Path(n) for n in names]


def _out_file(value: str | None, default: Path, what: str) -> Path:
    """The file ``--out`` names (``default`` when it is not given); an empty name or a folder is
    an error."""
    if value is None:
        return default
    if not value.strip():
        raise ConfigError(f"--out is an empty string; name the {what} to write")
    out = Path(value)
    if out.is_dir():
        raise ConfigError(f"--out {out} is a folder; name the {what} to write (e.g. {out / default.name})")
    return out


def cmd_report(args) -> int:
    from .protocols.report import collect, render
    from .atomic import atomic_write_text

    dirs = _folders(args.run_dirs)
    out = _out_file(args.out, (dirs[0].parent if dirs[0].is_file() else dirs[0]) / "report.md", "file")
    summaries = collect(dirs)
    text = render(summaries)
    print(text)
    try:
        atomic_write_text(out, text + "\n")
    except OSError as exc:
        raise write_failure(exc, out, "the report to ") from exc
    print(f"\nwritten to {out}", file=sys.stderr)
    return 0


def add_visualize(sub) -> None:
    from .config import add_options
    from .protocols.configs import ViewsConfig

    p = sub.add_parser("visualize", help=HELP["visualize"],
                       description="Figures of finished runs (PNG and SVG).")
    vs = p.add_subparsers(dest="figure", metavar="FIGURE")
    vs.required = True
    c = vs.add_parser("curves", help="loss terms and accuracies per epoch, runs overlaid",
                      description="Every loss term and accuracy per epoch of each run (mean ± std over its "
                      "seeds and folds), the runs overlaid: e.g. a naive and a joint semi-supervised run.")
    c.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="a row/method folder, a seed or a unit")
    c.add_argument("--labels", default=None, help="comma-separated legend labels (default: folder names)")
    c.add_argument("--phase", default="train", choices=["train", "pretrain"],
                   help="semi-supervised rows with pre-training have both phases")
    c.add_argument("--out", default=None, help="output file (default RUN_DIR/curves.png of the first)")
    c.set_defaults(func=cmd_curves)
    t = vs.add_parser("tsne", help="t-SNE of saved embeddings at chosen epochs",
                      description="t-SNE of the graph embeddings a run saved (--save-embeddings), one row "
                      "per unit folder, one column per epoch, coloured by class.")
    t.add_argument("run_dirs", nargs="+", metavar="UNIT_DIR", help="folders holding embeddings_epoch*.npz")
    t.add_argument("--epochs", default=None, type=comma_list(int), help="comma-separated epochs (default: all saved)")
    t.add_argument("--labels", default=None)
    t.add_argument("--out", default=None, help="output file (default UNIT_DIR/tsne.png of the first)")
    t.set_defaults(func=cmd_tsne)
    v = _parser(
        vs, "views", "what the learnable generators do to graphs",
        "Train two learnable view generators jointly with a classifier "
        "(L_cls(x, x1, x2) + lambda L_sim, mask operation on; after --warmup-epochs of the classifier "
        "alone) until the classifier's accuracy on generated views of a validation part of the training "
        "graphs reaches --target-acc (or --max-epochs), then draw, for several test graphs, the "
        "original, AutoGCL view 1 and view 2, and a GraphCL node-drop view. MNIST (default) uses "
        "superpixel graphs of the offline MNIST images, drawn at their image positions; a TU "
        "dataset is drawn with a graph layout. With --run UNIT_DIR, the saved generators of a "
        "finished unsupervised unit are drawn instead (no training).")
    add_options(v, ViewsConfig)
    _run_options(v, ("data_root", "download", "out", "resume", "restart_damaged", "no_progress", "log_dir", "tracking", "device",
                     "deterministic", "run",
                     "examples"), out=None)
    v.set_defaults(func=cmd_views)


def _labels(args, n: int):
    """The ``--labels`` of ``n`` figure rows (one per folder), or None for the folder names."""
    if not args.labels:
        return None
    labels = [s.strip() for s in args.labels.split(",")]
    if len(labels) != n:
        raise ConfigError(f"--labels gives {len(labels)} label(s) for {n} folder(s); give one per folder")
    return labels


def cmd_curves(args) -> int:
    from .viz.curves import plot_curves

    dirs = _folders(args.run_dirs)
    missing = [str(d) for d in dirs if not d.exists()]
    if missing:
        raise AutoGCLError(f"no such run folder: {', '.join(missing)}")
    labels = _labels(args, len(dirs))
    out = _out_file(args.out, (dirs[0].parent if dirs[0].is_file() else dirs[0]) / "curves.png", "figure file")
    try:
        written = plot_curves(dirs, out, labels, args.phase)
    except ValueError as exc:
        raise AutoGCLError(str(exc)) from exc
    print("\n".join(map(str, written)))
    return 0


def cmd_tsne(args) -> int:
    from .viz.tsne import plot_tsne

    dirs = _folders(args.run_dirs, "UNIT_DIR")
    missing = [str(d) for d in dirs if not d.exists()]
    if missing:
        raise AutoGCLError(f"no such unit folder: {', '.join(missing)}")
    files = [str(d) for d in dirs if not d.is_dir()]
    if files:
        raise AutoGCLError(f"not a folder: {', '.join(files)}; name the unit folders that hold embeddings_epoch*.npz")
    labels = _labels(args, len(dirs))
    epochs = args.epochs or None
    out = _out_file(args.out, dirs[0] / "tsne.png", "figure file")
    try:
        written = plot_tsne(dirs, out, epochs, labels)
    except ValueError as exc:
        raise AutoGCLError(str(exc)) from exc
    print("\n".join(map(str, written)))
    return 0


def cmd_views(args) -> int:
    import torch

    from .config import from_args
    from .protocols import views as V
    from .paths import check_writable

    run = _run(args)
    if run.run is not None:  # an empty --run is an error, not "train instead"
        if run.resume or run.restart_damaged:
            raise ConfigError("--resume and --restart-damaged continue a views training run; --run draws a "
                              "finished unit's generators and trains nothing")
        return _views_from_run(args, run)
    cfg = from_args(V.ViewsConfig, args)
    out = Path(run.out) if run.out else Path("runs/views") / cfg.dataset
    check_writable(out)  # before training
    torch.manual_seed(cfg.seed)
    res = V.run(cfg, out, run.data_root, run.examples, show_progress=run.progress, device=run.engine,
                download=run.fetch, resume=run.resume, restart_damaged=run.restart_damaged)
    warm = f" (+ {res['warmup_epochs']} warm-up)" if res["warmup_epochs"] else ""
    print(f"accuracy on generated views: {100 * res['val_view_acc']:.1f}% on validation graphs after "
          f"{res['epochs']} epochs{warm} (target {100 * cfg.target_acc:.0f}%"
          f"{'' if res['target_reached'] else ', NOT reached'}); on test graphs: "
          f"{100 * res['view_acc']:.1f}% (views), {100 * res['test_acc']:.1f}% (original graphs)")
    for name, k in res.get("kept_shares", {}).items():
        print(f"{name:24s} keeps {100 * k['high_intensity_kept']:5.1f}% of high-intensity nodes, "
              f"{100 * k['other_kept']:5.1f}% of the others ({100 * k['all_kept']:.1f}% of all)")
    print("\n".join(res["figures"]))
    return 0


def _views_from_run(args, run) -> int:
    from .api import AutoGCL, load
    from .data import load_tu
    from .protocols import views as V
    from .protocols.unsupervised import UnsupervisedConfig
    from .atomic import read_json
    from .paths import check_writable

    if not run.run.strip():
        raise ConfigError("--run is an empty string; name the folder of a finished unsupervised unit")
    unit = Path(run.run)
    if not unit.is_dir():
        raise AutoGCLError(f"--run {unit}: no such folder (name the folder of a finished unsupervised unit, "
                           "e.g. runs/unsupervised/MUTAG-autogcl/seed0)")
    if not (unit / "model.pt").is_file() or not (unit / "config.json").is_file():
        raise AutoGCLError(f"{unit} is not a finished unit (needs model.pt and config.json)")
    stored = read_json(unit / "config.json")
    try:
        ucfg = UnsupervisedConfig.from_dict(stored)
    except (ConfigError, TypeError) as exc:
        raise DataError(f"{unit / 'config.json'}: not the configuration of an unsupervised unit ({exc})") from exc
    if ucfg.method != "autogcl":
        raise AutoGCLError(f"{unit} was trained with {ucfg.method}: it has no learnable generators")
    ds = load_tu(ucfg.dataset, run.data_root, ucfg.feat, download=run.fetch)
    model = load(unit / "model.pt")
    if not isinstance(model, AutoGCL):
        raise AutoGCLError(f"{unit / 'model.pt'} holds a {type(model).__name__} model: no learnable generators")
    cfg = V.ViewsConfig(dataset=ds.name, seed=args.seed, drop_ratio=args.drop_ratio)
    out = Path(run.out) if run.out else unit / "views"
    check_writable(out)
    written = V.draw(cfg, [model.gen1, model.gen2], ds, out / "views.png", run.examples,
                     title=f"{ds.name}: views of the generators saved in {unit}")
    print("\n".join(map(str, written)))
    return 0


def add_ablate(sub) -> None:
    from .config import add_options
    from .protocols.configs import AblationConfig

    p = sub.add_parser("ablate", help=HELP["ablate"])
    ks = p.add_subparsers(dest="ablation", metavar="ABLATION")
    ks.required = True
    a = _parser(
        ks, "graphcl-aug", "GraphCL with each augmentation alone and at several ratios",
        "Run a semi-supervised GraphCL row with each GraphCL augmentation alone (ratio "
        "0.2), and with one augmentation at several ratios; print both tables in the shape of the "
        "paper's appendix tables (cells: val / test_max accuracy) and write them to OUT/ablation.md.")
    add_options(a, AblationConfig)
    _run_options(a, SWEEP + ("fold_limit",), seeds=1, out="runs/ablate")
    a.set_defaults(func=cmd_protocol)


def add_transfer(sub) -> None:
    from .config import add_options
    from .protocols.configs import FinetuneConfig, PretrainConfig

    p = sub.add_parser("transfer", help=HELP["transfer"],
                       description="Transfer learning on molecules: pre-train the molecule GIN on unlabeled "
                       "SMILES, then fine-tune it on labeled molecules with a scaffold split.")
    ts = p.add_subparsers(dest="step", metavar="STEP")
    ts.required = True
    pre = _parser(
        ts, "pretrain", "contrastive pre-training on a SMILES corpus",
        "Pre-train the molecule GIN (5 x 300, Hu et al. features) with learnable view "
        "generators (autogcl, the naive strategy) or GraphCL's random augmentations (graphcl) on a "
        "SMILES file, read in cached chunks. A checkpoint is written after every chunk and epoch "
        "and at SIGTERM or Ctrl-C (the last finished step); --resume continues an interrupted run. "
        "The run folder ends with encoder.pt, the file `autogcl transfer finetune --checkpoint` takes.")
    add_options(pre, PretrainConfig)
    _run_options(pre, ("workers", "data_root", "out", "resume", "restart_damaged", "no_progress", "log_dir",
                       "tracking", "device", "precision", "compile", "deterministic", "executor",
                       "ray_address", "cpus_per_unit", "gpus_per_unit"), out=None)
    pre.set_defaults(func=cmd_pretrain)

    ft = _parser(
        ts, "finetune", "fine-tune on MoleculeNet sets or your own CSV",
        "Fine-tune the molecule GIN (from --checkpoint, or from scratch for the No-pretrain "
        "row) on each dataset with a scaffold split 80/10/10, one autogcl.MoleculeEncoder.finetune per seed: "
        "masked BCE, ROC-AUC averaged over the tasks with both classes. Reports mean ± std over seeds under "
        "the val selection (test ROC-AUC at the epoch of best validation ROC-AUC) and test_max (best test "
        "ROC-AUC, the published protocol). A --csv with numeric label columns is regression (standardised "
        "targets, MSE): test RMSE, MAE and R² under val (lowest validation RMSE) and test_min (lowest test RMSE).")
    add_options(ft, FinetuneConfig)
    _run_options(ft, SWEEP + ("workers", "tag", "grid"), seeds=3, out="runs/transfer")
    ft.set_defaults(func=cmd_protocol)


def cmd_pretrain(args) -> int:
    from .config import from_args
    from .protocols.pretrain import PretrainConfig, pretrain

    run = _run(args)
    cfg = from_args(PretrainConfig, args)
    out = Path(run.out) if run.out else Path("runs/pretrain") / cfg.method
    res = pretrain(cfg, out, run.data_root, resume=run.resume, workers=run.workers, show_progress=run.progress,
                   device=run.engine, restart_damaged=run.restart_damaged, executor=run.make_executor())
    from .train.distributed import current, shutdown

    speaks = current() is None or current().is_main  # under torchrun, rank 0 speaks
    shutdown()  # under torchrun, leave the process group (NCCL warns of leaked resources otherwise)
    if not speaks:
        return 0
    print(f"pre-trained {res['method']} for {res['epochs']} epoch(s) on {res['corpus']['molecules']} molecules "
          f"({res['corpus']['skipped']} SMILES skipped): {res['molecules_per_s']:.0f} molecules/s, "
          f"peak memory {res['peak_rss_mb']:.0f} MB")
    print(f"encoder: {out / 'encoder.pt'}")
    return 0


def add_embed(sub) -> None:
    from dataclasses import fields

    from .config import DATA, add_options, help_group
    from .protocols.configs import EmbedConfig

    p = _parser(sub, "embed", HELP["embed"],
                "Embed graphs with a trained model and write one row per graph: a TU dataset with a model.pt "
                "of `autogcl unsupervised` (--model), a SMILES file with a molecule encoder (--encoder; default the "
                "shipped autogcl-moses-fullx1), or a saved list of PyG Data (.pt) with either. SMILES that do not "
                "parse are skipped and reported by file line; a .csv output keeps each row's input index.")
    help_group(p, DATA).add_argument("data", metavar="DATA",
                                     help=next(f for f in fields(EmbedConfig) if f.name == "data").metadata["help"])
    add_options(p, EmbedConfig)
    _run_options(p, ("device", "data_root", "download", "workers", "no_progress"))
    p.set_defaults(func=cmd_embed)


def cmd_embed(args) -> int:
    from .config import from_args
    from .protocols.embed import EmbedConfig, embed, write

    run = _run(args)
    cfg = from_args(EmbedConfig, args)
    res = embed(cfg, run.data_root, run.fetch, run.engine, run.workers, run.progress)
    if res.skipped:
        shown = "\n".join(f"  line {s['line']} (row {s['index']}): {s['smiles']!r}: {s['reason']}"
                           for s in res.skipped[:20])
        more = f"\n  ... and {len(res.skipped) - 20} more" if len(res.skipped) > 20 else ""
        print(f"skipped {len(res.skipped)} of {res.num_input} rows of {res.source}:\n{shown}{more}", file=sys.stderr)
    try:
        out = write(res, cfg.out)
    except OSError as exc:
        raise write_failure(exc, Path(cfg.out), "the embeddings to ") from exc
    print(f"{len(res.index)} x {res.emb.shape[1]} embeddings of {res.source} ({res.model}) written to {out}"
          + (f"; {len(res.skipped)} row(s) skipped" if res.skipped else ""))
    return 0


def add_property(sub) -> None:
    from dataclasses import fields

    from .config import add_options
    from .protocols.configs import PropertyConfig

    p = sub.add_parser("property", help=HELP["property"],
                       description="autogcl.PropertyPredictor from the command line: the fine-tuned shipped GIN "
                       "blended with a random forest on RDKit features (docs/molecules.md).")
    steps = p.add_subparsers(dest="step", metavar="STEP")
    steps.required = True
    fit = _parser(steps, "fit", "fit the predictor on labeled molecules and save it",
                  "Fit autogcl.PropertyPredictor on a SMILES CSV or an SDF file (the same call as Python's "
                  "PropertyPredictor(...).fit, with its defaults) and save it to --out.")
    fit.add_argument("data", metavar="DATA",
                     help=next(f for f in fields(PropertyConfig) if f.name == "data").metadata["help"])
    add_options(fit, PropertyConfig)
    _run_options(fit, ("device", "no_progress"))
    fit.set_defaults(func=cmd_property_fit)
    pred = _parser(steps, "predict", "predict with a saved predictor",
                   "Write one row per molecule of DATA (a SMILES CSV or .smi, or an SDF file) that parses: its "
                   "input row, line (SDF: record), SMILES, each task's prediction and the members' spread (std).")
    pred.add_argument("model", metavar="MODEL", help="the folder `autogcl property fit` wrote")
    pred.add_argument("data", metavar="DATA", help="the molecules to predict")
    pred.add_argument("--out", default="predictions.csv", help="the CSV to write")
    pred.add_argument("--smiles-col", default="smiles", help="SMILES column of a CSV")
    _run_options(pred, ("device",))
    pred.set_defaults(func=cmd_property_predict)


def cmd_property_fit(args) -> int:
    from .config import from_args
    from .protocols.configs import PropertyConfig
    from .protocols.property import fit

    run = _run(args)
    cfg = from_args(PropertyConfig, args)
    model, scores = fit(cfg, run.engine, run.progress)
    print(f"{model!r} saved to {cfg.out}" + (f"; {cfg.validation}: {scores}" if scores else ""))
    return 0


def cmd_property_predict(args) -> int:
    from .protocols.property import predict

    run = _run(args)
    out = predict(args.model, args.data, args.out, args.smiles_col, run.engine)
    print(f"predictions written to {out}")
    return 0


def add_reproduce(sub) -> None:
    from .config import add_options
    from .protocols.runner import ReproduceConfig

    p = _parser(sub, "reproduce", HELP["reproduce"],
                "Run the command of every cell of the manifest of published tables (autogcl/protocols/manifest.py) "
                "that is not done, once per distinct command, on the chosen executor; copy each finished summary "
                "and its units into the committed folder the manifest names. Cells done are skipped, and with "
                "--resume interrupted units continue, so the same command resumes an interrupted reproduce. "
                "With --budget SECONDS only units estimated to finish in time start (--jobs of them at a time, "
                "sharing the device), running ones are stopped with a checkpoint at the budget, and whatever "
                "finished is published.")
    add_options(p, ReproduceConfig)
    _run_options(p, ("resume", "device", "data_root", "executor", "ray_address", "cpus_per_unit", "gpus_per_unit"))
    p.set_defaults(func=cmd_reproduce)


def cmd_reproduce(args) -> int:
    from .config import from_args
    from .protocols.manifest import CELLS, select
    from .protocols.runner import ReproduceConfig, reproduce, run_budget

    cfg = from_args(ReproduceConfig, args)
    if not (cfg.missing or cfg.stale):
        raise ConfigError("say what to run: --missing (every cell the manifest lists as not done), --stale (every "
                          "cell whose committed folder names no code commit), or both")
    from .config import RunOptions

    run = from_args(RunOptions, args, device="auto")  # the device is checked by each command that trains
    extra = ["--executor", run.executor]
    extra += ["--ray-address", run.ray_address] if run.ray_address else []
    extra += ["--cpus-per-unit", str(run.cpus_per_unit)] if run.cpus_per_unit else []
    extra += ["--gpus-per-unit", str(run.gpus_per_unit)] if run.gpus_per_unit else []
    extra += ["--device", args.device] if args.device != "auto" else []
    cells = select(CELLS, cfg.compute, cfg.only)
    if cfg.budget is not None:
        res = run_budget(cells, Path(cfg.root), cfg.budget, data_root=run.data_root, extra=extra, jobs=cfg.jobs,
                         unit_default=cfg.unit_seconds, grace=cfg.grace, margin=cfg.margin,
                         dry_run=cfg.dry_run, missing_cells=cfg.missing, stale_cells=cfg.stale)
        return 1 if res["failed"] else 0
    reproduce(cells, Path(cfg.root), data_root=run.data_root, extra=extra, resume=run.resume, dry_run=cfg.dry_run,
              run=main, missing_cells=cfg.missing, stale_cells=cfg.stale)
    return 0


def add_tune(sub) -> None:
    from .config import add_options
    from .protocols.tune import TuneConfig

    p = _parser(sub, "tune", HELP["tune"],
                "Nested search (autogcl/protocols/tune.py): each outer fold of the semi-supervised split runs its own "
                "Ray Tune search (Optuna's TPE sampler, ASHA early stopping) whose trials are scored on the fold's "
                "validation part only; the chosen configuration reports its test-fold accuracy under both selections "
                "(val, test_max). Progress is one log line per trial event. SIGTERM or Ctrl-C saves the search's "
                "state; --resume continues it. Needs pip install 'autogcl[tune]'.")
    add_options(p, TuneConfig)
    p.set_defaults(func=cmd_tune)


def cmd_tune(args) -> int:
    from .config import from_args
    from .protocols.tune import TuneConfig, table, tune

    summary = tune(from_args(TuneConfig, args))
    print(table(summary))
    return 0


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser, or (given the command line ``argv``) one whose only fully built
    command is the invoked one: the others are listed by name and help alone."""
    parser = argparse.ArgumentParser(
        prog="autogcl",
        description="Graph contrastive learning with learnable view generators (AutoGCL).",
    )
    parser.add_argument("--version", action="version", version=f"autogcl {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    chosen = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    adders = {"unsupervised": add_unsupervised, "semi": add_semi, "report": add_report,
              "visualize": add_visualize, "ablate": add_ablate, "transfer": add_transfer,
              "embed": add_embed, "reproduce": add_reproduce, "tune": add_tune, "property": add_property}
    for name, add in adders.items():
        if chosen is None or chosen == name:
            add(sub)
        else:
            sub.add_parser(name, help=HELP[name])
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    from .errors import Preempted
    from .preempt import handling

    try:
        with handling():  # SIGTERM (preemption) and SIGINT stop training cleanly, with a checkpoint
            return args.func(args)
    except Preempted as exc:
        print(f"autogcl: {exc.headline}; resume with: {resume_command(argv)}", file=sys.stderr)
        if exc.details:
            print(f"autogcl: ({exc.details})", file=sys.stderr)
        return exc.exit_code
    except AutoGCLError as exc:
        print(f"autogcl: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("autogcl: interrupted; finished units are kept, rerun with --resume to continue",
              file=sys.stderr)
        return 130
    except Exception as exc:  # anything unforeseen: one line here, the traceback in a log file
        log_file = _write_crash_log(argv)
        print(f"autogcl: unexpected error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
              f" (full log: {log_file}); please report it", file=sys.stderr)
        return 1


def resume_command(argv: list[str]) -> str:
    """The command line that continues an interrupted one (``--resume`` added where the command
    takes it and it is not there yet)."""
    import shlex

    args = list(argv)
    takes = bool(args) and (args[0] not in ("report", "visualize") or args[:2] == ["visualize", "views"])
    if takes and "--resume" not in args:
        args.append("--resume")
    return shlex.join(["autogcl", *args])


def _write_crash_log(argv: list[str]) -> str:
    """The traceback of the exception being handled, in ``<cache>/logs/``; its path."""
    import os
    import time
    import traceback

    from .paths import cache_dir

    text = f"autogcl {__version__}\nargv: {argv}\n\n{traceback.format_exc()}"
    try:
        folder = cache_dir() / "logs"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"autogcl-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
        path.write_text(text, encoding="utf-8")
        return str(path)
    except OSError:
        import tempfile

        fd, path = tempfile.mkstemp(prefix="autogcl-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return path


if __name__ == "__main__":
    sys.exit(main())
