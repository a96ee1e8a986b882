"""How fine-tuning ROC-AUC moves with the amount of molecule pre-training (corpus size x epochs).

``run`` pre-trains one encoder per setting of ``--pretrain`` (``NxE``: the first N molecules of
the corpus for E epochs; ``fullxE``: the whole corpus; ``none``: the No-pretrain row) and
fine-tunes each on each dataset for the paper's 100 epochs over ``--seeds`` seeds, dataset by
dataset (so one dataset's whole curve lands first). ``--encoder SETTING=PATH`` fine-tunes an
encoder made before instead of pre-training that setting again, once its own record shows it is
what the study's pre-training of that setting would make (the same first N molecules, epochs,
options and corpus). Every step is an ``autogcl`` command run with
``--resume``: the same command continues an interrupted study without redoing finished units,
and each command's wall time is appended to ``docs/results/commands.tsv``. ``--units-from``
shares the units of committed cells run with the same command (the transfer table's No-pretrain
and whole-corpus cells): they are restored first, with their records, and kept. Finished summaries
and the pre-training records are copied under ``docs/results/summaries/sizes/``.

``report`` builds ``docs/results/transfer_sizes.md`` (the table with the code commits of its runs,
both selections, and the slope of ROC-AUC per tenfold more molecules seen, fitted on the ``val``
means) and ``docs/results/transfer_sizes.png`` from those summaries.

    python scripts/studies/transfer_sizes.py run --data-root ../shared/data
    python scripts/studies/transfer_sizes.py run --pretrain none 50000x2 --datasets clintox --seeds 3
    python scripts/studies/transfer_sizes.py run --encoder 200000x2=pretrained/autogcl-moses200k.pt
    python scripts/studies/transfer_sizes.py report
    python scripts/studies/transfer_sizes.py pool docs/results docs/results/sizes_gpu  # CPU and GPU seeds together
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SPEC = re.compile(r"^(none|full|[1-9]\d*)(?:x([1-9]\d*))?$")  # counts >= 1, no leading zeros


def parse_setting(spec: str) -> tuple[str, int | None, int | None]:
    """``none`` -> ("no_pretrain", None, None); ``50000x2`` -> ("moses50000x2", 50000, 2);
    ``fullx1`` -> ("mosesfullx1", None, 1). Anything else is a usage error."""
    m = SPEC.match(spec)
    if not m or (m.group(1) == "none") != (m.group(2) is None):
        raise SystemExit(f"transfer_sizes.py: --pretrain {spec!r}: give none, NxE or fullxE (e.g. 50000x2)")
    if m.group(1) == "none":
        return "no_pretrain", None, None
    n = None if m.group(1) == "full" else int(m.group(1))  # None: the whole corpus
    return f"moses{m.group(1)}x{m.group(2)}", n, int(m.group(2))


def timed(cmd: list[str], log: Path, results: Path) -> int:
    """Run ``autogcl`` with ``cmd``; append its times and exit code to ``results/commands.tsv``."""
    start = time.time()
    with open(log, "a") as fh:
        rc = subprocess.call([sys.executable, "-m", "autogcl", *cmd], stdout=fh, stderr=subprocess.STDOUT)
    end = time.time()
    iso = [datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds") for t in (start, end)]
    threads = os.environ.get("OMP_NUM_THREADS")
    line = f"{iso[0]}\t{iso[1]}\t{round(end - start)}\t{rc}\t" + \
        (f"OMP_NUM_THREADS={threads} " if threads else "") + "autogcl " + shlex.join(cmd)
    tsv = results / "commands.tsv"
    tsv.parent.mkdir(parents=True, exist_ok=True)
    with open(tsv, "a") as fh:
        fh.write(("" if tsv.stat().st_size else "started\tfinished\twall_s\texit\tcommand\n") + line + "\n")
    return rc


def publish(out: Path, results: Path) -> None:
    """Finished summaries and pre-training records under ``results/summaries/sizes/``, through
    :func:`autogcl.protocols.publishing.publish` as every committed cell: each with a
    ``provenance.json`` naming the code commit and devices, a fine-tuning summary with its units
    (``results/units/sizes/...``, each with its own record), a committed summary never replaced
    by one of fewer seeds, and what is published already left with its record."""
    from autogcl.protocols.manifest import Cell
    from autogcl.protocols.publishing import publish as publish_cell

    root, base = results.parent, f"{results.name}/summaries/sizes"  # runs relative to root: units_folder
    for f in sorted((out / "transfer").glob("*/*/summary.json")):
        tag, ds = f.parent.parent.name, f.parent.name
        publish_cell(Cell("transfer", (ds, tag), (f"{base}/transfer/{tag}/{ds}",), str(f.parent), ""), root)
    for f in sorted((out / "pretrain").glob("*/result.json")):
        tag = f.parent.name
        publish_cell(Cell("pretrain", (tag,), (f"{base}/pretrain/{tag}",), str(f.parent), "", file="result.json"),
                     root)


def shared(committed: Path, sweep: Path, seeds: int) -> int:
    """Restore the finished units of the committed summary folder ``committed`` (its seeds below
    ``seeds``) into the study's sweep folder ``sweep``, each with its committed record
    (:func:`autogcl.protocols.publishing.restore`); how many were restored."""
    from autogcl.protocols.manifest import Cell
    from autogcl.protocols.publishing import restore

    return restore(Cell("transfer", (), (str(committed),), str(sweep), ""), Path("/"), seeds=seeds)


def study_config(n: int | None, epochs: int, pretrain_opts: str) -> dict:
    """The configuration the study's own pre-training command for a setting would record,
    parsed by autogcl's command line (defaults and ``--pretrain-opts`` included)."""
    from autogcl.cli import build_parser
    from autogcl.config import from_args
    from autogcl.protocols.configs import PretrainConfig

    argv = ["transfer", "pretrain", "--epochs", str(epochs), *(["--max-molecules", str(n)] if n is not None else []),
            *shlex.split(pretrain_opts)]
    return from_args(PretrainConfig, build_parser(argv).parse_args(argv)).to_dict()


def recorded_config(meta: dict) -> dict:
    """An encoder's pre-training configuration from its record; records made before the
    similarity loss was one option (``sim_kind`` and ``sim_weight``; weight 0: none) are
    read in today's terms."""
    c = dict(meta.get("pretrain_config") or {})
    if "sim_loss" not in c and "sim_weight" in c:
        kind, weight = c.pop("sim_kind", None), c.pop("sim_weight")
        c["sim_loss"] = "none" if not weight else kind
    return c


def given_encoders(specs: list[str], settings: list[tuple[str, int | None, int | None]], pretrain_opts: str = "",
                   data_root=None) -> dict[str, Path]:
    """``SETTING=PATH`` options as {tag: path}, each checked against the checkpoint's own record:
    it must be what the study's pre-training of that setting would have made (every option of
    the configuration, the same corpus: by its content digest where the record has one, else by
    file name). Anything else is a usage error naming the option."""
    from autogcl.data.datasets import fingerprint
    from autogcl.errors import AutoGCLError
    from autogcl.models.mol_gin import load_encoder
    from autogcl.protocols.pretrain import resolve_corpus
    from autogcl.units import config_diff

    tags = {tag: (n, e) for tag, n, e in settings}
    out = {}
    for spec in specs:
        setting, sep, path = spec.partition("=")

        def refuse(why: str):
            raise SystemExit(f"transfer_sizes.py: --encoder {spec!r}: {why}")

        if not sep or not path:
            refuse("give SETTING=PATH, e.g. 200000x2=encoder.pt")
        try:
            tag, n, epochs = parse_setting(setting)
        except SystemExit:
            refuse("the setting must be NxE or fullxE (e.g. 200000x2)")
        if tag not in tags or epochs is None:
            refuse(f"{setting} is not a pre-trained setting of --pretrain "
                   f"({', '.join(t for t, (_, e) in tags.items() if e is not None) or 'none'})")
        if tag in out:
            refuse(f"{setting} is given twice")
        try:
            meta = load_encoder(path)[2]
            want = study_config(n, epochs, pretrain_opts)
            corpus = resolve_corpus(want["corpus"], data_root)
        except (AutoGCLError, OSError) as exc:
            refuse(str(exc))
        made = recorded_config(meta)
        if (made.get("max_molecules"), meta.get("epochs")) != (n, epochs):
            refuse(f"the encoder's record says {made.get('max_molecules') or 'the whole corpus'} molecules x "
                   f"{meta.get('epochs')} epochs, not {setting}")
        diff = config_diff({k: v for k, v in made.items() if k not in ("corpus", "corpus_fingerprint")},
                           {k: v for k, v in want.items() if k not in ("corpus", "corpus_fingerprint")})
        if diff:
            refuse(f"the encoder was pre-trained with other options than the study's ({'; '.join(diff)})")
        fp = made.get("corpus_fingerprint")
        if Path(made.get("corpus", "")).name != corpus.name or (
                isinstance(fp, list) and len(fp) == 3 and isinstance(fp[2], str) and fp != fingerprint([corpus])[0]):
            refuse(f"the encoder was pre-trained on {made.get('corpus')}, not on the study's corpus {corpus}")
        out[tag] = Path(path).resolve()
    return out


def run(args) -> int:
    """Every step is handed to autogcl with ``--resume``, even one that finished: autogcl keeps
    its finished units (in a second or two) and refuses one made with another configuration
    (other seeds, epochs or options), so a changed study never reuses a stale result."""
    out, results = Path(args.out).resolve(), Path(args.results).resolve()
    settings = [parse_setting(s) for s in args.pretrain]
    given = given_encoders(args.encoder, settings, args.pretrain_opts, args.data_root)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    common = ["--data-root", str(Path(args.data_root).resolve())] if args.data_root else []
    for ds in args.datasets.split(","):
        for tag, n, epochs in settings:
            ckpt = []
            if tag in given:  # an encoder made before, checked to be this setting
                ckpt = ["--checkpoint", str(given[tag])]
            elif epochs is not None:  # a pre-trained setting (none has no epochs)
                pre = out / "pretrain" / tag
                cmd = ["transfer", "pretrain", "--epochs", str(epochs), "--out", str(pre), "--resume",
                       "--no-progress", *common, *shlex.split(args.pretrain_opts)]
                cmd += ["--max-molecules", str(n)] if n is not None else []
                if timed(cmd, out / "logs" / f"pretrain-{tag}.log", results):
                    print(f"pre-training {tag} failed: see {out / 'logs'}", file=sys.stderr)
                    return 1
                ckpt = ["--checkpoint", str(pre / "encoder.pt")]
            if args.units_from:  # units run once for another table: restored, with their records
                shared(Path(args.units_from).resolve() / tag / ds, out / "transfer" / tag / ds, args.seeds)
            cmd = ["transfer", "finetune", "--dataset", ds, "--seeds", str(args.seeds), "--epochs",
                   str(args.epochs), "--tag", tag, "--out", str(out / "transfer"), "--resume", "--no-progress",
                   *ckpt, *common, *shlex.split(args.finetune_opts)]
            rc = timed(cmd, out / "logs" / f"finetune-{tag}-{ds}.log", results)
            publish(out, results)
            if rc:
                print(f"fine-tuning {tag} on {ds} failed: see {out / 'logs'}", file=sys.stderr)
                return 1
            print(f"{ds} {tag}: done", flush=True)
    return 0


def load(folder: Path) -> dict:
    """(dataset, tag) -> summary, for every finished fine-tuning sweep below ``folder``."""
    return {(f.parent.name, f.parent.parent.name): json.loads(f.read_text())
            for f in sorted(folder.glob("*/*/summary.json"))}


def seen(s: dict) -> float:
    """Molecules seen in pre-training: 0 for the No-pretrain row, NaN for an encoder whose
    checkpoint does not record it (left out of the curve and the fit)."""
    if not s.get("pretrained"):
        return 0.0
    return float((s.get("pretrain") or {}).get("molecules_seen") or "nan")


def order(s: dict) -> tuple[float, str]:
    """Rows by molecules seen (the No-pretrain row first, unrecorded amounts last), then tag."""
    x = seen(s)
    return (x if np.isfinite(x) else np.inf, s.get("tag", ""))


def slope(points: list[tuple[float, float]]) -> tuple[float, float, int] | None:
    """Least-squares slope of ROC-AUC against log10(molecules seen), its standard error and the
    number of points; None unless three points or more at two amounts or more (with three
    points the error has one degree of freedom: read it as a rough scale, not an interval)."""
    points = [(x, y) for x, y in points if np.isfinite(x) and x > 0 and np.isfinite(y)]
    if len(points) < 3 or len({x for x, _ in points}) < 2:
        return None
    x, y = np.log10([p[0] for p in points]), np.array([p[1] for p in points])
    (b, _), cov = np.polyfit(x, y, 1, cov=True)
    return float(b), float(np.sqrt(cov[0, 0])), len(points)


def pooled(groups: list[dict], reference: str) -> dict[str, list[tuple[str, int, float, float, float, float]]]:
    """tag -> [(dataset, pairs, val mean difference, its standard error, test_max mean difference,
    its standard error)] over the seed-by-seed differences from the ``reference`` sweep, pooled over
    several groups of summaries (e.g. one per device: a seed of one group is not the same run as that
    seed of another, so seeds pair only within a group). A seed is paired where both sweeps of a group
    hold it with a finite score under both selections; the standard error needs two pairs or more
    (NaN below). A summary whose ``values`` do not match its ``seeds`` is a ValueError naming it."""

    def scores(s: dict, ds: str, tag: str) -> dict[int, tuple[float, float]]:
        vals, tests = s["val"]["values"], s["test_max"]["values"]
        if not len(s["seeds"]) == len(vals) == len(tests):
            raise ValueError(f"{tag} on {ds}: {len(s['seeds'])} seeds but {len(vals)} val and {len(tests)} "
                             "test_max values")
        return {k: (v, t) for k, v, t in zip(s["seeds"], vals, tests) if np.isfinite(v) and np.isfinite(t)}

    diffs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for sums in groups:
        for (ds, tag), s in sorted(sums.items()):
            ref = sums.get((ds, reference))
            if tag == reference or ref is None:
                continue
            mine, theirs = scores(s, ds, tag), scores(ref, ds, reference)
            diffs.setdefault((tag, ds), []).extend(
                (mine[k][0] - theirs[k][0], mine[k][1] - theirs[k][1]) for k in sorted(mine.keys() & theirs.keys()))
    out: dict[str, list[tuple[str, int, float, float, float, float]]] = {}
    for (tag, ds), pairs in sorted(diffs.items()):
        n = len(pairs)
        if not n:
            continue
        stats = []
        for v in np.array(pairs).T:  # val, then test_max
            stats += [float(v.mean()), float(v.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")]
        out.setdefault(tag, []).append((ds, n, *stats))
    return out


def pool(args) -> int:
    """The seed-by-seed differences from ``--reference``, pooled over the results folders given
    (each once); a folder without the reference sweep is named, and nothing to pool is an error."""
    folders = list(dict.fromkeys(str(Path(r).resolve()) for r in args.folders))
    shown_folders = [shown(f) for f in folders]
    groups = [load(Path(r) / "summaries" / "sizes" / "transfer") for r in folders]
    for r, g in zip(shown_folders, groups):
        if not g:
            raise SystemExit(f"transfer_sizes.py: no finished sweep under {r}/summaries/sizes/transfer")
        if not any(tag == args.reference for _, tag in g):
            print(f"transfer_sizes.py: {r}: no {args.reference} sweep, so nothing of it is paired", file=sys.stderr)
    try:
        table = pooled(groups, args.reference)
    except ValueError as exc:
        raise SystemExit(f"transfer_sizes.py: a damaged summary: {exc}") from exc
    if not table:
        raise SystemExit(f"transfer_sizes.py: no sweep to pair with {args.reference} in {', '.join(shown_folders)}")
    lines = [f"Seed-by-seed differences from {args.reference}, pooled over {', '.join(shown_folders)} "
             "(mean ± standard error over the pairs; the `val` column decides):", "",
             "| pre-training | dataset | pairs | val | test_max |", "|---|---|---|---|---|"]
    for tag, rows in table.items():
        for ds, n, v, ve, t, te in rows:
            lines.append(f"| {tag} | {ds} | {n} | {v:+.2f} ± {ve:.2f} | {t:+.2f} ± {te:.2f} |")
        lines.append(f"| {tag} | mean of the {len(rows)} datasets | {sum(r[1] for r in rows)} | "
                     f"{np.mean([r[2] for r in rows]):+.2f} | {np.mean([r[4] for r in rows]):+.2f} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


def shown(path: str) -> str:
    """A checkpoint path as the report shows it: relative to the repository when inside it, and
    from its checkout's ``runs/``, ``docs/`` or ``pretrained/`` on when a run of another checkout
    (a worktree of background jobs) recorded it, so that no machine's folders show."""
    p = Path(path)
    if p.is_relative_to(ROOT):
        return str(p.relative_to(ROOT))
    tops = [i for i, part in enumerate(p.parts) if part in ("runs", "docs", "pretrained")]
    return str(Path(*p.parts[tops[0]:])) if p.is_absolute() and tops else str(p)


def losses_of(results: Path, tag: str, checkpoint: str) -> str:
    """An encoder's pre-training losses, from the study's published record of ``tag`` or else
    from the checkpoint's own record; "losses not recorded" where neither can be read."""
    record = results / "summaries" / "sizes" / "pretrain" / tag / "result.json"
    try:
        if record.exists():
            c = json.loads(record.read_text())["config"]
        else:
            from autogcl.models.mol_gin import load_encoder
            from autogcl.molecules import resolve_encoder

            c = recorded_config(load_encoder(resolve_encoder(checkpoint))[2])  # a shipped name too
        return f"--sim-loss {c['sim_loss']} --cl-variant {c['cl_variant']}"
    except (OSError, KeyError, ValueError, RuntimeError):
        return "losses not recorded"


def report(args) -> int:
    from autogcl.protocols.published import TRANSFER

    results = Path(args.results)
    sums = load(results / "summaries" / "sizes" / "transfer")
    if not sums:
        raise SystemExit(f"transfer_sizes.py: no finished sweep under {results}/summaries/sizes/transfer")
    datasets = sorted({d for d, _ in sums})
    lines = [("| dataset | pre-training | corpus molecules | epochs | molecules seen | seeds | val | test_max | "
             "published (test_max) |"), "|" + "---|" * 9]
    fits = []
    for ds in datasets:
        rows = sorted(((t, s) for (d, t), s in sums.items() if d == ds), key=lambda ts: order(ts[1]))
        for tag, s in rows:
            p = s.get("pretrain") or {}
            pub = TRANSFER.get((s.get("pretrain_method") or "autogcl", ds) if s["pretrained"] else ("no_pretrain", ds))
            x = seen(s)
            lines.append(f"| {ds} | {tag} | {p.get('corpus_molecules') or '-'} | {p.get('epochs') or '-'} | "
                         f"{int(x) if np.isfinite(x) and x > 0 else '-'} | {s['n_seeds']} | "
                         f"{s['val']['mean']:.2f} ± {s['val']['std']:.2f} | "
                         f"{s['test_max']['mean']:.2f} ± {s['test_max']['std']:.2f} | "
                         f"{f'{pub[0]:.2f} ± {pub[1]:.2f}' if pub else '-'} |")
        fit = slope([(seen(s), s["val"]["mean"]) for _, s in rows])
        fits.append(f"- {ds}: " + ("fewer than three pre-trained points at two amounts or more" if fit is None else
                                   f"{fit[0]:+.2f} ± {fit[1]:.2f} ROC-AUC points per tenfold more molecules seen "
                                   f"({fit[2]} points)"))
    diffs = pooled([sums], args.reference)  # one group: the seeds both sweeps of a dataset hold
    compared = "".join(
        f"- {tag}: " + "; ".join(f"{sel} " + ", ".join(f"{d[i]:+.2f} ({d[0]})" for d in rows)
                                 + f", mean {np.mean([d[i] for d in rows]):+.2f}" for i, sel in ((2, "val"), (4, "test_max")))
        + f" ({len(rows)} dataset{'s' * (len(rows) > 1)})\n" for tag, rows in diffs.items())
    sys.path.insert(0, str(ROOT / "scripts" / "docs"))  # docsgen: the generated tables' own commit line
    from docsgen.tables import commits_line

    commits = commits_line([f.parent for f in sorted((results / "summaries" / "sizes" / "transfer").glob("*/*/summary.json"))])
    from autogcl.protocols.configs import checkpoint_path

    # one line per encoder: the path older runs recorded and the shipped name newer ones record
    # (pretrained/autogcl-moses200k.pt, autogcl-moses200k) are the same file
    used = sorted({(s["tag"], checkpoint_path(s["config"]["checkpoint"])) for s in sums.values() if s.get("pretrained")})
    encoders = [(t, shown(c), losses_of(results, t, c)) for t, c in used]  # each record read once, not per dataset
    text = ("## Fine-tuning ROC-AUC against the amount of pre-training (mean ± std over seeds)\n\n"
            + "\n".join(lines) + f"\n\n{commits}\n\nSlope of the `val` means against log10(molecules seen), least squares "
            "(± its standard error; with few points a rough scale, not an interval):\n\n" + "\n".join(fits) + "\n"
            + (f"\nAgainst {args.reference}: each sweep's mean difference from it over the seeds both finished, per "
               f"dataset (the `val` column decides whether an encoder beats it):\n\n{compared}" if compared else "")
            + ("\nEncoders fine-tuned (with their pre-training losses):\n\n"
               + "\n".join(f"- {t}: `{c}` ({lo})" for t, c, lo in encoders) + "\n" if encoders else ""))
    (results / "transfer_sizes.md").write_text(text)
    print(text)
    for path in plot(sums, datasets, results / "transfer_sizes.png"):
        print(f"wrote {path}")
    return 0


def sweeps(rows: list[dict]) -> tuple[list[dict], list[list[dict]]]:
    """The pre-trained rows as two kinds of sweep: along the corpus (for each corpus size the row
    with the fewest epochs, by corpus size) and along epochs (each corpus size pre-trained for
    more than one number of epochs, by epochs). Rows whose record lacks the corpus size or the
    molecules seen are left out."""
    by_corpus: dict[float, list[dict]] = {}
    for s in rows:
        p = s.get("pretrain") or {}
        if s.get("pretrained") and np.isfinite(seen(s)) and p.get("corpus_molecules"):
            by_corpus.setdefault(float(p["corpus_molecules"]), []).append(s)
    groups = [sorted(g, key=lambda s: s["pretrain"].get("epochs") or 0) for _, g in sorted(by_corpus.items())]
    return [g[0] for g in groups], [g for g in groups if len(g) > 1]


def label(s: dict) -> str:
    """A setting as the figure names it: corpus size x epochs (e.g. 50k x 8, 1.58M x 1)."""
    p = s["pretrain"]
    n = float(p["corpus_molecules"])
    size = f"{n / 1e6:.3g}M" if n >= 1e6 else f"{n / 1e3:.3g}k" if n >= 1e3 else f"{n:.0f}"
    return f"{size} x {p.get('epochs')}"


def plot(sums: dict, datasets: list[str], out: Path) -> list[Path]:
    """One panel per dataset: ROC-AUC against molecules seen, solid along the corpus size (the
    fewest epochs of each size), dotted along epochs on one corpus (hollow markers), the
    No-pretrain row as a horizontal line; each point is labelled with its setting."""
    import matplotlib.pyplot as plt

    from autogcl.viz import save_figure  # selects the Agg backend

    fig, axes = plt.subplots(1, len(datasets), figsize=(max(3.8 * len(datasets), 6.0), 4.2), squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        rows = sorted((s for (d, _), s in sums.items() if d == ds), key=order)
        corpus, epochs = sweeps(rows)
        for sel, marker, color in (("val", "o", "C0"), ("test_max", "s", "C1")):
            def draw(line, fmt, **kw):
                x = [seen(s) for s in line]
                ax.errorbar(x, [s[sel]["mean"] for s in line], yerr=[s[sel]["std"] for s in line], fmt=fmt,
                            color=color, capsize=3, **kw)
            if corpus:
                draw(corpus, marker + "-", label=f"{sel}: more molecules")
            for i, line in enumerate(epochs):  # its first point is on the corpus line already
                ax.plot([seen(s) for s in line], [s[sel]["mean"] for s in line], ":", color=color)
                draw(line[1:], marker, mfc="white", label=f"{sel}: more epochs" if i == 0 else None)
            base = [s for s in rows if seen(s) == 0]
            if base:
                ax.axhline(base[0][sel]["mean"], ls=(0, (1, 3)), color=color, lw=1,
                           label=f"{sel}: no pre-training")
        for s in corpus + [s for line in epochs for s in line[1:]]:
            ax.annotate(label(s), (seen(s), s["val"]["mean"]), textcoords="offset points", xytext=(5, -10),
                        fontsize=6.5, color="0.3")
        ax.set_xscale("log")
        ax.margins(x=0.2)  # room for the labels of the end points
        ax.set_title(ds)
        ax.set_xlabel("molecules seen in pre-training")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("ROC-AUC %")
    legend = {}  # every panel's series once, whichever panel has them
    for ax in axes[0]:
        for h, name in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(name, h)
    fig.legend(list(legend.values()), list(legend), fontsize=7, loc="lower center", ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.13, 1, 1))  # room for the legend below
    return save_figure(fig, out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=str(ROOT / "docs" / "results"),
                    help="where commands.tsv, summaries/sizes/ and the report go (default docs/results)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="pre-train and fine-tune (resumable)")
    r.add_argument("--pretrain", nargs="+", default=["none", "50000x2", "50000x8", "200000x2", "fullx1"],
                   help="settings: none, NxE (first N molecules, E epochs) or fullxE")
    r.add_argument("--datasets", default="clintox,bbbp,bace,sider", help="MoleculeNet names, comma-separated")
    r.add_argument("--seeds", type=int, default=3)
    r.add_argument("--epochs", type=int, default=100, help="fine-tuning epochs")
    r.add_argument("--out", default="runs/sizes")
    r.add_argument("--data-root", default=os.environ.get("AUTOGCL_DATA"))
    r.add_argument("--encoder", action="append", default=[], metavar="SETTING=PATH",
                   help="fine-tune this encoder for SETTING instead of pre-training it (its record must match "
                   "the study's pre-training of SETTING: molecules, epochs, options, corpus); repeatable")
    r.add_argument("--pretrain-opts", default="", help="more options of the pre-training commands (give as "
                   "--pretrain-opts='...')")
    r.add_argument("--units-from", metavar="FOLDER",
                   help="committed summaries folder (<tag>/<dataset>) whose finished units the study shares: "
                        "they are restored into its sweeps before fine-tuning, so --resume keeps them (e.g. "
                        "docs/results/summaries/paper/transfer: the transfer table's No-pretrain and fullx1 cells)")
    r.add_argument("--finetune-opts", default="--executor serial --cpus-per-unit 1",
                   help="more options of the fine-tuning commands; replaces the default (%(default)s)")
    rep = sub.add_parser("report", help="the table and figure from the published summaries")
    rep.add_argument("--reference", default="moses200000x2",
                     help="the sweep every other one is compared with (default: the 200k x 2 encoder's, %(default)s)")
    po = sub.add_parser("pool", help="seed-by-seed differences from a reference sweep, pooled over results folders")
    po.add_argument("folders", nargs="+", help="results folders (each with summaries/sizes/transfer), e.g. one per "
                    "device; the global --results is not used here")
    po.add_argument("--reference", default="moses200000x2", help="the sweep compared with (default %(default)s)")
    po.add_argument("--out", help="also write the table to this Markdown file")
    args = ap.parse_args(argv)
    return {"run": run, "report": report, "pool": pool}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
