"""The manifest of every published table: which committed run folders fill it, the command that
makes them, where it is shown (a document and a marker name) and the paper's figure beside it.

``python scripts/docs.py`` renders each :class:`Table` between the markers
``<!-- autogcl:begin NAME -->`` and ``<!-- autogcl:end NAME -->`` of its document, from the
committed files alone; ``--check`` says which documents differ from their regeneration. A
:class:`Cell` whose run folder holds no summary yet says "not run" and names the folder; the
cells that need more compute than the project's 2-core machine are its queue
(``docs/results/gpu_queue.md``, ``autogcl reproduce --missing``). Performance figures come from
the benchmark files of ``docs/results/perf/`` (written by ``benchmarks/engine.py``), and the
engine's goals (:data:`GOALS`) are "reached" or "missing" only from them.

Everything here reads JSON and writes Markdown: no torch.
"""

from __future__ import annotations

from ..choices import AUG_NODE_DROP, FP32
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import DataError
from . import published
from .spread import SPREAD

RESULTS = "docs/results"
DATA = "../shared/data"
TU = ("MUTAG", "PROTEINS", "IMDB-BINARY", "NCI1", "DD", "REDDIT-BINARY", "COLLAB")
MOLECULENET = ("bbbp", "tox21", "toxcast", "sider", "clintox", "muv", "hiv", "bace")
SEMI_ROWS = ("labeled", "graphcl_cl", "naive", "joint")
#: datasets whose cells need more compute than the 2-core machine (the queue)
BIG_SEMI = ("DD", "REDDIT-BINARY", "COLLAB")



# ------------------------------------------------------------------------------------------ cells


@dataclass(frozen=True)
class Cell:
    """One published cell. ``runs``: committed folders (relative to the repository), the first
    holding ``file`` fills the cell; ``out``: where ``command`` writes the sweep (``runs/...``),
    published into ``runs[0]`` by :func:`publish`. ``seeds``: how many seeds (or seed x fold
    results) the paper's cell needs: a summary with fewer is shown but stays in the queue.
    ``compute``: ``cpu`` (fits the 2-core machine) or ``gpu`` (the queue of gpu_queue.md)."""

    protocol: str
    label: tuple
    runs: tuple
    out: str
    command: str
    paper: tuple | None = None
    seeds: int = 0
    compute: str = "cpu"
    file: str = "summary.json"

    def found(self, root: Path) -> tuple[Path, dict] | None:
        """(folder, summary) of the first committed run folder holding the cell's file."""
        for run in self.runs:
            f = Path(root) / run / self.file
            if f.is_file():
                data = json.loads(f.read_text(encoding="utf-8"))
                if self.file == "summary.json":
                    from .report import check_summary  # report reads files with torch's atomic helpers

                    data = check_summary(f, data)
                return Path(run), data
        return None

    def count(self, s: dict) -> int:
        return s.get("n_folds", s.get("n_seeds", 0)) if self.protocol == "semi" else s.get("n_seeds", 0)

    def status(self, root: Path) -> str:
        """``done``, ``partial`` (fewer seeds than the paper's) or ``missing``."""
        hit = self.found(root)
        if hit is None:
            return "missing"
        return "partial" if self.seeds and self.count(hit[1]) < self.seeds else "done"


def _unsup_cell(ds: str, method: str) -> Cell:
    tag = f"{ds}-autogcl" if method == "autogcl" else f"{ds}-graphcl-random4"
    runs = [f"{RESULTS}/summaries/unsupervised/{tag}"]
    if ds in ("DD", "REDDIT-BINARY"):  # their GPU runs (docs/results/gpu.md)
        runs.append(f"{RESULTS}/summaries/gpu/unsupervised/{tag}")
    big = method == "graphcl" and ds in ("COLLAB", "REDDIT-BINARY")
    dev = " --device cuda" if big else ""
    return Cell("unsupervised", (ds, method), tuple(runs), f"runs/tables/unsupervised/{tag}",
                f"autogcl unsupervised --dataset {ds} --method {method} --seeds 5 --data-root {DATA} "
                f"--out runs/tables/unsupervised --resume{dev}",
                published.UNSUPERVISED.get((method, ds)), seeds=5, compute="gpu" if big else "cpu")


def _semi_cell(ds: str, row: str) -> Cell:
    big = ds in BIG_SEMI and not (ds == "DD" and row in ("labeled", "graphcl_cl"))
    dev = " --device cuda" if big else ""
    return Cell("semi", (ds, row), (f"{RESULTS}/summaries/semi/{ds}-{row}",), f"runs/tables/semi/{ds}-{row}",
                f"autogcl semi --dataset {ds} --row {row} --seeds 1 --data-root {DATA} --out runs/tables/semi "
                f"--resume{dev}", published.SEMI.get((row, ds)), seeds=10, compute="gpu" if big else "cpu")


ENCODER = "pretrained/autogcl-moses-fullx1.pt"


def _transfer_cell(ds: str, pre: str) -> Cell:
    tag = "mosesfullx1" if pre == "autogcl" else "no_pretrain"
    ckpt = f" --checkpoint {ENCODER} --tag {tag}" if pre == "autogcl" else ""
    runs = [f"{RESULTS}/summaries/paper/transfer/{tag}/{ds}"]
    runs.append(f"{RESULTS}/summaries/sizes/transfer/{tag}/{ds}")  # the size study: 3 seeds, CPU
    pub = published.TRANSFER.get(("autogcl" if pre == "autogcl" else "no_pretrain", ds))
    return Cell("transfer", (ds, pre), tuple(runs), f"runs/paper/transfer/{tag}/{ds}",
                f"autogcl transfer finetune --dataset {ds} --seeds 10 --epochs 100{ckpt} --data-root {DATA} "
                f"--out runs/paper/transfer --resume --device cuda", pub, seeds=10, compute="gpu")


UNSUPERVISED_CELLS = tuple(_unsup_cell(d, m) for d in TU for m in ("autogcl", "graphcl"))
SEMI_CELLS = tuple(_semi_cell(d, r) for d in TU for r in SEMI_ROWS)
TRANSFER_CELLS = tuple(_transfer_cell(d, p) for d in MOLECULENET for p in ("none", "autogcl"))
PRETRAIN_CELLS = (
    Cell("pretrain", ("MOSES, whole corpus", "20 epochs"), (f"{RESULTS}/summaries/paper/pretrain/moses-fullx20",),
         "runs/pretrain/autogcl-moses-fullx20",
         f"autogcl transfer pretrain --data-root {DATA} --epochs 20 --device cuda "
         "--out runs/pretrain/autogcl-moses-fullx20 --resume", compute="gpu", file="result.json"),
)
ABLATION_CELLS = tuple(
    Cell("semi", ("NCI1", f"node_drop {r:g}"), (f"{RESULTS}/summaries/ablation/aug-node_drop-r{r:g}/NCI1-graphcl_cl",),
         f"runs/ablate/aug-node_drop-r{r:g}/NCI1-graphcl_cl",
         f"autogcl ablate graphcl-aug --dataset NCI1 --augs node_drop --data-root {DATA} --out runs/ablate --resume",
         (v, None), seeds=10)
    for r, v in zip(published.ABLATION_RATIOS, published.ABLATION_RATIO[("NCI1", AUG_NODE_DROP)]))
#: every cell the manifest knows
CELLS = UNSUPERVISED_CELLS + SEMI_CELLS + TRANSFER_CELLS + PRETRAIN_CELLS + ABLATION_CELLS


# ----------------------------------------------------------------------------------------- tables


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


def _cell_values(cell: Cell, root: Path) -> tuple[str, str, str, str]:
    """(count, val, test_max, source) of a cell; "not run" naming the folder when it has no run."""
    from .report import _ms

    hit = cell.found(root)
    if hit is None:
        return "-", "not run", "not run", f"not run: `{cell.runs[0]}`"
    folder, s = hit
    n = cell.count(s)
    count = f"{n} of {cell.seeds}" if cell.seeds and n < cell.seeds else str(n)
    return count, _ms(s["val"]), _ms(s["test_max"]), f"`{folder}`"


def cells_table(cells, head: tuple[str, str], unit: str) -> Callable[[Path], str]:
    """A table with one row per cell: its labels, the count of results, both selections, the
    paper's figure and the run folder it comes from."""

    def render_cells(root: Path) -> str:
        lines = [f"| {head[0]} | {head[1]} | {unit} | val (ours) | test_max (ours) | paper (test_max) | run folder |",
                 "|---|---|---|---|---|---|---|"]
        for c in cells:
            count, val, tmax, src = _cell_values(c, root)
            lines.append(f"| {c.label[0]} | {c.label[1]} | {count} | {val} | {tmax} | {published.fmt(c.paper)} | {src} |")
        return "\n".join(lines)

    return render_cells


def report_block(*folders: str) -> Callable[[Path], str]:
    """``autogcl report`` over committed summary folders (every summary below them)."""

    def render_report(root: Path) -> str:
        from .report import collect, render

        return render(collect([Path(root) / f for f in folders]))

    return render_report


def views_block(root: Path) -> str:
    """The MNIST view figure's runs (``docs/results/views_MNIST/seed*.json``): per seed the view
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
    for f in files:
        d = json.loads(f.read_text(encoding="utf-8"))
        k = d["kept_shares"]
        views = [k.get(v) for v in ("AutoGCL view 1", "AutoGCL view 2", "GraphCL node drop 0.2")]
        cells = [f"{pct(v['high_intensity_kept'])} / {pct(v['other_kept'])}" if v else "-" for v in views]
        lines.append(f"| `{f.relative_to(root).as_posix()}` | {pct(d['val_view_acc'])} / {pct(d['view_acc'])} | "
                     f"{pct(d['test_acc'])} | " + " | ".join(cells) + f" | {d['wall_s']:.0f} |")
    return "\n".join(lines)


# -------------------------------------------------------------------------------------- performance

PERF = f"{RESULTS}/perf"


def perf_files(root: Path) -> list[tuple[Path, dict]]:
    """Every benchmark file of ``docs/results/perf/``, checked for the fields the tables read."""
    out = []
    for f in sorted((Path(root) / PERF).glob("*.json")):
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DataError(f"{f}: not JSON ({exc})") from exc
        missing = [k for k in ("benchmark", "command", "machine", "device", "threads", "date", "rows") if k not in doc]
        if missing or not isinstance(doc.get("rows"), list):
            raise DataError(f"{f}: not a benchmark file of benchmarks/engine.py (missing: {', '.join(missing) or 'rows'})")
        out.append((f, doc))
    return out


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 100 else f"{v:,.0f}"
    return str(v)


def perf_block(root: Path) -> str:
    """One section per benchmark file: its command, machine, device, threads, torch, date, then
    its rows (every field they have)."""
    files = perf_files(root)
    if not files:
        return f"not run: no benchmark file in `{PERF}/` (`python benchmarks/engine.py --data-root {DATA}`)"
    parts = []
    for f, doc in files:
        rel = f.relative_to(root).as_posix()
        head = [f"#### {doc['benchmark']} (`{rel}`)", "",
                f"`{doc['command']}`; machine: {doc['machine']}; device: {doc['device']}; threads: {doc['threads']}; "
                f"torch {doc.get('torch', '?')}; {doc['date']}." + (f" {doc['note']}." if doc.get("note") else "")]
        keys = list(dict.fromkeys(k for r in doc["rows"] for k in r))
        rows = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        rows += ["| " + " | ".join(_fmt(r.get(k, "")) for k in keys) + " |" for r in doc["rows"]]
        parts.append("\n".join(head + [""] + rows))
    return "\n\n".join(parts)


@dataclass(frozen=True)
class Goal:
    """An engine goal (issue 34): the ``field`` of the rows of benchmark ``benchmark`` (on a
    device whose name starts with ``device``) that match ``where``, against ``threshold``
    (``direction`` ``<=`` or ``>=``). ``threshold`` is a number, or a row selector of the same
    file whose ``field`` is the threshold (e.g. the baseline's rows). ``agg``: ``all`` (every
    matching row must pass; the worst is shown) or ``best`` (the best row)."""

    name: str
    benchmark: str
    device: str
    where: dict
    field: str
    threshold: float | dict
    direction: str = "<="
    agg: str = "all"
    threads: int | None = None  # only files measured at this many torch threads

    def measure(self, root: Path) -> tuple[str, str, str]:
        """(value, threshold, status) with status ``reached``, ``missing`` or ``not measured``."""
        for f, doc in perf_files(root):
            if doc["benchmark"] != self.benchmark or not str(doc["device"]).startswith(self.device):
                continue
            if self.threads is not None and doc.get("threads") != self.threads:
                continue
            rows = [r for r in doc["rows"] if all(r.get(k) == v for k, v in self.where.items()) and self.field in r]
            if not rows:
                continue
            limit = self.threshold
            if isinstance(limit, dict):
                ref = [r[self.field] for r in doc["rows"] if all(r.get(k) == v for k, v in limit.items())
                       and self.field in r]
                if not ref:
                    continue
                limit = ref[0]
            values = [r[self.field] for r in rows]
            lower_better = self.direction == "<="
            pick = (max if lower_better else min) if self.agg == "all" else (min if lower_better else max)
            v = pick(values)
            ok = v <= limit if lower_better else v >= limit
            src = f.relative_to(root).as_posix()
            return f"{_fmt(float(v))} (`{src}`)", f"{self.direction} {_fmt(float(limit))}", "reached" if ok else "missing"
        limit = self.threshold
        if isinstance(limit, dict):
            limit = "the row " + ", ".join(f"{k}={v}" for k, v in limit.items())
        else:
            limit = _fmt(float(limit))
        return "-", f"{self.direction} {limit}", "not measured"


THIS = {"code": "this"}
GOALS = (
    Goal("pre-training throughput on an H100, molecules/s", "pretrain_throughput", "cuda", {**THIS, "width": 300},
         "molecules_per_s", 20000.0, ">=", agg="best"),
    Goal("DD AutoGCL epoch on a GPU, s", "tu_epochs", "cuda", {**THIS, "dataset": "DD", "method": "autogcl"},
         "s_per_epoch", 0.2),
    Goal("whole unsupervised table on a GPU, s", "unsupervised_table", "cuda", {}, "wall_s", 1800.0),
    Goal("whole transfer table on a GPU, s", "transfer_table", "cuda", {}, "wall_s", 3600.0),
    Goal("CPU pre-training step at width 8 (1 thread), ms", "pretrain_throughput", "cpu",
         {**THIS, "width": 8, "precision": FP32, "compile": False}, "step_ms", 12.0, threads=1),
    Goal("CPU operations per pre-training step", "pretrain_ops", "cpu", THIS, "ops_per_step", 1000.0),
    Goal("CPU full-size throughput against 881293c (2 threads), molecules/s", "pretrain_throughput", "cpu",
         {**THIS, "width": 300, "precision": FP32, "compile": False}, "molecules_per_s",
         {"code": "baseline", "width": 300}, ">=", threads=2),
    Goal("CPU AutoGCL epoch on PROTEINS, plain GIN epochs", "tu_epochs", "cpu",
         {**THIS, "dataset": "PROTEINS", "method": "autogcl"}, "plain_epochs", 2.0),
    Goal("CPU AutoGCL epoch on NCI1, plain GIN epochs", "tu_epochs", "cpu",
         {**THIS, "dataset": "NCI1", "method": "autogcl"}, "plain_epochs", 2.0),
    Goal("CPU PROTEINS seed (30 epochs + SVM), plain GIN epochs", "tu_seed", "cpu", THIS, "plain_epochs", 80.0),
    Goal("CPU peak RSS over the import floor, MB", "tu_memory", "cpu", THIS, "over_floor_mb", 150.0),
)


def goals_block(root: Path) -> str:
    lines = ["| goal | measured | goal | status | reads |", "|---|---|---|---|---|"]
    for g in GOALS:
        value, limit, status = g.measure(root)
        where = ", ".join(f"{k}={v}" for k, v in g.where.items()) or "every row"
        reads = f"`{g.field}` of benchmark `{g.benchmark}` on {g.device}, rows {where}" + (
            " (the best)" if g.agg == "best" else " (the worst)")
        lines.append(f"| {g.name} | {value} | {limit} | {status} | {reads} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------- queue


def queue_block(root: Path) -> str:
    """Every cell that is not done: the GPU queue first, then what fits the CPU machine."""
    lines = ["| where | protocol | cell | state | committed run folder | command |", "|---|---|---|---|---|---|"]
    seen = set()
    for compute in ("gpu", "cpu"):
        for c in CELLS:
            st = c.status(root)
            if c.compute != compute or st == "done":
                continue
            hit = c.found(root)
            state = "not run" if hit is None else f"partial: {c.count(hit[1])} of {c.seeds} (`{hit[0]}`)"
            cmd = "same command as above" if c.command in seen else f"`{c.command}`"
            seen.add(c.command)
            lines.append(f"| {compute} | {c.protocol} | {' / '.join(c.label)} | {state} | `{c.runs[0]}` | {cmd} |")
    return "\n".join(lines)


def missing(cells=CELLS, root: Path = Path("."), compute: str | None = None) -> list[Cell]:
    """The cells that are not done (on ``compute`` only, when given)."""
    return [c for c in cells if c.status(root) != "done" and (compute is None or c.compute == compute)]


def publish(cell: Cell, root: Path) -> Path | None:
    """Copy a finished sweep's ``summary.json`` (and its units' ``config.json``, ``metrics.csv``,
    ``result.json``: no checkpoints) from ``cell.out`` into the committed folder ``cell.runs[0]``
    and its ``units`` twin; the folder written, or None when the sweep has not finished."""
    src = Path(root) / cell.out
    if not (src / cell.file).is_file():
        return None
    dst = Path(root) / cell.runs[0]
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src / cell.file, dst / cell.file)
    units = Path(root) / cell.runs[0].replace("/summaries/", "/units/", 1)
    for result in src.rglob("result.json"):
        if result.parent == src or any(p.startswith(".") for p in result.relative_to(src).parts):
            continue
        target = units / result.parent.relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in ("config.json", "metrics.csv", "result.json"):
            if (result.parent / name).is_file():
                shutil.copy2(result.parent / name, target / name)
    return dst


# ----------------------------------------------------------------------------------------- manifest

SPREAD_NOTE = ("± is the {} of each cell; `val`: the epoch chosen on data that is not the test fold; "
               "`test_max`: the best test score over epochs (the published protocol). A count below the "
               "paper's (\"3 of 10\") is a partial cell, queued in [gpu_queue.md]({}).")


def _with_note(fn, protocol: str, queue_link: str):
    def rendered(root: Path) -> str:
        return fn(root) + "\n\n" + SPREAD_NOTE.format(SPREAD[protocol], queue_link)
    return rendered


README_CELLS = tuple(c for c in UNSUPERVISED_CELLS if c.label[0] in ("MUTAG", "PROTEINS", "NCI1"))

TABLES = (
    Table("readme-unsupervised", "README.md",
          _with_note(cells_table(README_CELLS, ("dataset", "method"), "seeds"), "unsupervised",
                     "docs/results/gpu_queue.md"),
          tuple(r for c in README_CELLS for r in c.runs),
          "bash scripts/tables.sh (autogcl unsupervised --seeds 5, one torch thread per unit)",
          "Table 2 (unsupervised, test_max)"),
    Table("paper-unsupervised", "docs/results.md",
          _with_note(cells_table(UNSUPERVISED_CELLS, ("dataset", "method"), "seeds"), "unsupervised",
                     "results/gpu_queue.md"),
          tuple(r for c in UNSUPERVISED_CELLS for r in c.runs), "bash scripts/tables.sh", "Table 2"),
    Table("paper-semi", "docs/results.md",
          _with_note(cells_table(SEMI_CELLS, ("dataset", "row"), "folds"), "semi", "results/gpu_queue.md"),
          tuple(r for c in SEMI_CELLS for r in c.runs), "bash scripts/tables.sh", "Table 3"),
    Table("paper-transfer", "docs/results.md",
          _with_note(cells_table(TRANSFER_CELLS, ("dataset", "pre-training"), "seeds"), "transfer",
                     "results/gpu_queue.md"),
          tuple(r for c in TRANSFER_CELLS for r in c.runs),
          "python scripts/transfer_sizes.py run (3 seeds, 100 epochs, CPU); the paper's 10 seeds: the queue",
          "Table 4"),
    Table("paper-ablation", "docs/results.md",
          _with_note(cells_table(ABLATION_CELLS, ("dataset", "node-drop ratio"), "folds"), "semi",
                     "results/gpu_queue.md"),
          tuple(r for c in ABLATION_CELLS for r in c.runs), ABLATION_CELLS[0].command, "appendix, node-drop ratios"),
    Table("unsupervised", f"{RESULTS}/unsupervised.md", report_block(f"{RESULTS}/summaries/unsupervised"),
          (f"{RESULTS}/summaries/unsupervised",), "bash scripts/tables.sh", "Table 2"),
    Table("semi", f"{RESULTS}/semi.md", report_block(f"{RESULTS}/summaries/semi"),
          (f"{RESULTS}/summaries/semi",), "bash scripts/tables.sh", "Table 3"),
    Table("gpu-unsupervised", f"{RESULTS}/gpu_unsupervised.md", report_block(f"{RESULTS}/summaries/gpu/unsupervised"),
          (f"{RESULTS}/summaries/gpu/unsupervised",), "bash scripts/gpu_runs.sh tu", "Table 2"),
    Table("gpu-transfer", f"{RESULTS}/gpu_transfer.md", report_block(f"{RESULTS}/summaries/gpu/transfer"),
          (f"{RESULTS}/summaries/gpu/transfer",), "bash scripts/gpu_runs.sh finetune", "Table 4"),
    Table("views-mnist", "docs/tutorial.md", views_block, (f"{RESULTS}/views_MNIST",),
          "OMP_NUM_THREADS=1 autogcl visualize views --data-root ../shared/data --seed S", "Figure (views on MNIST)"),
    Table("performance", "docs/performance.md", perf_block, (PERF,), "python benchmarks/engine.py", ""),
    Table("goals", "docs/performance.md", goals_block, (PERF,), "python benchmarks/engine.py", ""),
    Table("queue", f"{RESULTS}/gpu_queue.md", queue_block, tuple(r for c in CELLS for r in c.runs),
          "autogcl reproduce --missing", "Tables 2-4"),
    Table("queue-goals", f"{RESULTS}/gpu_queue.md", goals_block, (PERF,), "python benchmarks/engine.py", ""),
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


# --------------------------------------------------------------------------------------- reproduce

from ..config import Config, option  # noqa: E402


@dataclass
class ReproduceConfig(Config):
    """``autogcl reproduce``: which of the manifest's cells to run."""

    missing: bool = option(False, "run every cell of the manifest that is not done (no summary, or fewer seeds "
                                  "than the paper's), then copy its summary and units into the committed folder")
    compute: str = option("all", "only the cells that fit the 2-core CPU machine (cpu), only those queued for a "
                                 "GPU (gpu), or all", choices=("all", "cpu", "gpu"))
    dry_run: bool = option(False, "print the commands, run nothing")
    root: str = option(".", "the repository root (its docs/results/ receives the runs)")

    def __post_init__(self):
        self.check_choices()


def _argv(command: str, data_root: str | None, extra: list[str], resume: bool) -> list[str]:
    """A cell's command as ``autogcl`` arguments: the data root replaced, ``--resume`` kept only
    when resuming, the executor options added (a later ``--device`` overrides the cell's)."""
    import shlex

    argv = shlex.split(command)[1:]  # without "autogcl"
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--data-root" and data_root:
            out += [a, data_root]
            i += 2
            continue
        if a == "--device" and "--device" in extra:
            i += 2
            continue
        if a == "--resume" and not resume:
            i += 1
            continue
        out.append(a)
        i += 1
    return out + extra


def reproduce(cells, root: Path, *, data_root: str | None = None, extra: list[str] | None = None,
              resume: bool = False, dry_run: bool = False, run=None, echo=print) -> list[Cell]:
    """Run the command of every cell of ``cells`` that is not done (once per distinct command),
    from ``root``, then :func:`publish` each cell it fills. ``run(argv) -> int`` runs one
    ``autogcl`` command (default: ``python -m autogcl`` in a child process; the command line passes
    :func:`autogcl.cli.main`, so the runner and the executor switch are those of every protocol). Cells already done are skipped, and with
    ``resume`` each command continues its interrupted units, so an interrupted reproduce
    continues where it stopped. Returns the cells published."""
    import os

    root = Path(root).resolve()
    todo = missing(cells, root)
    if not todo:
        echo("reproduce: every listed cell is done")
        return []
    by_command: dict[str, list[Cell]] = {}
    for c in todo:
        by_command.setdefault(c.command, []).append(c)
    if run is None:  # the command line in a child process (the caller may pass autogcl.cli.main)
        import subprocess
        import sys

        def run(argv):
            return subprocess.run([sys.executable, "-m", "autogcl", *argv]).returncode
    done = []
    for command, group in by_command.items():
        argv = _argv(command, data_root, list(extra or []), resume)
        labels = ", ".join(" / ".join(c.label) for c in group)
        echo(f"reproduce: {labels}: autogcl {' '.join(argv)}")
        if dry_run:
            continue
        here = os.getcwd()
        os.chdir(root)
        try:
            rc = run(argv)
        finally:
            os.chdir(here)
        if rc:
            raise DataError(f"autogcl {' '.join(argv)} failed (exit code {rc}); rerun reproduce with --resume "
                            "to continue")
        for c in group:
            dst = publish(c, root)
            if dst is None:
                echo(f"reproduce: {' / '.join(c.label)}: no {c.file} in {c.out} after the command")
            else:
                echo(f"reproduce: {' / '.join(c.label)} -> {dst.relative_to(root)}")
                done.append(c)
    if done:
        echo("reproduce: run python scripts/docs.py to regenerate the tables")
    return done
