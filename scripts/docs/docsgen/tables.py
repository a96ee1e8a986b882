"""The generated blocks of the README and docs/: each :class:`Table` renders, from the committed
files alone, the Markdown shown between ``<!-- autogcl:begin NAME -->`` and
``<!-- autogcl:end NAME -->`` of its document; :func:`regenerate` gives every document's
committed and regenerated text. Every table of runs names the code commit(s) they came from
(each published folder's ``provenance.json``; "commit not recorded" where a folder has none)."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from autogcl.errors import DataError
from autogcl.protocols import published
from autogcl.protocols.manifest import ABLATION_CELLS, CELLS, RESULTS, SEMI_CELLS, TRANSFER_CELLS, UNSUPERVISED_CELLS, \
    Cell
from autogcl.protocols.publishing import UNRECORDED
from autogcl.protocols.spread import SPREAD

from .molprop import MOLPROP, forest_weights_block, molprop_block, molprop_routes_block
from .perf import PERF, goals_block, perf_block
from .queue import queue_block, stale_block, unrecorded_block
from .semi_default import SEMI_DEFAULT, semi_default_block
from .tuned import TUNED, tuned_block


@dataclass(frozen=True)
class Table:
    """A generated block: ``render(root)`` is its Markdown, shown in ``doc`` between the markers
    named ``name``; ``command`` made the runs it reads (``runs``), ``paper`` names the paper's table."""

    name: str
    doc: str
    render: Callable[[Path], str] = field(compare=False)
    runs: tuple = ()
    command: str = ""
    paper: str = ""


# ---------------------------------------------------------------------------------------- commits


def folder_commit(folder: Path) -> str | None:
    """The code commit of a committed run folder: its ``provenance.json`` (written by
    ``autogcl reproduce``; "a + b" when its units ran at several commits, ``unit_commits``),
    else a ``commit`` its summary or result records; None if neither."""
    folder = Path(folder)
    for name in ("provenance.json", "summary.json", "result.json"):
        f = folder / name
        if f.is_file():
            try:
                data = json.loads(f.read_text(encoding="utf-8"))
                commit, several = data.get("commit"), data.get("unit_commits")
            except (json.JSONDecodeError, AttributeError):
                commit, several = None, None
            if several:  # UNRECORDED: units that predate their provenance.json
                return " + ".join("units without a commit" if c == UNRECORDED else str(c)[:12] for c in sorted(several))
            if commit:
                return str(commit)[:12]
    return None


def folder_device(folder: Path) -> str | None:
    """The device(s) a committed run folder ran on: its ``provenance.json``'s ``devices``
    ("cpu + cuda" for units of both), else ``cuda`` for a folder under ``summaries/gpu/`` (the
    lent GPUs' runs before provenance); None where nothing records it."""
    folder = Path(folder)
    try:
        devices = json.loads((folder / "provenance.json").read_text(encoding="utf-8")).get("devices") or []
    except (OSError, json.JSONDecodeError, AttributeError):
        devices = []
    kinds = sorted({str(d).split(":")[0] for d in devices if d})
    if kinds:
        return " + ".join(kinds)
    return "cuda" if "/summaries/gpu/" in f"/{folder.as_posix()}/" else None


def commits_line(folders) -> str:
    """"Code commit(s) of these runs: `abc` on cpu (N run folders); commit not recorded (M run
    folders ...)." over run folders: each commit with the device(s) its folders ran on."""
    counts = Counter((folder_commit(f), folder_device(f)) for f in folders)
    if not counts:
        return "Code commit(s): no run yet."
    parts = [f"`{c}` on {d or 'a device not recorded'} ({n} run folder{'s' if n > 1 else ''})"
             for (c, d), n in sorted((k, v) for k, v in counts.items() if k[0])]
    bare = Counter()  # folders without a commit, by device ("" where none is recorded either)
    for (c, d), n in counts.items():
        if not c:
            bare[d or ""] += n
    for d, n in sorted(bare.items()):
        folders_n = f"{n} run folder{'s' if n > 1 else ''}: they predate provenance.json"
        parts.append(f"commit not recorded, on {d} ({folders_n})" if d else f"commit and device not recorded ({folders_n})")
    return "Code commit(s) of these runs: " + "; ".join(parts) + "."


# ----------------------------------------------------------------------------------------- tables


def _cell_values(cell: Cell, root: Path) -> tuple[str, str, str, str]:
    """(count, val, test_max, source) of a cell; "not run" naming the folder when it has no run."""
    hit = cell.found(root)
    if hit is None:
        return "-", "not run", "not run", f"not run: `{cell.runs[0]}`"
    folder, s = hit
    n = cell.count(s)
    count = f"{n} of {cell.seeds}" if cell.seeds and n < cell.seeds else str(n)
    return count, _one_or_spread(s["val"]), _one_or_spread(s["test_max"]), f"`{folder}`"


def _one_or_spread(d: dict) -> str:
    """``mean ± std`` (:func:`autogcl.protocols.report._ms`), or, for a single run, its score and
    "1 run: no ±" (a std over one run is no spread)."""
    from autogcl.protocols.report import _ms

    if len(d.get("values") or ()) == 1 and not d.get("undefined") and d["mean"] == d["mean"]:
        return f"{d['mean']:.2f} (1 run: no ±)"
    return _ms(d)


def cells_table(cells, head: tuple[str, str], unit: str) -> Callable[[Path], str]:
    """A table with one row per cell: its labels, the count of results, both selections, the
    paper's figure and the run folder it comes from; under it, the code commit(s) of those runs."""

    def render_cells(root: Path) -> str:
        lines = [f"| {head[0]} | {head[1]} | {unit} | val (ours) | test_max (ours) | paper (test_max) | run folder |",
                 "|---|---|---|---|---|---|---|"]
        folders = []
        for c in cells:
            count, val, tmax, src = _cell_values(c, root)
            lines.append(f"| {c.label[0]} | {c.label[1]} | {count} | {val} | {tmax} | {published.fmt(c.paper)} | {src} |")
            hit = c.found(root)
            if hit:
                folders.append(Path(root) / hit[0])
        return "\n".join(lines) + "\n\n" + commits_line(folders)

    return render_cells


def report_block(*folders: str) -> Callable[[Path], str]:
    """``autogcl report`` over committed summary folders (every summary below them), and the
    code commit(s) of those runs."""

    def render_report(root: Path) -> str:
        from autogcl.protocols.report import collect, render

        runs = sorted({f.parent for d in folders for f in (Path(root) / d).rglob("summary.json")})
        return render(collect([Path(root) / f for f in folders])) + "\n\n" + commits_line(runs)

    return render_report


def views_block(root: Path) -> str:
    """The MNIST view figure's runs (``docs/results/views_MNIST/seed*.json``, each a run's
    ``result.json``, whose ``code_commit`` names the code that ran it): per seed the view
    accuracy, the test accuracy on original graphs and each view's kept share of strokes
    (superpixels of mean intensity >= 0.5) and of the other superpixels, on the test graphs."""
    files = sorted((Path(root) / RESULTS / "views_MNIST").glob("seed*.json"))
    if not files:
        return f"not run: no `{RESULTS}/views_MNIST/seed*.json`"

    def pct(x):
        return f"{100 * x:.1f}%"

    lines = ["| run | view accuracy, validation / test | test accuracy, original graphs | view 1: strokes / other kept "
             "| view 2: strokes / other kept | GraphCL node drop 0.2: strokes / other kept | wall_s |",
             "|---|---|---|---|---|---|---|"]
    commits = Counter()
    for f in files:
        d = json.loads(f.read_text(encoding="utf-8"))
        commits[d.get("code_commit")] += 1  # a run's result.json names the commit that ran it
        k = d["kept_shares"]
        views = [k.get(v) for v in ("AutoGCL view 1", "AutoGCL view 2", "GraphCL node drop 0.2")]
        cells = [f"{pct(v['high_intensity_kept'])} / {pct(v['other_kept'])}" if v else "-" for v in views]
        lines.append(f"| `{f.relative_to(root).as_posix()}` | {pct(d['val_view_acc'])} / {pct(d['view_acc'])} | "
                     f"{pct(d['test_acc'])} | " + " | ".join(cells) + f" | {d['wall_s']:.0f} |")
    named = [_short_commit(c) for c in commits if c]
    said = "; ".join(named + (["commit not recorded (the runs predate it)"] if commits.get(None) else []))
    return "\n".join(lines) + f"\n\nCode commit(s) of these runs: {said}."


#: the two loss forms' committed summaries: the paper form's are the tables' own
PAPER_FORM, RELEASED_FORM = f"{RESULTS}/summaries/unsupervised", f"{RESULTS}/summaries/lossforms/unsupervised"
#: the paper form's COLLAB cell as the loss-form decision read it, kept when the cell was rerun
DECISION = f"{RESULTS}/summaries/lossforms_decision/unsupervised"


def _loss_forms(root: Path, paper: str, checks: bool) -> str:
    """The paired comparison of the paper form's summaries under ``paper`` with the released form's
    (``scripts/studies/compare_runs.py``), with its two robust checks if ``checks``, and the code
    commits of the folders paired."""
    import compare_runs  # scripts/studies/compare_runs.py (scripts/ is on the path of docs.py)

    a, b = (compare_runs.sweeps(Path(root) / d) for d in (paper, RELEASED_FORM))
    labels = ("paper", "released")
    runs = sorted(Path(root) / d / tag for d in (paper, RELEASED_FORM) for _, tag in set(a) & set(b))
    out = compare_runs.table(a, b, labels) + "\n\n"
    if checks:
        out += "```\n" + "\n".join(compare_runs.robust(a, b, labels)) + "\n```\n\n"
    return out + commits_line(runs)


def loss_forms_block(root: Path) -> str:
    """The two loss forms over every dataset both have run, with the robust checks."""
    return _loss_forms(root, PAPER_FORM, checks=True)


def loss_forms_decision_block(root: Path) -> str:
    """The pair the loss-form decision read on COLLAB: the paper form's runs of that time (the copy
    under ``DECISION``) against the released form's."""
    return _loss_forms(root, DECISION, checks=False)


# ----------------------------------------------------------------------------------------- manifest

SPREAD_NOTE = ("± is the {} of each cell; `val`: the epoch chosen on data that is not the test fold; "
               "`test_max`: the best test score over epochs (the published protocol). A count below the "
               "paper's (\"3 of 10\") is a partial cell, queued in [gpu_queue.md]({}).")


def _with_note(fn, protocol: str, queue_link: str):
    def rendered(root: Path) -> str:
        return fn(root) + "\n\n" + SPREAD_NOTE.format(SPREAD[protocol], queue_link)
    return rendered


README_CELLS = tuple(c for c in UNSUPERVISED_CELLS if c.label[0] in ("MUTAG", "PROTEINS", "NCI1"))



def _paper_table(name: str, cells, head: tuple[str, str], unit: str, protocol: str, command: str, paper: str,
                 doc: str = "docs/results.md", queue: str = "results/gpu_queue.md") -> Table:
    """A table of the manifest's cells, with the note on its ± and the queue."""
    return Table(name, doc, _with_note(cells_table(cells, head, unit), protocol, queue),
                 tuple(r for c in cells for r in c.runs), command, paper)


#: the molecule regression example's records (``scripts/studies/regression_logp.py --out``), in order:
#: bbbp (the first and the pilots' set), then the larger tox21 when it was run
REGRESSION_RECORDS = ("regression_logp.json", "regression_logp_tox21.json")


SUITE = f"{RESULTS}/suite"


def _short_commit(commit) -> str:
    """A record's commit, short, keeping its mark of uncommitted changes; "-" when none."""
    if not commit:
        return "-"
    dirty = str(commit).endswith("+") or str(commit).endswith("+dirty")
    return f"`{str(commit).split('+')[0][:12]}{'+' if dirty else ''}`"


def suite_block(root: Path) -> str:
    """The recorded runs of the whole test suite away from its usual setting (``docs/results/suite/*.json``,
    written by ``scripts/suite/suite_record.py``): where each ran, under what, and what passed, failed
    and skipped; a failed or erroring test is named."""
    files = sorted((Path(root) / SUITE).glob("*.json"))
    if not files:
        return f"not run: no `{SUITE}/*.json` (python scripts/suite/suite_record.py)"
    rows, failures = [], []
    for f in files:
        d = json.loads(f.read_text(encoding="utf-8"))
        m = d["machine"]
        where = f"{m['cpu']}, {m['cores']} cores" + (f", {m['cuda']}" if m.get("cuda") else "")
        env = ", ".join(f"`{k}={v}`" for k, v in d.get("env", {}).items()) or "-"
        args = " ".join(d.get("pytest_args", [])) or "-"
        counts = " | ".join(str(d.get(k, "-")) for k in ("passed", "failed", "errors", "skipped"))
        cut = f" ({d['cut']}" + (f"; counts from {d['counts_from']}" if d.get("counts_from") else "") + ")" \
            if d.get("cut") else ""
        rows.append(f"| `{f.name}` | {d['date']} | {where} | {m.get('aten_cpu_capability') or '-'} | {env} | "
                    f"`{args}` | {counts} | {d['exit_code']}{cut} | {_short_commit(d.get('commit'))} |")
        failures += [f"- `{f.name}`: `{x['test']}` ({x['kind']}): {x['message']}" for x in d.get("failures", [])]
    head = ("| record | date | machine | ATen CPU capability | environment | pytest arguments | passed | failed | "
            "errors | skipped | exit code | code commit |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
    tail = ["", "Failed or erroring tests:", *failures] if failures else ["", "No test failed or erred in these runs."]
    return "\n".join([head, *rows, *tail, *_slowest(files)])


def _slowest(files: list[Path], n: int = 10) -> list[str]:
    """The ``n`` slowest tests of the newest record that lists them (setup, call and teardown
    together), with its whole pytest time: where the suite's time goes."""
    records = [(d["date"], f.name, d) for f in files if (d := json.loads(f.read_text(encoding="utf-8"))).get("slowest")]
    if not records:
        return []
    date, name, d = max(records, key=lambda r: r[:2])
    wall = f", {d['wall_s']:.0f} s of pytest in all" if d.get("wall_s") else ""
    lines = ["", f"The {min(n, len(d['slowest']))} slowest tests of the newest record (`{name}`, {date}{wall}):"]
    return lines + [f"- `{x['test']}`: {x['s']:.1f} s" for x in d["slowest"][:n]]


def regression_block(root: Path) -> str:
    """The molecule regression example's runs (``docs/results/regression_logp*.json``, written by
    ``scripts/studies/regression_logp.py``), one table per record (:data:`REGRESSION_RECORDS`; the first
    is required, the others shown when committed), then the pilots that chose the settings."""
    if not (Path(root) / RESULTS / REGRESSION_RECORDS[0]).is_file():
        return f"not run: no `{RESULTS}/{REGRESSION_RECORDS[0]}` (python scripts/studies/regression_logp.py)"
    parts = [regression_record(root, name) for name in REGRESSION_RECORDS
             if (Path(root) / RESULTS / name).is_file()]
    return "\n\n".join(parts) + "\n" + "\n".join(regression_pilots(root))


def regression_record(root: Path, name: str) -> str:
    """One record's data, settings and split, and the held-out RMSE, MAE and R² of the shipped
    encoder, of the same recipe from random weights and (when run) on a random split."""
    d = json.loads((Path(root) / RESULTS / name).read_text(encoding="utf-8"))
    runs = [(f"{d['encoder']} (pre-trained)", d)]
    runs += [(label, d[key]) for key, label in (("from_scratch", "random weights (no pre-training)"),
                                                ("random_split", f"{d['encoder']}, random split")) if key in d]
    rows = []
    for label, r in runs:
        sizes, t, v = r["split_sizes"], r["test"], r["valid"]
        rows.append(f"| {label} | {sizes['train']} / {sizes['valid']} / {sizes['test']} | {r['split']} | "
                    f"{d['epochs']} ({r['selected_epoch']}) | {t['r2']:.3f} | {t['rmse']:.3f} | {t['mae']:.3f} | "
                    f"{v['r2']:.3f} | {r['train_time_s']:.0f} s |")
    readout = d.get("readout", "mean")
    if d.get("readout_scale"):
        readout += f" (divided by {d['readout_scale']:.1f}, the training molecules' mean atom count)"
    settings = (f"dropout {d.get('dropout', 0.5)}, lr {d.get('lr', 0.001)} ({d.get('lr_schedule', 'constant')}), "
                f"{readout} readout, {d.get('bn_stats', 'running')} BatchNorm statistics")
    return "\n".join([
        f"Target: {d['target']} of {d['dataset']} (std {d['target_std']:.2f}); {settings}; selection: "
        f"{d['selection']}; {d.get('jobs', 1)} run(s) at a time, {d['torch_threads']} torch thread each, on "
        f"{d['runtime']['device']}; code {d['code_commit']}.",
        "",
        "| encoder | molecules (train / valid / test) | split | epochs (kept) | test R² | test RMSE | test MAE "
        "| valid R² | time |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"From `{RESULTS}/{name}`, made by `{d['command']}`."])


def regression_pilots(root: Path) -> list[str]:
    """The settings tried before the regression run, with their validation scores only
    (``docs/results/regression_logp_pilots.json``, ``scripts/studies/regression_pilots.py``): empty
    when there is no such file."""
    f = Path(root) / RESULTS / "regression_logp_pilots.json"
    if not f.is_file():
        return []
    rows = []
    for p in json.loads(f.read_text(encoding="utf-8"))["pilots"]:
        s, val = p["settings"], [r["val_r2"] for r in p["history"]]
        best = max(range(len(val)), key=lambda i: val[i])
        rows.append(f"| {s['readout']} | {s['dropout']} | {s['lr']} | {s['lr_schedule']} | {s['bn_stats']} | "
                    f"{p['epochs']} | {val[best]:.3f} ({p['history'][best]['epoch']}) | {sum(val[-3:]) / len(val[-3:]):.3f} | "
                    f"{p['history'][-1]['loss']:.3f} |")
    return ["", "The settings tried first (pre-trained encoder, scaffold split, seed 0; validation scores only, the "
            "test part unread), in the order they were run:", "",
            "| readout | dropout | lr | schedule | BatchNorm statistics | epochs | best valid R² (epoch) "
            "| valid R², mean of the last 3 epochs | last training loss (standardised) |",
            "|---|---|---|---|---|---|---|---|---|", *rows, "",
            f"From `{RESULTS}/regression_logp_pilots.json` (`python scripts/studies/regression_pilots.py`; each pilot's "
            "command is in the file)."]


TABLES = (
    _paper_table("readme-unsupervised", README_CELLS, ("dataset", "method"), "seeds", "unsupervised",
                 "bash scripts/docs/tables.sh (autogcl unsupervised --seeds 5, one torch thread per unit)",
                 "Table 2 (unsupervised, test_max)", doc="README.md", queue="docs/results/gpu_queue.md"),
    _paper_table("paper-unsupervised", UNSUPERVISED_CELLS, ("dataset", "method"), "seeds", "unsupervised",
                 "bash scripts/docs/tables.sh", "Table 2"),
    _paper_table("paper-semi", SEMI_CELLS, ("dataset", "row"), "folds", "semi", "bash scripts/docs/tables.sh", "Table 3"),
    _paper_table("paper-transfer", TRANSFER_CELLS, ("dataset", "pre-training"), "seeds", "transfer",
                 "python scripts/studies/transfer_sizes.py run (3 seeds, 100 epochs, CPU); the paper's 10 seeds: the queue",
                 "Table 4"),
    _paper_table("paper-ablation", ABLATION_CELLS, ("dataset", "node-drop ratio"), "folds", "semi",
                 ABLATION_CELLS[0].command, "appendix, node-drop ratios"),
    Table("unsupervised", f"{RESULTS}/unsupervised.md", report_block(f"{RESULTS}/summaries/unsupervised"),
          (f"{RESULTS}/summaries/unsupervised",), "bash scripts/docs/tables.sh", "Table 2"),
    Table("semi", f"{RESULTS}/semi.md", report_block(f"{RESULTS}/summaries/semi"),
          (f"{RESULTS}/summaries/semi",), "bash scripts/docs/tables.sh", "Table 3"),
    Table("gpu-unsupervised", f"{RESULTS}/gpu_unsupervised.md", report_block(f"{RESULTS}/summaries/gpu/unsupervised"),
          (f"{RESULTS}/summaries/gpu/unsupervised",), "bash scripts/gpu/gpu_runs.sh tu", "Table 2"),
    Table("gpu-transfer", f"{RESULTS}/gpu_transfer.md", report_block(f"{RESULTS}/summaries/gpu/transfer"),
          (f"{RESULTS}/summaries/gpu/transfer",), "bash scripts/gpu/gpu_runs.sh finetune", "Table 4"),
    Table("loss-forms", f"{RESULTS}/loss_forms.md", loss_forms_block, (PAPER_FORM, RELEASED_FORM),
          f"python scripts/studies/compare_runs.py {PAPER_FORM} {RELEASED_FORM} --labels paper,released", ""),
    Table("loss-forms-decision", f"{RESULTS}/loss_forms.md", loss_forms_decision_block, (DECISION, RELEASED_FORM),
          f"python scripts/studies/compare_runs.py {DECISION} {RELEASED_FORM} --labels paper,released", ""),
    Table("regression-logp", "docs/api.md", regression_block,
          (*(f"{RESULTS}/{name}" for name in REGRESSION_RECORDS), f"{RESULTS}/regression_logp_pilots.json"),
          "OMP_NUM_THREADS=1 python scripts/studies/regression_logp.py", ""),
    Table("views-mnist", "docs/tutorial.md", views_block, (f"{RESULTS}/views_MNIST",),
          "OMP_NUM_THREADS=1 autogcl visualize views --data-root ../shared/data --seed S", "Figure (views on MNIST)"),
    Table("performance", "docs/performance.md", perf_block, (PERF,), "python benchmarks/engine.py", ""),
    Table("goals", "docs/performance.md", goals_block, (PERF,), "python benchmarks/engine.py", ""),
    Table("suite", "docs/reliability.md", suite_block, (SUITE,), "python scripts/suite/suite_record.py", ""),
    Table("queue", f"{RESULTS}/gpu_queue.md", queue_block, tuple(r for c in CELLS for r in c.runs),
          "autogcl reproduce --missing", "Tables 2-4"),
    Table("queue-stale", f"{RESULTS}/gpu_queue.md", stale_block, tuple(r for c in CELLS for r in c.runs),
          "autogcl reproduce --stale", "Tables 2-4"),
    Table("queue-unrecorded", f"{RESULTS}/gpu_queue.md", lambda root: unrecorded_block(root, TABLES),
          (f"{RESULTS}/summaries",), "the command of each folder (docs/results/commands.tsv)", ""),
    Table("queue-goals", f"{RESULTS}/gpu_queue.md", goals_block, (PERF,), "python benchmarks/engine.py", ""),
    Table("molprop", "docs/molecules.md", molprop_block, (MOLPROP,), "python benchmarks/molprop.py", ""),
    Table("molprop-routes", "docs/molecules.md", molprop_routes_block, (MOLPROP,), "python benchmarks/molprop.py", ""),
    Table("molprop-forest-weights", "docs/molecules.md", forest_weights_block, (MOLPROP,),
          "python scripts/studies/forest_class_weight.py", ""),
    Table("tuned", f"{RESULTS}/tuned.md", tuned_block, (TUNED,), "autogcl tune --out docs/results/tuned", ""),
    Table("semi-default", "docs/api.md", semi_default_block, (SEMI_DEFAULT,), "python scripts/studies/semi_default.py",
          ""),
)


# ------------------------------------------------------------------------------------- regeneration

MARK = "<!-- autogcl:{} {} -->"


def _block(name: str) -> re.Pattern:
    return re.compile(re.escape(MARK.format("begin", name)) + r"\n.*?" + re.escape(MARK.format("end", name)), re.S)


def regenerate(root: Path, tables=TABLES) -> dict[str, tuple[str, str]]:
    """doc -> (committed text, regenerated text) for every document of ``tables``. A document
    that lacks a table's markers is a :class:`DataError` naming both."""
    root = Path(root)
    docs: dict[str, tuple[str, str]] = {}
    for t in tables:
        path = root / t.doc
        if t.doc not in docs:
            if not path.is_file():
                raise DataError(f"{t.doc}: no such document (the manifest shows table {t.name!r} there)")
            text = path.read_text(encoding="utf-8")
            docs[t.doc] = (text, text)
        old, new = docs[t.doc]
        pattern = _block(t.name)
        if not pattern.search(new):
            raise DataError(f"{t.doc}: no markers {MARK.format('begin', t.name)} ... {MARK.format('end', t.name)} "
                            f"for table {t.name!r}")
        body = t.render(root).rstrip("\n")
        block = f"{MARK.format('begin', t.name)}\n{body}\n{MARK.format('end', t.name)}"
        docs[t.doc] = (old, pattern.sub(lambda _: block, new, count=1))
    return docs


