"""The manifest of the paper's cells and the command that runs them (``autogcl reproduce``).

Each :class:`Cell` names the committed run folders that fill it, the command that makes them,
where that command writes its sweep and the paper's figure beside it. :func:`reproduce` runs the
commands of the cells that are not done, optionally within a time budget (only units that can
finish start; running ones are stopped with SIGTERM, which checkpoints them, at the budget), and
:func:`publish` copies each finished sweep into its committed folder with a ``provenance.json``
(the code commit and devices it ran on).

The documentation's tables, the engine's goals and the GPU queue page are rendered outside the
package, by ``scripts/docs.py`` (``scripts/docsgen/``), from this manifest and the committed files.

Everything here reads JSON and starts processes: no torch.
"""

from __future__ import annotations

from ..choices import AUG_NODE_DROP
import filecmp
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import preempt
from ..errors import DataError
from ..paths import child_pythonpath
from . import published

RESULTS = "docs/results"
DATA = "../shared/data"
TU = ("MUTAG", "PROTEINS", "IMDB-BINARY", "NCI1", "DD", "REDDIT-BINARY", "COLLAB")
MOLECULENET = ("bbbp", "tox21", "toxcast", "sider", "clintox", "muv", "hiv", "bace")
SEMI_ROWS = ("labeled", "graphcl_cl", "naive", "joint")
#: datasets whose cells need more compute than the 2-core machine (the queue)
BIG_SEMI = ("DD", "REDDIT-BINARY", "COLLAB")
#: the seconds of a lent-GPU window (``scripts/gpu_window.sh``'s default ``BUDGET``): a unit
#: estimated longer never starts in one
GPU_WINDOW_S = 500



# ------------------------------------------------------------------------------------------ cells


@dataclass(frozen=True)
class Cell:
    """One published cell. ``runs``: committed folders (relative to the repository), the first
    holding ``file`` fills the cell; ``out``: where ``command`` writes the sweep (``runs/...``),
    published into ``runs[0]`` by :func:`publish`. ``seeds``: how many seeds (or seed x fold
    results) the paper's cell needs: a summary with fewer is shown but stays in the queue.
    ``compute``: ``cpu`` (fits the 2-core machine) or ``gpu`` (the queue of gpu_queue.md).
    ``proxy``: where :func:`unit_seconds` reads an estimate when the cell's folders hold none."""

    protocol: str
    label: tuple
    runs: tuple
    out: str
    command: str
    paper: tuple | None = None
    seeds: int = 0
    compute: str = "cpu"
    file: str = "summary.json"
    #: committed summaries of similar runs, with a factor, that estimate this cell's unit time
    #: where its own folders hold none: ((folder, factor), ...); a factor may be a pair of folders
    #: (a, b): the ratio of their unit times on the CPU; a third element "train": training times
    #: alone (of the folder and of b)
    proxy: tuple = ()

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
    # a fold of a big set, from its unsupervised AutoGCL runs (a seed's 30 epochs, without the SVM,
    # which ran on the CPU even in the GPU runs of docs/results/gpu.md) times DD's ratio of this
    # row's fold to such a seed, both measured on the CPU
    ratio = (f"{RESULTS}/summaries/semi/DD-{row}", f"{RESULTS}/summaries/unsupervised/DD-autogcl")
    proxy = tuple((f"{RESULTS}/summaries/{where}unsupervised/{ds}-autogcl", ratio, "train")
                  for where in ("gpu/", "")) if big and ds != "DD" else ()
    return Cell("semi", (ds, row), (f"{RESULTS}/summaries/semi/{ds}-{row}",), f"runs/tables/semi/{ds}-{row}",
                f"autogcl semi --dataset {ds} --row {row} --seeds 1 --data-root {DATA} --out runs/tables/semi "
                f"--resume{dev}", published.SEMI.get((row, ds)), seeds=10, compute="gpu" if big else "cpu",
                proxy=proxy)


ENCODER = "pretrained/autogcl-moses-fullx1.pt"
#: molecules of each MoleculeNet set (the mirror's CSVs): a fine-tuning unit's time scales with them
MOLECULES = {"bbbp": 2039, "tox21": 7831, "toxcast": 8575, "sider": 1427, "clintox": 1478, "muv": 93087,
             "hiv": 41127, "bace": 1513}


def _transfer_cell(ds: str, pre: str) -> Cell:
    tag = "mosesfullx1" if pre == "autogcl" else "no_pretrain"
    ckpt = f" --checkpoint {ENCODER} --tag {tag}" if pre == "autogcl" else ""
    runs = [f"{RESULTS}/summaries/paper/transfer/{tag}/{ds}"]
    runs.append(f"{RESULTS}/summaries/sizes/transfer/{tag}/{ds}")  # the size study: 3 seeds, CPU
    pub = published.TRANSFER.get(("autogcl" if pre == "autogcl" else "no_pretrain", ds))
    # the GPU runs of bbbp (docs/results/gpu.md) and the CPU runs of the size study, scaled by
    # the number of molecules (unit_seconds reads the ones of the device asked for)
    scale = MOLECULES[ds] / MOLECULES["bbbp"]
    proxy = tuple((f"{RESULTS}/summaries/gpu/transfer/{t}/bbbp", scale) for t in ("no_pretrain", "moses200k"))
    if MOLECULES[ds] > MOLECULES["toxcast"]:
        # the largest sets from tox21's CPU run (1 seed; its 12 tasks are nearer MUV's 17 and HIV's 1
        # than toxcast's 617): bbbp's 2,039 molecules scaled 20-46 times under-estimate them several
        # times over (HIV's first epochs on the 2-core machine, 2026-11-26)
        proxy += ((f"{RESULTS}/summaries/paper/transfer/{tag}/tox21", MOLECULES[ds] / MOLECULES["tox21"]),)
    proxy += tuple((f"{RESULTS}/summaries/sizes/transfer/{t}/bbbp", scale) for t in (tag, "no_pretrain"))
    return Cell("transfer", (ds, pre), tuple(runs), f"runs/paper/transfer/{tag}/{ds}",
                f"autogcl transfer finetune --dataset {ds} --seeds 10 --epochs 100{ckpt} --data-root {DATA} "
                f"--out runs/paper/transfer --resume --device cuda", pub, seeds=10, compute="gpu", proxy=proxy)


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


# ------------------------------------------------------------------------------------------ state


def missing(cells=CELLS, root: Path = Path("."), compute: str | None = None) -> list[Cell]:
    """The cells that are not done (on ``compute`` only, when given)."""
    return [c for c in cells if c.status(root) != "done" and (compute is None or c.compute == compute)]


def units_folder(run: str) -> str:
    """The committed units of a committed summary folder (``summaries/`` -> ``units/``)."""
    return run.replace("/summaries/", "/units/", 1)


def finished_units(folder: Path) -> list[Path]:
    """The finished units (a ``result.json``) below a sweep folder, partial folders left out."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(r.parent for r in folder.rglob("result.json")
                  if r.parent != folder and not any(p.startswith(".") for p in r.relative_to(folder).parts))


def _result(unit: Path) -> dict:
    """A finished unit's ``result.json`` ({} when it cannot be read)."""
    try:
        return json.loads((unit / "result.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}


def _seed(unit: Path) -> int | None:
    return _result(unit).get("seed")


def _device_kind(device) -> str | None:
    """``cuda`` or ``cpu`` for a recorded device name, None when none is recorded."""
    return ("cuda" if str(device).startswith("cuda") else "cpu") if device else None


def code_commit(root: Path | None = None) -> tuple[str | None, bool]:
    """(commit, dirty) of the code that runs: ``AUTOGCL_COMMIT`` when set (a copy without its
    git folder, e.g. a lent GPU machine), else ``git rev-parse HEAD`` in the checkout holding this
    package (``root``: another checkout); (None, False) when unknown."""
    root = Path(__file__).resolve().parents[2] if root is None else root
    given = os.environ.get("AUTOGCL_COMMIT", "").strip()
    if given:
        return given, given.endswith("+dirty")
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=20)
        if head.returncode:
            return None, False
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "autogcl"], cwd=root,
                               capture_output=True, text=True, timeout=20).stdout.strip() != ""
        return head.stdout.strip(), dirty
    except (OSError, subprocess.SubprocessError):
        return None, False


def publish_units(cell: Cell, root: Path) -> list[Path]:
    """Copy the finished units of ``cell.out`` (``config.json``, ``metrics.csv``, ``result.json``:
    no checkpoints) into the committed units folder of ``cell.runs[0]``; the units copied. A
    unit new to that folder gets a ``provenance.json`` naming the code commit that ran it
    (:func:`code_commit`) and its device, so that a later summary over units of several windows
    names every commit; units already committed keep theirs (or none, if they predate it)."""
    src = Path(root) / cell.out
    units = Path(root) / units_folder(cell.runs[0])
    copied = []
    commit, dirty = code_commit()
    for unit in finished_units(src):
        target = units / unit.relative_to(src)
        # new to the committed folder, or another run of that unit (a local rerun): its provenance is written
        new = not (target / "result.json").is_file() or not filecmp.cmp(unit / "result.json", target / "result.json",
                                                                         shallow=False)
        target.mkdir(parents=True, exist_ok=True)
        for name in ("config.json", "metrics.csv", "result.json"):
            if (unit / name).is_file():
                shutil.copy2(unit / name, target / name)
        if new and commit:
            record = {"commit": commit, "dirty": dirty, "device": (_result(unit).get("runtime") or {}).get("device"),
                      "published": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
            (target / "provenance.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        copied.append(target)
    return copied


#: the key of ``unit_commits`` (:func:`publish`) for units whose provenance names no commit
UNRECORDED = "not recorded"


def _unit_commit(unit: Path) -> str | None:
    """The commit a committed unit's ``provenance.json`` names (None where it has none)."""
    try:
        return json.loads((unit / "provenance.json").read_text(encoding="utf-8")).get("commit")
    except (OSError, json.JSONDecodeError, AttributeError):
        return None


def publish(cell: Cell, root: Path) -> Path | None:
    """Copy a finished sweep's ``summary.json`` (and its finished units: :func:`publish_units`)
    from ``cell.out`` into the committed folder ``cell.runs[0]``, with a ``provenance.json``
    naming the code commit (:func:`code_commit`) and the devices its units ran on; where the
    units' own provenance names other commits (units of earlier windows), ``unit_commits``
    counts the units of each commit. The folder written, or None when the sweep has no summary
    yet (its finished units are copied anyway)."""
    src = Path(root) / cell.out
    units = publish_units(cell, root)
    if not (src / cell.file).is_file():
        return None
    dst = Path(root) / cell.runs[0]
    if cell.file == "summary.json" and (dst / cell.file).is_file():
        # never replace a committed summary by one of fewer seeds or folds (a sweep folder that
        # kept the summary of an earlier, shorter run)
        try:
            old = json.loads((dst / cell.file).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = {}  # an unreadable committed summary is replaced
        if cell.count(json.loads((src / cell.file).read_text(encoding="utf-8"))) < cell.count(old):
            return None
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src / cell.file, dst / cell.file)
    devices = set()
    for unit in units or [src]:
        device = (_result(unit).get("runtime") or {}).get("device")
        if device:
            devices.add(str(device))
    commit, dirty = code_commit()
    record = {"commit": commit, "dirty": dirty, "devices": sorted(devices),
              "published": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    per_unit: dict[str, int] = {}
    for unit in units:
        c = _unit_commit(unit) or UNRECORDED
        per_unit[c] = per_unit.get(c, 0) + 1
    named = set(per_unit) - {UNRECORDED}
    if (commit and set(per_unit) != {commit}) or (not commit and named):
        record["unit_commits"] = dict(sorted(per_unit.items()))
    (dst / "provenance.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return dst


def restore(cell: Cell, root: Path) -> int:
    """Copy the committed finished units of ``cell`` that its sweep folder lacks into it (a fresh
    clone, a bare GPU machine), so that ``--resume`` skips them; how many were copied."""
    units = Path(root) / units_folder(cell.runs[0])
    out = Path(root) / cell.out
    n = 0
    for unit in finished_units(units):
        target = out / unit.relative_to(units)
        if (target / "result.json").is_file():
            continue
        target.mkdir(parents=True, exist_ok=True)
        for name in ("config.json", "metrics.csv", "result.json"):
            if (unit / name).is_file():
                shutil.copy2(unit / name, target / name)
        n += 1
    return n


# -------------------------------------------------------------------------------------- estimates


#: the device of a summary over units of both kinds: its mean time estimates neither
MIXED = "mixed"


def _provenance_device(folder: Path) -> str | None:
    """``cuda`` or ``cpu``: the kind of device a summary's units ran on (its ``provenance.json``);
    :data:`MIXED` when they ran on both; None when none is recorded."""
    try:
        devices = json.loads((folder / "provenance.json").read_text(encoding="utf-8")).get("devices") or []
    except (OSError, json.JSONDecodeError):
        return None
    kinds = {_device_kind(d) for d in devices}
    return MIXED if len(kinds) > 1 else (kinds.pop() if kinds else None)


def unit_seconds(cell: Cell, root: Path, device: str) -> tuple[float, str] | None:
    """(seconds, source): the time one unit of ``cell`` takes on ``device`` (``cpu`` or
    ``cuda``), from committed files: the mean per-unit ``train_time_s`` + ``eval_time_s`` of the
    cell's own summaries (semi: ``time_per_fold_s``), else the mean over the cell's committed
    finished units that ran on ``device`` (a cell whose first units finished before its summary
    exists: ``time_s``, or ``train_time_s`` + ``eval_time_s``), else of its :attr:`Cell.proxy`
    summaries times their factor. A summary's device is its ``provenance.json``'s, else ``cuda``
    for folders under ``summaries/gpu/``; a summary over units of both devices (a cell whose
    seeds ran on a GPU and on the CPU) estimates neither: its units do. None when no committed
    file estimates it."""
    kind = _device_kind(device)
    own = _summary_seconds([(r, 1.0) for r in cell.runs], root, kind) or _units_seconds(cell, root, kind)
    return own or _summary_seconds(list(cell.proxy), root, kind)


def _units_seconds(cell: Cell, root: Path, kind: str) -> tuple[float, str] | None:
    """The mean time of the committed finished units of ``cell`` that ran on ``kind``."""
    folder = units_folder(cell.runs[0])
    times = []
    for unit in finished_units(Path(root) / folder):
        r = _result(unit)
        if _device_kind((r.get("runtime") or {}).get("device")) != kind:
            continue
        t = r["time_s"] if "time_s" in r else r.get("train_time_s", 0.0) + r.get("eval_time_s", 0.0)
        if t:
            times.append(float(t))
    if not times:
        return None
    return sum(times) / len(times), f"{folder} (mean of {len(times)} finished unit{'s' * (len(times) > 1)})"


def _summary_seconds(folders, root: Path, kind: str) -> tuple[float, str] | None:
    """The per-unit time of the first summary among ``folders`` ((folder, factor) pairs, or
    (folder, factor, "train") for the training time alone) that ran on ``kind``, times its factor
    (a pair of folders: the ratio of their per-unit times on the CPU, the second one's training
    time alone with "train"; the entry is skipped when either is missing)."""
    for entry in folders:
        folder, factor = entry[:2]
        train = entry[2:] == ("train",)  # training time only (an unsupervised seed without its SVM)
        ratio = ""
        if isinstance(factor, tuple):
            a = _summary_seconds([(factor[0], 1.0)], root, "cpu")
            b = _summary_seconds([(factor[1], 1.0) + entry[2:]], root, "cpu")
            if not a or not b or not b[0]:
                continue
            factor, ratio = a[0] / b[0], f" ({Path(factor[0]).name} / {Path(factor[1]).name} on the CPU)"
        f = Path(root) / folder / "summary.json"
        if not f.is_file():
            continue
        try:
            s = json.loads(f.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            continue
        dev = _provenance_device(f.parent) or ("cuda" if "/summaries/gpu/" in f"/{folder}/" else "cpu")
        if dev != kind:
            continue
        if "time_per_fold_s" in s:  # semi: a unit is a fold
            per_unit = float(s["time_per_fold_s"])
        elif "train_time_s" in s:  # unsupervised, transfer: means over seeds
            per_unit = float(s["train_time_s"]) + (0.0 if train else float(s.get("eval_time_s", 0.0)))
        else:
            continue
        what = f"{folder}/summary.json" + (" (training time)" if train else "")
        return per_unit * factor, what + (f" x {factor:.2g}{ratio}" if factor != 1.0 else "")
    return None


# --------------------------------------------------------------------------------------- reproduce

from ..config import Config, option  # noqa: E402


#: a budgeted window starts a unit only when its estimate times this fits what is left: the
#: estimates are training times, and on an H100 (2026-11-26) units started with 173-177 s
#: estimates still had 3-24 of 100 epochs left after 200 s (start-up, 8 units and a test suite
#: sharing the machine)
MARGIN = 1.3


@dataclass
class ReproduceConfig(Config):
    """``autogcl reproduce``: which of the manifest's cells to run, and for how long."""

    missing: bool = option(False, "run every cell of the manifest that is not done (no summary, or fewer seeds "
                                  "than the paper's), then copy its summary and units into the committed folder")
    compute: str = option("all", "only the cells that fit the 2-core CPU machine (cpu), only those queued for a "
                                 "GPU (gpu), or all", choices=("all", "cpu", "gpu"))
    only: str | None = option(None, "only the cells whose 'protocol / label' contains this text (e.g. "
                                    "'transfer / tox21'), or one of several texts separated by commas",
                              type=str, metavar="TEXT")
    budget: float | None = option(None, "seconds for the whole run: only units whose estimated time fits what is "
                                        "left start, and running ones are stopped (SIGTERM: they checkpoint) at "
                                        "the budget; finished units and summaries are published either way",
                                  type=float, low=0, metavar="SECONDS")
    jobs: int = option(1, "with --budget: units (processes) at a time, sharing the device (e.g. 8 on one GPU)", low=1)
    unit_seconds: float | None = option(None, "with --budget: the time assumed for a unit that no committed file "
                                              "estimates (default: such units are not started)", type=float, low=0,
                                        low_open=True, metavar="SECONDS")
    grace: float = option(60.0, "with --budget: seconds a stopped unit has to write its checkpoint", low=0)
    margin: float = option(MARGIN, "with --budget: a unit starts only when its estimate times this factor fits what "
                                "is left (the estimates are training times: the start-up and the units sharing "
                                "the device add to them)", low=1)
    dry_run: bool = option(False, "print the commands (and, with --budget, the estimates), run nothing")
    root: str = option(".", "the repository root (its docs/results/ receives the runs)")

    def __post_init__(self):
        self.check_choices()


def select(cells, compute: str = "all", only: str | None = None) -> list[Cell]:
    """The manifest's cells on ``compute`` (``all``, ``cpu``, ``gpu``) whose ``protocol / label``
    contains ``only`` (or one of its comma-separated texts)."""
    texts = [t.strip() for t in (only or "").split(",") if t.strip()]
    return [c for c in cells if compute in ("all", c.compute)
            and (not texts or any(t in " / ".join((c.protocol,) + tuple(c.label)) for t in texts))]


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


def _with(argv: list[str], **options) -> list[str]:
    """``argv`` with ``--NAME VALUE`` set for each option (replaced where present)."""
    out = list(argv)
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if flag in out:
            out[out.index(flag) + 1] = str(value)
        else:
            out += [flag, str(value)]
    return out


def _device(argv: list[str]) -> str:
    return argv[argv.index("--device") + 1] if "--device" in argv else "cpu"


@dataclass
class Job:
    """One process of a budgeted reproduce: ``units`` units of ``cells`` (one seed of a cell, or
    a whole command), estimated at ``seconds`` (None: unknown)."""

    cells: list
    argv: list
    units: int
    seconds: float | None
    source: str
    label: str
    #: a semi command runs its folds in order, resumably: a job that does not fit whole may start
    #: with only the next folds that fit (``--fold-limit done + m``); ``per_unit`` is one fold's
    #: estimate, ``done`` the folds 0..done-1 finished before it (the semi command resumes under
    #: any limit, whatever folds its sweep folder's splits hold)
    per_unit: float | None = None
    done: int = 0
    #: what is left of the job after a shortened run of it (:meth:`shortened`)
    rest: "Job | None" = None

    def fitting(self, seconds_left: float, margin: float) -> "Job | None":
        """This job when its estimate x ``margin`` fits ``seconds_left``, else :meth:`shortened`
        (None: nothing of it fits, or it has no estimate)."""
        if self.seconds is None:
            return None
        return self if self.seconds * margin <= seconds_left else self.shortened(seconds_left, margin)

    def shortened(self, seconds_left: float, margin: float) -> "Job | None":
        """This job cut to the folds that fit ``seconds_left`` (each estimated at ``per_unit`` x
        ``margin``); None when it cannot be cut or not even one fold fits."""
        one = self.per_unit
        if one is None or not math.isfinite(one) or one <= 0 or self.units <= 1:
            return None
        m = min(int(seconds_left // (one * margin)), self.units - 1)
        if m < 1:
            return None
        limit = self.done + m
        name = self.label.rsplit(" (", 1)[0]
        rest = Job(self.cells, self.argv, self.units - m, one * (self.units - m), self.source,
                   f"{name} ({self.units - m} units)", per_unit=one, done=limit)
        return Job(self.cells, _with(self.argv, fold_limit=limit), m, one * m, self.source,
                   f"{name} ({m} of {self.units} units: --fold-limit {limit})", rest=rest)


def _fold_prefix(finished) -> int:
    """d for a one-seed semi sweep: folds 0..d-1 are finished (so ``--fold-limit d + m`` runs at
    most m new ones)."""
    have = {u.name for u in finished if u.parent.name == "seed0"}
    d = 0
    while f"fold{d}" in have:
        d += 1
    return d


def plan(cells, root: Path, *, data_root: str | None = None, extra: list[str] | None = None,
         unit_default: float | None = None) -> list[Job]:
    """The jobs of a budgeted reproduce, most valuable first: cells with no committed run before
    partial ones, cheaper before dearer. A cell whose command takes ``--seeds`` (unsupervised,
    transfer) is split into one job per seed it still lacks (``--first-seed S --seeds 1``), so
    each unit starts only when it can finish; other commands (semi folds, pre-training, the
    ablation) are one job of all the units they still lack. The committed units are restored
    into the sweep folders first (:func:`restore`)."""
    root = Path(root)
    groups: dict[str, list[Cell]] = {}
    for c in missing(cells, root):
        groups.setdefault(c.command, []).append(c)
    jobs = []
    for command, group in groups.items():
        argv = _argv(command, data_root, list(extra or []), resume=True)
        if "--resume" not in argv:
            argv.append("--resume")
        dev = _device(argv)
        first = group[0]
        for c in group:
            restore(c, root)
        est = unit_seconds(first, root, dev)
        seconds, source = (est if est else (unit_default, "--unit-seconds") if unit_default else (None, "no estimate"))
        name = " / ".join((first.protocol,) + tuple(first.label))
        if len(group) == 1 and first.protocol in ("unsupervised", "transfer") and "--seeds" in argv:
            have = {_seed(u) for u in finished_units(root / first.out)}
            for s in range(first.seeds):
                if s not in have:
                    jobs.append(Job(group, _with(argv, first_seed=s, seeds=1), 1, seconds, source, f"{name} seed {s}"))
            continue
        want = max(c.seeds or 1 for c in group)
        finished = finished_units(root / first.out)
        left = max(want - len(finished), 1)
        total = None if seconds is None else seconds * left
        folds = len(group) == 1 and argv[0] == "semi" and "--fold-limit" not in argv  # cut by --fold-limit
        prefix = _fold_prefix(finished) if folds else 0
        jobs.append(Job(group, argv, left, total, source, f"{name} ({left} units)",
                        per_unit=seconds if folds else None, done=prefix))
    rank = {id(c): (0 if c.status(root) == "missing" else 1) for c in cells}
    return sorted(jobs, key=lambda j: (rank.get(id(j.cells[0]), 1), float("inf") if j.seconds is None else j.seconds))


def _spawn(argv: list[str], root: Path, log: Path) -> subprocess.Popen:
    """``python -m autogcl ARGV`` in ``root`` as a child process writing to ``log``."""
    env = {**os.environ, "PYTHONPATH": child_pythonpath(Path(__file__).resolve().parents[2])}  # autogcl's folder
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w", encoding="utf-8") as f:
        return subprocess.Popen([sys.executable, "-m", "autogcl", *argv], cwd=root, env=env, stdout=f,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


def _summarise(cell: Cell, root: Path, data_root, extra, spawn, echo) -> bool:
    """After a budgeted window, for a cell split by seeds: the summary of its seeds 0..k-1 when
    they have all finished and k is more than the committed summary the tables read counts, in
    whichever of the cell's folders it lies (``--seeds k
    --resume``: no unit trains again). True when it wrote one (the one-seed commands' own
    summaries are never published)."""
    have = {_seed(u) for u in finished_units(Path(root) / cell.out)}
    k = 0
    while k in have and k < cell.seeds:
        k += 1
    hit = cell.found(root)
    # never shadow a committed summary of as many seeds or more, in any of the cell's folders (the
    # size study's 3 CPU seeds of a transfer cell): its finished units are published all the same
    if k == 0 or (hit and cell.count(hit[1]) >= k):
        return False
    argv = _with(_argv(cell.command, data_root, list(extra or []), resume=True), seeds=k)
    if "--resume" not in argv:
        argv.append("--resume")
    proc = spawn(argv, Path(root), Path(root) / "runs" / "reproduce" / "logs" / f"summary-{abs(hash(cell.out))}.log")
    rc = proc.wait()
    echo(f"reproduce: {' / '.join(cell.label)}: summary of seeds 0-{k - 1} " + ("written" if rc == 0 else
                                                                                f"failed (exit code {rc})"))
    return rc == 0


def run_budget(cells, root: Path, budget: float, *, data_root: str | None = None, extra: list[str] | None = None,
               jobs: int = 1, unit_default: float | None = None, grace: float = 60.0, margin: float = MARGIN,
               dry_run: bool = False, spawn=_spawn, echo=print, clock=time.monotonic) -> dict:
    """Run the :func:`plan` of ``cells`` within ``budget`` seconds, ``jobs`` processes at a
    time: a job starts only when its estimate times ``margin`` fits the time left (a job without an
    estimate never does; a semi job of several folds may start with the next folds that fit,
    :meth:`Job.shortened`, and its rest is queued again when it ends), and one job at a time per
    sweep folder (the protocols lock it), so the jobs packed
    together are different cells; at the budget every running job gets SIGTERM (the protocols
    checkpoint and exit 143)
    and ``grace`` seconds to exit. Then every finished unit and summary is published
    (:func:`publish`), so the same call later resumes from them. Returns counts: ``finished``,
    ``stopped``, ``failed``, ``not_started`` jobs and the cells ``published``."""
    root = Path(root).resolve()
    start = clock()
    todo = plan(cells, root, data_root=data_root, extra=extra, unit_default=unit_default)
    for j in todo:
        est = "no estimate" if j.seconds is None else f"~{j.seconds:.0f} s ({j.source})"
        echo(f"reproduce: plan: {j.label}: {est}")
    if dry_run or not todo:
        if not todo:
            echo("reproduce: every listed cell is done")
        return {"finished": 0, "stopped": 0, "failed": 0, "not_started": len(todo), "published": []}
    deadline = start + budget
    # SIGTERM or SIGINT (preempt.handling, the command line's) is noted, not raised: no job starts
    # after it, the running ones get SIGTERM as at the budget, what finished is published, and
    # then it is raised (the command line says how to resume)
    with preempt.deferring():
        result = _run_jobs(todo, root, deadline, budget, jobs, grace, margin, data_root, extra, spawn, echo, clock)
    return result


def _run_jobs(todo, root: Path, deadline: float, budget: float, jobs: int, grace: float, margin: float,
              data_root, extra, spawn, echo, clock) -> dict:
    """:func:`run_budget`'s loop: start what fits, stop the rest at the deadline or at a noted
    signal, publish."""
    running: dict = {}
    counts = {"finished": 0, "stopped": 0, "failed": 0, "not_started": 0}
    logs = root / "runs" / "reproduce" / "logs"
    queue = list(todo)
    n = 0
    try:
        while queue or running:
            now = clock()
            if now >= deadline or preempt.requested():
                break
            for j in list(queue):
                if len(running) >= jobs:
                    break
                run = j.fitting(deadline - now, margin)
                if run is None:
                    continue
                if any(c.out == r.cells[0].out for r in running.values() for c in j.cells):
                    continue  # one process per sweep folder (its lock): the next seed waits for this one
                queue.remove(j)
                n += 1
                running[spawn(run.argv, root, logs / f"{n:03d}.log")] = run
                echo(f"reproduce: start {run.label}: autogcl {' '.join(run.argv)}")
            if not running and not any(j.fitting(deadline - now, margin) for j in queue):
                break  # nothing running and nothing left that fits
            for proc, j in list(running.items()):
                rc = proc.poll()
                if rc is None:
                    continue
                del running[proc]
                counts["finished" if rc == 0 else "failed"] += 1
                echo(f"reproduce: {'done' if rc == 0 else f'failed (exit code {rc})'}: {j.label}")
                if rc == 0 and j.rest is not None:  # a shortened job ended early: its next folds may fit
                    queue.append(j.rest)
            time.sleep(0.2)
    except BaseException:  # an error of this loop (or a second signal): the jobs do not outlive it
        _signal_jobs(running, signal.SIGTERM)
        raise
    why = "stopped by a signal" if preempt.requested() else "stopped at the budget"
    _signal_jobs(running, signal.SIGTERM)  # checkpoint and stop
    end = clock() + grace
    for proc, j in running.items():
        try:
            rc = proc.wait(timeout=max(end - clock(), 0.1))
        except subprocess.TimeoutExpired:
            _signal_jobs({proc: j}, signal.SIGKILL)
            rc = proc.wait()
        counts["finished" if rc == 0 else "stopped"] += 1
        echo(f"reproduce: {'done' if rc == 0 else why} (exit code {rc}): {j.label}"
             + ("" if rc == 0 else "; its checkpoint stays for the next call"))
    counts["not_started"] = len(queue)
    for j in queue:
        one = j.per_unit if j.per_unit is not None else j.seconds
        why_not = ("no estimate (give --unit-seconds)" if j.seconds is None else
                   f"~{one:.0f} s (x {margin:g}) does not fit the budget" if one * margin > budget else
                   "stopped by a signal first" if preempt.requested() else
                   f"~{j.seconds:.0f} s no longer fitted when a slot was free")
        echo(f"reproduce: not started: {j.label}: {why_not}")
    published = []
    seen = set()
    for j in todo:
        for c in j.cells:
            if id(c) in seen:
                continue
            seen.add(id(c))
            if "--first-seed" in j.argv:  # split by seeds: only a summary of seeds 0..k-1 is published
                dst = publish(c, root) if _summarise(c, root, data_root, extra, spawn, echo) else None
                if dst is None:
                    publish_units(c, root)
            else:
                dst = publish(c, root)
            if dst is not None:
                published.append(c)
                echo(f"reproduce: {' / '.join(c.label)} -> {dst.relative_to(root)}")
    echo(f"reproduce: {counts['finished']} finished, {counts['stopped']} stopped, {counts['failed']} "
         f"failed, {counts['not_started']} not started; {len(published)} summaries published")
    return {**counts, "published": published}


def _signal_jobs(running: dict, signum: int) -> None:
    """``signum`` to every running job's process group (each job is a session of its own)."""
    for proc in running:
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass


def reproduce(cells, root: Path, *, data_root: str | None = None, extra: list[str] | None = None,
              resume: bool = False, dry_run: bool = False, run=None, echo=print) -> list[Cell]:
    """Run the command of every cell of ``cells`` that is not done (once per distinct command),
    from ``root``, then :func:`publish` each cell it fills. ``run(argv) -> int`` runs one
    ``autogcl`` command (default: ``python -m autogcl`` in a child process; the command line passes
    :func:`autogcl.cli.main`, so the runner and the executor switch are those of every protocol).
    Cells already done are skipped, and with ``resume`` each command continues its interrupted
    units, so an interrupted reproduce continues where it stopped. Returns the cells published.
    :func:`run_budget` is the same within a time budget."""
    root = Path(root).resolve()
    todo = missing(cells, root)
    if not todo:
        echo("reproduce: every listed cell is done")
        return []
    by_command: dict[str, list[Cell]] = {}
    for c in todo:
        by_command.setdefault(c.command, []).append(c)
    if run is None:  # the command line in a child process (the caller may pass autogcl.cli.main)
        def run(argv):
            return subprocess.run([sys.executable, "-m", "autogcl", *argv], stdin=subprocess.DEVNULL).returncode
    done = []
    for command, group in by_command.items():
        argv = _argv(command, data_root, list(extra or []), resume)
        labels = ", ".join(" / ".join(c.label) for c in group)
        echo(f"reproduce: {labels}: autogcl {' '.join(argv)}")
        if dry_run:
            continue
        if resume:
            for c in group:
                restore(c, root)
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
