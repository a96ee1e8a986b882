"""The manifest of the paper's cells (:data:`CELLS`): each :class:`Cell` names the committed run
folders that fill it, the command that makes them, where that command writes its sweep and the
paper's figure beside it; with the helpers that read a cell's committed and sweep folders.

Publishing a sweep is :mod:`.publishing`, the time estimates :mod:`.estimates` and the command
that runs the cells (``autogcl reproduce``) :mod:`.runner`. The documentation's tables and the GPU
queue page are rendered outside the package, by ``scripts/docs/docs.py`` (``scripts/docs/docsgen/``), from
this manifest and the committed files. Everything here reads JSON: no torch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..choices import AUG_NODE_DROP
from . import published

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

    def recorded(self, root: Path) -> bool:
        """Whether the committed folder that fills the cell names the code commit that made it
        (a ``provenance.json`` with a commit); False for a cell not run."""
        hit = self.found(root)
        return hit is not None and recorded(Path(root) / hit[0])

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


def stale(cells=CELLS, root: Path = Path("."), compute: str | None = None) -> list[Cell]:
    """The cells done whose committed folder names no code commit: they predate
    ``provenance.json``, so no table can say which code made them (``autogcl reproduce --stale``).
    A partial cell is left out: it is in the queue of cells not done (:func:`missing`) already."""
    return [c for c in cells if c.status(root) == "done" and not c.recorded(root)
            and (compute is None or c.compute == compute)]


def recorded(folder: Path) -> bool:
    """Whether a committed run folder (a summary's, or a unit's) names the code commit that made
    it: its ``provenance.json``, else a ``commit`` its summary records (what the tables read)."""
    for name in ("provenance.json", "summary.json"):
        try:
            if json.loads((Path(folder) / name).read_text(encoding="utf-8")).get("commit"):
                return True
        except (OSError, json.JSONDecodeError, AttributeError):
            continue
    return False


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


def unit_result(unit: Path) -> dict:
    """A finished unit's ``result.json`` ({} when it cannot be read)."""
    try:
        return json.loads((unit / "result.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}



def select(cells, compute: str = "all", only: str | None = None) -> list[Cell]:
    """The manifest's cells on ``compute`` (``all``, ``cpu``, ``gpu``) whose ``protocol / label``
    contains ``only`` (or one of its comma-separated texts). A text that matches none of them is
    a :class:`ConfigError` naming it and the cells (a typo must not report "every listed cell is
    done")."""
    texts = [t.strip() for t in (only or "").split(",") if t.strip()]
    pool = [c for c in cells if compute in ("all", c.compute)]
    names = {id(c): " / ".join((c.protocol,) + tuple(c.label)) for c in pool}
    unmatched = [t for t in texts if not any(t in name for name in names.values())]
    if unmatched:
        from ..errors import ConfigError

        on = "" if compute == "all" else f" on {compute}"
        raise ConfigError(f"--only {unmatched[0]!r} matches no cell{on}; the cells: {'; '.join(names.values())}")
    return [c for c in pool if not texts or any(t in names[id(c)] for t in texts)]
