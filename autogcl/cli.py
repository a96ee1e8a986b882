"""Command line: ``autogcl unsupervised ...`` (more protocols come as subcommands)."""

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
