"""Command line: ``autogcl unsupervised | semi | transfer | report | visualize | ablate``."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from . import __version__
from .errors import AutoGCLError

log = logging.getLogger("autogcl")


def _seeds(args) -> list[int]:
    if args.seeds < 1:
        raise AutoGCLError("--seeds must be at least 1")
    return list(range(args.first_seed, args.first_seed + args.seeds))


def add_unsupervised(sub) -> None:
    from .augment import RandomAugmentor

    p = sub.add_parser(
        "unsupervised",
        help="contrastive pre-training + SVM evaluation (SPEC 3.1)",
        description="Unsupervised protocol: train the GIN encoder with learnable view generators "
        "(autogcl) or random augmentations (graphcl) on the whole dataset, score the embeddings "
        "with an RBF SVM (10-fold CV, C by inner 5-fold search) at the evaluation epochs, repeat "
        "over seeds, and print mean ± std under both selections beside the published figure.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--dataset", default="MUTAG", help="TU dataset name (MUTAG, PROTEINS, NCI1, DD, ...)")
    p.add_argument("--method", default="autogcl", choices=["autogcl", "graphcl"])
    p.add_argument("--aug", default="random4", choices=list(RandomAugmentor.names),
                   help="GraphCL augmentation (method graphcl)")
    p.add_argument("--aug-ratio", type=float, default=0.2, help="GraphCL augmentation ratio")
    p.add_argument("--seeds", type=int, default=5, help="number of seeds")
    p.add_argument("--first-seed", type=int, default=0, help="seeds are first-seed .. first-seed+seeds-1")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--eval-epochs", default=None,
                   help="comma-separated epochs to evaluate (default: 10,20,30 capped at --epochs)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--select", default="val", choices=["val", "test_max"],
                   help="selection reported as the result (both are always recorded)")
    p.add_argument("--feat", default="deg+odeg100", help="node-feature recipe (deg+odeg100, constant, ...)")
    p.add_argument("--tau", type=float, default=None, help="NT-Xent temperature (default 0.5 autogcl, 0.2 graphcl)")
    p.add_argument("--cl-variant", default="simclr", choices=["simclr", "released"],
                   help="NT-Xent form: simclr (published) or released (positive left out of the "
                   "denominator; one direction for graphcl)")
    p.add_argument("--add-mask", action="store_true", help="generators may also mask nodes")
    p.add_argument("--dropped", default="isolate", choices=["isolate", "remove"],
                   help="dropped nodes stay as isolated zero nodes (released) or are removed")
    p.add_argument("--mask-token", default="scalar", choices=["scalar", "feature"])
    p.add_argument("--sim-loss", default="none", choices=["none", "cosine", "mse"],
                   help="add L_sim to the naive strategy (released code: mse)")
    p.add_argument("--graphcl-views", default="aug-aug", choices=["aug-aug", "orig-aug"])
    p.add_argument("--data-root", default=None, help="data root (else $AUTOGCL_DATA, else the project cache)")
    p.add_argument("--out", default="runs/unsupervised", help="run directory")
    p.add_argument("--resume", action="store_true", help="keep finished seeds, continue interrupted ones")
    p.add_argument("--jobs", type=int, default=2, help="processes for the SVM folds")
    p.add_argument("--save-embeddings", action="store_true", help="save embeddings at the evaluation epochs")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_unsupervised)


def cmd_unsupervised(args) -> int:
    from .data import load_tu
    from .eval.report import unsupervised_table
    from .eval.unsupervised import UnsupervisedConfig, run_sweep

    evals = ([int(e) for e in args.eval_epochs.split(",")] if args.eval_epochs
             else [e for e in (10, 20, 30) if e <= args.epochs] or [args.epochs])
    dataset = load_tu(args.dataset, args.data_root, args.feat)
    cfg = UnsupervisedConfig(
        dataset=dataset.name, method=args.method, feat=args.feat, epochs=args.epochs,
        batch_size=args.batch_size, lr=args.lr, eval_epochs=evals, tau=args.tau,
        cl_variant=args.cl_variant, add_mask=args.add_mask, dropped=args.dropped,
        mask_token=args.mask_token, sim_loss=args.sim_loss, aug=args.aug, aug_ratio=args.aug_ratio,
        graphcl_views=args.graphcl_views, select=args.select,
    )
    log.info("%s: %d graphs, %d features, %d classes; writing to %s", dataset.name, len(dataset),
             dataset.num_features, dataset.num_classes, Path(args.out) / cfg.tag)
    summary = run_sweep(cfg, dataset, _seeds(args), Path(args.out), resume=args.resume,
                        n_jobs=args.jobs, save_embeddings=args.save_embeddings,
                        show_progress=False if args.no_progress else None)
    print(unsupervised_table([summary]))
    print(f"\nselection reported as the result: {cfg.select}; results in {Path(args.out) / cfg.tag}")
    return 0


def add_semi(sub) -> None:
    from .augment import RandomAugmentor
    from .eval.semi import ROWS

    p = sub.add_parser(
        "semi",
        help="semi-supervised protocol with a ResGCN classifier (SPEC 3.2)",
        description="Semi-supervised protocol: 10-fold stratified CV (fold seed 12345); in each fold "
        "a labeled 10% of the data drawn from the training part, the rest of it unlabeled, the "
        "previous fold as validation (for the val selection) and the test fold. Rows: "
        + "; ".join(f"{k}: {v}" for k, v in ROWS.items()) + ".",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--dataset", default="PROTEINS")
    p.add_argument("--row", default="joint",
                   help="row(s) to run: a name, a comma-separated list, or 'all' (" + ", ".join(ROWS) + ")")
    p.add_argument("--seeds", type=int, default=1, help="number of seeds (each seed: all folds)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--pretrain-epochs", type=int, default=30, help="pre-training epochs of graphcl_cl and naive")
    p.add_argument("--batch-size", type=int, default=None, help="default 128 (64 for DD, COLLAB, REDDIT-*, GITHUB)")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--label-rate", type=float, default=0.1, help="labeled share of the whole dataset")
    p.add_argument("--folds", type=int, default=10)
    p.add_argument("--fold-limit", type=int, default=None, help="run only the first N folds (quick checks)")
    p.add_argument("--select", default="val", choices=["val", "test_max"],
                   help="selection reported as the result (both are always recorded)")
    p.add_argument("--add-mask", action="store_true", help="generators may also mask nodes")
    p.add_argument("--lambda", dest="lam", type=float, default=1.0, help="weight of L_sim")
    p.add_argument("--sim-loss", default="cosine", choices=["cosine", "mse"])
    p.add_argument("--tau", type=float, default=0.5)
    p.add_argument("--cl-variant", default="simclr", choices=["simclr", "released"])
    p.add_argument("--aug", default="random4", choices=list(RandomAugmentor.names), help="GraphCL rows' augmentation")
    p.add_argument("--aug-ratio", type=float, default=0.2)
    p.add_argument("--feat", default="deg+odeg100")
    p.add_argument("--data-root", default=None)
    p.add_argument("--out", default="runs/semi")
    p.add_argument("--resume", action="store_true", help="keep finished folds, run only what is missing")
    p.add_argument("--save-embeddings", default=None, metavar="EPOCHS",
                   help="comma-separated epochs after which to save every graph's embedding (0 = before "
                   "training), for 'autogcl visualize tsne'")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_semi)


def cmd_semi(args) -> int:
    from .data import load_tu
    from .eval.report import semi_table
    from .eval.semi import ROWS, SemiConfig, run_sweep

    rows = list(ROWS) if args.row == "all" else [r.strip() for r in args.row.split(",") if r.strip()]
    dataset = load_tu(args.dataset, args.data_root, args.feat)
    cfgs = [SemiConfig(dataset=dataset.name, row=r, feat=args.feat, epochs=args.epochs,
                       pretrain_epochs=args.pretrain_epochs, batch_size=args.batch_size, lr=args.lr,
                       label_rate=args.label_rate, folds=args.folds, lam=args.lam, tau=args.tau,
                       cl_variant=args.cl_variant, sim_loss=args.sim_loss, add_mask=args.add_mask,
                       aug=args.aug, aug_ratio=args.aug_ratio, select=args.select) for r in rows]
    save = [int(e) for e in args.save_embeddings.split(",")] if args.save_embeddings else None
    summaries = [run_sweep(c, dataset, _seeds(args), Path(args.out), resume=args.resume,
                           fold_limit=args.fold_limit, show_progress=False if args.no_progress else None,
                           save_embeddings=save)
                 for c in cfgs]
    print(semi_table(summaries))
    print(f"\nselection reported as the result: {args.select}; results in {args.out}")
    return 0


def add_report(sub) -> None:
    p = sub.add_parser(
        "report",
        help="tables of finished runs beside the published figures",
        description="Collect every summary.json under the given run directories and print "
        "Markdown tables (unsupervised; semi-supervised rows x datasets) with mean ± std under "
        "both selections and the published figures; also written to --out.",
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--out", default=None, help="Markdown file to write (default: RUN_DIR/report.md of the first)")
    p.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    from .eval.report import collect, render
    from .runs import atomic_write_text

    summaries = collect([Path(d) for d in args.run_dirs])
    text = render(summaries)
    print(text)
    out = Path(args.out) if args.out else Path(args.run_dirs[0]) / "report.md"
    atomic_write_text(out, text + "\n")
    print(f"\nwritten to {out}", file=sys.stderr)
    return 0


def add_visualize(sub) -> None:
    p = sub.add_parser("visualize", help="figures: generated views, learning curves, t-SNE of embeddings",
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
    t.add_argument("--epochs", default=None, help="comma-separated epochs (default: all saved)")
    t.add_argument("--labels", default=None)
    t.add_argument("--out", default=None, help="output file (default UNIT_DIR/tsne.png of the first)")
    t.set_defaults(func=cmd_tsne)
    v = vs.add_parser(
        "views", help="what the learnable generators do to graphs",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Train two learnable view generators jointly with a classifier "
        "(L_cls(x, x1, x2) + lambda L_sim, mask operation on; after --warmup-epochs of the classifier "
        "alone) until the classifier's accuracy on "
        "generated views reaches --target-acc (or --max-epochs), then draw, for several graphs, the "
        "original, AutoGCL view 1 and view 2, and a GraphCL node-drop view. MNIST (default) uses "
        "superpixel graphs of the offline MNIST images, drawn at their image positions; a TU "
        "dataset is drawn with a graph layout. With --run UNIT_DIR, the saved generators of a "
        "finished unsupervised unit are drawn instead (no training).")
    v.add_argument("--dataset", default="MNIST", help="MNIST or a TU dataset name")
    v.add_argument("--target-acc", type=float, default=0.9)
    v.add_argument("--max-epochs", type=int, default=30)
    v.add_argument("--batch-size", type=int, default=None, help="default 64 relpos, 128 resgcn")
    v.add_argument("--classifier", default=None, choices=["relpos", "resgcn"],
                   help="relpos: layers over neighbour offsets, for superpixels (default on MNIST); "
                   "resgcn: ResGCN (default on TU datasets)")
    v.add_argument("--lr", type=float, default=None,
                   help="Adam learning rate of the classifier (default 0.001 relpos, 0.01 resgcn)")
    v.add_argument("--gen-lr", type=float, default=None, help="learning rate of the generators (default 0.01)")
    v.add_argument("--warmup-epochs", type=int, default=None, help="train the classifier alone on the original "
                   "graphs for this many epochs first (default 1 relpos, 0 resgcn)")
    v.add_argument("--hidden", type=int, default=None, help="classifier width (default 64 relpos, 128 resgcn)")
    v.add_argument("--lambda", dest="lam", type=float, default=None,
                   help="weight of L_sim (default 0.3 relpos, 1.0 resgcn)")
    v.add_argument("--dropped", default=None, choices=["weight", "remove", "isolate"],
                   help="dropped nodes in the views the classifier trains on: weight (default with "
                   "relpos: kept in the batch with weight 0, ignored by the classifier, so a drop still "
                   "gets a gradient), remove (default with resgcn), isolate (isolated zero nodes, which "
                   "skew the classifier's BatchNorm statistics)")
    v.add_argument("--no-mask", action="store_true", help="generators only keep or drop")
    v.add_argument("--examples", type=int, default=6, help="graphs (digits) to draw")
    v.add_argument("--limit", type=int, default=None, help="use only N graphs per split (quick runs)")
    v.add_argument("--drop-ratio", type=float, default=0.2, help="GraphCL node-drop ratio shown beside")
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("--run", default=None, metavar="UNIT_DIR", help="draw the generators saved by this unit")
    v.add_argument("--data-root", default=None)
    v.add_argument("--out", default=None, help="output folder (default runs/views/DATASET)")
    v.add_argument("--no-progress", action="store_true")
    v.set_defaults(func=cmd_views)


def _labels(args):
    return [s.strip() for s in args.labels.split(",")] if args.labels else None


def cmd_curves(args) -> int:
    from .viz.curves import plot_curves

    dirs = [Path(d) for d in args.run_dirs]
    missing = [str(d) for d in dirs if not d.exists()]
    if missing:
        raise AutoGCLError(f"no such run folder: {', '.join(missing)}")
    out = Path(args.out) if args.out else dirs[0] / "curves.png"
    try:
        written = plot_curves(dirs, out, _labels(args), args.phase)
    except ValueError as exc:
        raise AutoGCLError(str(exc)) from exc
    print("\n".join(map(str, written)))
    return 0


def cmd_tsne(args) -> int:
    from .viz.tsne import plot_tsne

    dirs = [Path(d) for d in args.run_dirs]
    epochs = [int(e) for e in args.epochs.split(",")] if args.epochs else None
    out = Path(args.out) if args.out else dirs[0] / "tsne.png"
    try:
        written = plot_tsne(dirs, out, epochs, _labels(args))
    except ValueError as exc:
        raise AutoGCLError(str(exc)) from exc
    print("\n".join(map(str, written)))
    return 0


def cmd_views(args) -> int:
    import torch

    from .eval import views as V

    if args.run:
        return _views_from_run(args)
    cfg = V.ViewsConfig(dataset=args.dataset, target_acc=args.target_acc, max_epochs=args.max_epochs,
                        batch_size=args.batch_size, classifier=args.classifier, lr=args.lr,
                        gen_lr=args.gen_lr, warmup_epochs=args.warmup_epochs,
                        hidden=args.hidden, lam=args.lam, add_mask=not args.no_mask, dropped=args.dropped,
                        seed=args.seed, limit=args.limit, drop_ratio=args.drop_ratio)
    out = Path(args.out) if args.out else Path("runs/views") / args.dataset
    torch.manual_seed(args.seed)
    res = V.run(cfg, out, args.data_root, args.examples, show_progress=False if args.no_progress else None)
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


def _views_from_run(args) -> int:
    import torch

    from .augment import ViewGenerator
    from .data import load_tu
    from .eval import views as V
    from .eval.unsupervised import UnsupervisedConfig
    from .runs import read_json

    unit = Path(args.run)
    if not (unit / "model.pt").is_file() or not (unit / "config.json").is_file():
        raise AutoGCLError(f"{unit} is not a finished unit (needs model.pt and config.json)")
    ucfg = UnsupervisedConfig.from_dict(read_json(unit / "config.json"))
    if ucfg.method != "autogcl":
        raise AutoGCLError(f"{unit} was trained with {ucfg.method}: it has no learnable generators")
    ds = load_tu(ucfg.dataset, args.data_root, ucfg.feat)
    state = torch.load(unit / "model.pt", weights_only=True)
    gens = []
    for key in ("gen1", "gen2"):
        g = ViewGenerator(ds.num_features, ucfg.gen_hidden, ucfg.gen_layers, ucfg.add_mask, ucfg.dropped,
                          ucfg.mask_token)
        g.load_state_dict(state[key])
        gens.append(g)
    cfg = V.ViewsConfig(dataset=ds.name, seed=args.seed, drop_ratio=args.drop_ratio)
    out = Path(args.out) if args.out else unit / "views"
    written = V.draw(cfg, gens, ds, out / "views.png", args.examples,
                     title=f"{ds.name}: views of the generators saved in {unit}")
    print("\n".join(map(str, written)))
    return 0


def add_ablate(sub) -> None:
    from .eval.ablation import SINGLE_AUGS
    from .eval.published import ABLATION_RATIOS

    p = sub.add_parser("ablate", help="augmentation ablations of the GraphCL rows")
    ks = p.add_subparsers(dest="ablation", metavar="ABLATION")
    ks.required = True
    a = ks.add_parser(
        "graphcl-aug", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        help="GraphCL with each augmentation alone and at several ratios",
        description="Run a semi-supervised GraphCL row with each GraphCL augmentation alone (ratio "
        "0.2), and with one augmentation at several ratios; print both tables in the shape of the "
        "paper's appendix tables (cells: val / test_max accuracy) and write them to OUT/ablation.md.")
    a.add_argument("--dataset", default="NCI1", help="one or more comma-separated TU datasets")
    a.add_argument("--row", default="graphcl_cl", choices=["graphcl_cl", "graphcl_aug"])
    a.add_argument("--augs", default=",".join(SINGLE_AUGS))
    a.add_argument("--ratios", default=",".join(f"{r:g}" for r in ABLATION_RATIOS))
    a.add_argument("--ratio-aug", default="node_drop", help="augmentation of the ratio sweep")
    a.add_argument("--seeds", type=int, default=1)
    a.add_argument("--first-seed", type=int, default=0)
    a.add_argument("--epochs", type=int, default=30)
    a.add_argument("--pretrain-epochs", type=int, default=30)
    a.add_argument("--fold-limit", type=int, default=None, help="run only the first N folds")
    a.add_argument("--data-root", default=None)
    a.add_argument("--out", default="runs/ablate")
    a.add_argument("--resume", action="store_true")
    a.add_argument("--no-progress", action="store_true")
    a.set_defaults(func=cmd_ablate)


def cmd_ablate(args) -> int:
    from .data import load_tu
    from .eval.ablation import run_ablation, tables
    from .eval.semi import SemiConfig
    from .runs import atomic_write_text

    datasets = {}
    for name in args.dataset.split(","):
        ds = load_tu(name.strip(), args.data_root)
        datasets[ds.name] = ds
    augs = [a.strip() for a in args.augs.split(",") if a.strip()]
    ratios = [float(r) for r in args.ratios.split(",")]
    base = SemiConfig(dataset=next(iter(datasets)), row=args.row, epochs=args.epochs,
                      pretrain_epochs=args.pretrain_epochs, aug=args.ratio_aug)
    for a in augs:
        SemiConfig(dataset=base.dataset, row=args.row, aug=a)  # validates the names early
    res = run_ablation(base, datasets, _seeds(args), Path(args.out), augs, ratios, args.ratio_aug,
                       args.resume, args.fold_limit, show_progress=False if args.no_progress else None)
    text = tables(res)
    print(text)
    atomic_write_text(Path(args.out) / "ablation.md", text + "\n")
    return 0


def add_transfer(sub) -> None:
    from .augment import RandomAugmentor

    p = sub.add_parser("transfer", help="molecules: contrastive pre-training and MoleculeNet fine-tuning (SPEC 3.3)",
                       description="Transfer learning on molecules: pre-train the molecule GIN on unlabeled "
                       "SMILES, then fine-tune it on labeled molecules with a scaffold split.")
    ts = p.add_subparsers(dest="step", metavar="STEP")
    ts.required = True
    pre = ts.add_parser(
        "pretrain", help="contrastive pre-training on a SMILES corpus",
        description="Pre-train the molecule GIN (5 x 300, Hu et al. features) with learnable view "
        "generators (autogcl, the naive strategy) or GraphCL's random augmentations (graphcl) on a "
        "SMILES file, read in cached chunks. A checkpoint is written after every chunk and epoch; "
        "--resume continues an interrupted run. The run folder ends with encoder.pt, the file "
        "`autogcl transfer finetune --checkpoint` takes.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    pre.add_argument("--corpus", default="", help="SMILES file (CSV with a SMILES column, or .smi; .gz ok); "
                     "default: <data root>/pretrain/moses_train.csv.gz")
    pre.add_argument("--smiles-col", default=None, help="SMILES column (default: one named SMILES, else the first)")
    pre.add_argument("--method", default="autogcl", choices=["autogcl", "graphcl"])
    pre.add_argument("--max-molecules", type=int, default=None, help="read only the first N SMILES")
    pre.add_argument("--epochs", type=int, default=20)
    pre.add_argument("--batch-size", type=int, default=256)
    pre.add_argument("--lr", type=float, default=0.001)
    pre.add_argument("--chunk-size", type=int, default=50_000, help="SMILES per cached chunk (bounds memory)")
    pre.add_argument("--tau", type=float, default=None, help="NT-Xent temperature (default 0.5 autogcl, 0.1 graphcl)")
    pre.add_argument("--no-mask", action="store_true", help="generators only keep or drop atoms (no masking)")
    pre.add_argument("--dropped", default="remove", choices=["remove", "isolate"])
    pre.add_argument("--sim-loss", default="none", choices=["none", "cosine", "mse"],
                     help="add L_sim to the naive strategy (released code: mse)")
    pre.add_argument("--aug", default="random4", choices=list(RandomAugmentor.names),
                     help="GraphCL augmentation (method graphcl)")
    pre.add_argument("--aug-ratio", type=float, default=0.2)
    pre.add_argument("--seed", type=int, default=0)
    pre.add_argument("--workers", type=int, default=None, help="featurising processes (default: all cores)")
    pre.add_argument("--data-root", default=None)
    pre.add_argument("--out", default=None, help="run folder (default runs/pretrain/METHOD)")
    pre.add_argument("--resume", action="store_true", help="continue an interrupted run")
    pre.add_argument("--no-progress", action="store_true")
    pre.set_defaults(func=cmd_pretrain)

    ft = ts.add_parser(
        "finetune", help="fine-tune on MoleculeNet sets or your own CSV",
        description="Fine-tune the molecule GIN (from --checkpoint, or from scratch for the No-pretrain "
        "row) on each dataset with a scaffold split 80/10/10: masked BCE, ROC-AUC averaged over the tasks "
        "with both classes. Reports mean ± std over seeds under the val selection (test ROC-AUC at the "
        "epoch of best validation ROC-AUC) and test_max (best test ROC-AUC, the published protocol).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ft.add_argument("--dataset", default="bbbp",
                    help="MoleculeNet name(s), comma-separated, or all: bbbp, tox21, toxcast, sider, clintox, muv, hiv, bace")
    ft.add_argument("--csv", default=None, help="your own CSV instead of --dataset")
    ft.add_argument("--smiles-col", default="smiles", help="SMILES column of --csv")
    ft.add_argument("--label-cols", default=None, help="comma-separated label columns of --csv (default: all others)")
    ft.add_argument("--checkpoint", default=None, help="encoder.pt of a pre-training run (none: No pretrain)")
    ft.add_argument("--seeds", type=int, default=3)
    ft.add_argument("--first-seed", type=int, default=0)
    ft.add_argument("--epochs", type=int, default=100)
    ft.add_argument("--batch-size", type=int, default=32)
    ft.add_argument("--lr", type=float, default=0.001)
    ft.add_argument("--dropout", type=float, default=0.5)
    ft.add_argument("--select", default="val", choices=["val", "test_max"],
                    help="selection reported as the result (both are always recorded)")
    ft.add_argument("--tag", default=None, help="results go to OUT/TAG/DATASET (default: no_pretrain or "
                    "the checkpoint's run folder name)")
    ft.add_argument("--data-root", default=None)
    ft.add_argument("--out", default="runs/transfer")
    ft.add_argument("--resume", action="store_true", help="skip finished seeds, continue interrupted ones")
    ft.add_argument("--no-progress", action="store_true")
    ft.set_defaults(func=cmd_finetune)


def cmd_pretrain(args) -> int:
    from .eval.pretrain import PretrainConfig, pretrain

    cfg = PretrainConfig(corpus=args.corpus, smiles_col=args.smiles_col, method=args.method,
                         epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                         max_molecules=args.max_molecules, chunk_size=args.chunk_size,
                         add_mask=not args.no_mask, dropped=args.dropped, tau=args.tau,
                         sim_kind="cosine" if args.sim_loss == "none" else args.sim_loss,
                         sim_weight=0.0 if args.sim_loss == "none" else 1.0,
                         aug=args.aug, aug_ratio=args.aug_ratio, seed=args.seed)
    out = Path(args.out) if args.out else Path("runs/pretrain") / args.method
    res = pretrain(cfg, out, args.data_root, resume=args.resume, workers=args.workers,
                   show_progress=False if args.no_progress else None)
    print(f"pre-trained {res['method']} for {res['epochs']} epoch(s) on {res['corpus']['molecules']} molecules "
          f"({res['corpus']['skipped']} SMILES skipped): {res['molecules_per_s']:.0f} molecules/s, "
          f"peak memory {res['peak_rss_mb']:.0f} MB")
    print(f"encoder: {out / 'encoder.pt'}")
    return 0


def cmd_finetune(args) -> int:
    from .eval.report import transfer_table
    from .eval.transfer import FinetuneConfig, dataset_names, run_sweep

    if args.checkpoint:
        tag = args.tag or Path(args.checkpoint).resolve().parent.name
    else:
        tag = args.tag or "no_pretrain"
    if args.label_cols and not args.csv:
        raise AutoGCLError("--label-cols and --smiles-col are for --csv files; MoleculeNet sets have fixed columns")
    labels = [c.strip() for c in args.label_cols.split(",")] if args.label_cols else None
    names = [args.csv] if args.csv else dataset_names(args.dataset)
    summaries = []
    for name in names:
        cfg = FinetuneConfig(dataset=name, checkpoint=str(Path(args.checkpoint).resolve()) if args.checkpoint else None,
                             csv=args.csv, smiles_col=args.smiles_col, label_cols=labels, epochs=args.epochs,
                             batch_size=args.batch_size, lr=args.lr, dropout=args.dropout, select=args.select)
        summaries.append(run_sweep(cfg, _seeds(args), Path(args.out), tag, args.data_root, args.resume,
                                   show_progress=False if args.no_progress else None))
    print(transfer_table(summaries))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autogcl",
        description="Graph contrastive learning with learnable view generators (AutoGCL).",
    )
    parser.add_argument("--version", action="version", version=f"autogcl {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    add_unsupervised(sub)
    add_semi(sub)
    add_report(sub)
    add_visualize(sub)
    add_ablate(sub)
    add_transfer(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except AutoGCLError as exc:
        print(f"autogcl: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("autogcl: interrupted; finished seeds are kept, rerun with --resume to continue",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
