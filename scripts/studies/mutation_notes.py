"""Write docs/results/mutation/survivors.md from a run of scripts/studies/mutation.sh: every mutant
that no selection test killed, each with its own note from docs/results/mutation/notes.tsv.

    python scripts/studies/mutation_notes.py [runs/mutation]          # write survivors.md
    python scripts/studies/mutation_notes.py [runs/mutation] --draft  # print notes.tsv lines to fill in

notes.tsv holds one line per survivor: the mutant's name, the code it puts in (the ``+`` side
of its diff, as this script shows it), and a note written after reading that mutant's diff
(``mutmut show NAME`` in runs/mutation/work). The script exits 1 when a survivor has no note,
when a note was written for another change than the mutant's current one (mutmut numbers a
function's mutants in order, so a changed function renumbers them), or when a note names a
mutant that is no longer a survivor of the run (killed, or gone): notes follow the code.
"""

from __future__ import annotations

import ast
import importlib.metadata
import difflib
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "results" / "mutation"
OUT = DOCS / "survivors.md"
NOTES = DOCS / "notes.tsv"
HEADER = "mutant\tchange\tnote"
#: mutmut statuses that mean no selection test failed
SURVIVING = ("survived", "no tests")
#: the files mutmut mutates (scripts/studies/mutation.sh's FILES)
FILES = ("autogcl/eval/svm.py", "autogcl/eval/metrics.py", "autogcl/protocols/semi.py", "autogcl/protocols/transfer.py",
         "autogcl/protocols/unsupervised.py", "autogcl/protocols/grid.py")


def run(work: Path, *args) -> str:
    return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=work, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL).stdout


def diffs(work: Path) -> dict[str, list[str]]:
    """mutant name -> its changed lines (``- old`` / ``+ new``), from mutmut's mutated sources
    (each mutant is a copy of its function, ``x_<name>__mutmut_<n>``, beside ``..._orig``)."""
    out: dict[str, list[str]] = {}
    for path in sorted((work / "mutants" / "autogcl").rglob("*.py")):
        src = path.read_text()
        if "__mutmut_" not in src:
            continue
        src_lines = src.splitlines()
        module = ".".join(path.relative_to(work / "mutants").with_suffix("").parts)
        funcs: dict[str, dict[str, list[str]]] = {}
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.FunctionDef) and "__mutmut_" in node.name:
                base, _, n = node.name.rpartition("__mutmut_")
                text = [line.replace(node.name, base + "__mutmut") for line in src_lines[node.lineno - 1:node.end_lineno]]
                funcs.setdefault(base, {})[n] = text
        for base, versions in funcs.items():
            orig = versions.get("orig", [])
            for n, lines in versions.items():
                if n != "orig":
                    out[f"{module}.{base}__mutmut_{n}"] = [
                        d[0] + " " + d[2:].strip() for d in difflib.ndiff(orig, lines) if d[:2] in ("- ", "+ ")]
    return out


def change_of(lines: list[str]) -> str:
    """The code a mutant puts in, one line: its ``+`` lines joined (``(removed)`` when it only
    deletes lines)."""
    plus = [x[2:] for x in lines if x.startswith("+ ")]
    return " / ".join(plus).replace("\t", " ") if plus else "(removed)"


def function_of(mutant: str) -> str:
    """``autogcl.eval.svm.x__numpy__mutmut_3`` -> ``eval.svm._numpy``."""
    mod, _, fn = mutant.removeprefix("autogcl.").rpartition(".")
    return f"{mod}.{re.sub(r'__mutmut_([0-9]+|[*])$', '', fn)[2:]}"


def order(mutant: str):
    return function_of(mutant), int(mutant.rsplit("_", 1)[1])


def read_notes(path: Path = NOTES) -> dict[str, tuple[str, str]]:
    """mutant -> (change, note) from notes.tsv; a malformed line is an error naming it."""
    notes: dict[str, tuple[str, str]] = {}
    if not path.is_file():
        return notes
    lines = path.read_text().splitlines()
    if lines and lines[0] != HEADER:
        raise SystemExit(f"{path}:1: the header must be {HEADER!r}")
    for i, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3 or not parts[2].strip():
            raise SystemExit(f"{path}:{i}: expected 'mutant<TAB>change<TAB>note' with a note")
        if parts[0] in notes:
            raise SystemExit(f"{path}:{i}: a second note for {parts[0]}")
        notes[parts[0]] = (parts[1], parts[2].strip())
    return notes


def check(status: dict[str, str], changed: dict[str, list[str]], notes: dict[str, tuple[str, str]]):
    """(survivors, survivors without a note, notes for another change, notes of no survivor)."""
    survivors = sorted((m for m, s in status.items() if s in SURVIVING), key=order)
    missing = [m for m in survivors if m not in notes]
    moved = [m for m in survivors if m in notes and notes[m][0] != change_of(changed.get(m, []))]
    stale = sorted((m for m in notes if status.get(m) not in SURVIVING), key=order)
    return survivors, missing, moved, stale


RERUN = """## How to rerun it (outside CI)

In a new session, from the root of a checkout (the data mirror beside it, `../shared/data`, or
`AUTOGCL_TEST_DATA=...`):

1. mutmut 3.x in the project's interpreter: `python -m pip install 'mutmut>=3.3,<4'` (this run:
   mutmut {version}). The script checks the major version.
2. `PYTHON=python bash scripts/studies/mutation.sh` mutates every function of the selection files; or
   `bash scripts/studies/mutation.sh 'autogcl.protocols.semi.x_select__mutmut_*' ...` only the mutants
   whose names match (these are rerun even when mutmut has a result for them). It copies the
   tracked files into `runs/mutation/work` (ignored), runs one mutmut process at `nice -n 19`
   with one thread, records the commit in `runs/mutation/runs.tsv`, then runs this generator.
   mutmut keeps its results in `runs/mutation/work/mutants`: a second run redoes only the
   functions whose code changed, unless names are given.
3. `python scripts/studies/mutation_notes.py` writes this page and exits 1 while a survivor has no
   note in `docs/results/mutation/notes.tsv`, a note was written for another change, or a
   note names a mutant that no longer survives. `--draft` prints the lines to fill in; read
   each mutant's diff (`cd runs/mutation/work && python -m mutmut show NAME`) before writing
   its note. A survivor that changes what is selected or reported is a gap: add a test in
   `tests/selection` that kills it instead of a note.

Cost: each mutant runs the selection tests that reach its function (pytest stops at the first
failure), so a killed mutant of a small function is quick, and a survivor of a function on a
protocol's training path (`semi.run_fold`, `transfer.run_unit`, `unsupervised.run_unit`) trains
a fold or a seed. Every mutant of the six files did not fit one session on the shared 2-core
machine at `nice -n 19`, so the runs below name every mutant of the functions that choose
epochs, C, configurations and summaries, and compute the scores they read (`select`,
`_select_regression`, `select_epoch`, `_choose`, `_outer_fold`, `svm_protocol`, `roc_auc`,
`regression_scores`, `summarize`, `_spread`, `make_summary`, `_pretraining`, `grid_report`,
`validation_score`, `write_reports`), and of the three training-path functions only the
mutants of the lines that select or report:

- `semi.run_fold`: the fold's parts (which graphs are scored as `val` and `test`), the
  `evaluate` callback's scores (`model.score` of each part) and its passing to `fit`, the
  training rows the selection reads, `select`, and the result's `selection`, `acc` and
  `selections`;
- `transfer.run_unit`: the split handed to `MoleculeEncoder.finetune`, its per-epoch rows,
  the task's metric, `select`, and the result's `task`, `selection`, score and `selections`;
- `unsupervised.run_unit`: the evaluation loader, which epochs are evaluated, the embedding, the
  SVM call, the evaluations kept, `select_epoch`, and the result's `selection`, `acc` and
  `selections`;
- `svm.svm_evaluate`: the choice of C in the parallel path (`chosen`), the per-fold records and
  the means it reports.

Their other mutants (training, checkpoints, outputs, validation of options) and the functions
that select nothing are `not checked`. The per-epoch scoring loops live outside the six files
since the estimators took them over (`SemiSupervised.score` for semi; for transfer
`MoleculeEncoder.finetune`, which calls `roc_auc` and `regression_scores`, mutated here):
mutmut does not mutate them, and the selection tests script their scores. `metrics.accuracy`
has no mutants (mutmut leaves decorated functions alone). A machine with more cores:
`MUTMUT_CHILDREN=8` and no names runs them all.
"""


def git(*args) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def run_lines(out: Path, mutated=None) -> list[str]:
    """A line per run of scripts/studies/mutation.sh (runs.tsv): its commit, time and what it ran, and
    whether its selection files equal this checkout's (the statuses describe this code only then).
    ``mutated``: the functions that have mutants (a name of another function matched none)."""
    path = out / "runs.tsv"
    if not path.is_file():
        return ["- (no record of the runs: runs/mutation/runs.tsv is missing)"]
    lines = []
    for line in path.read_text().splitlines():
        commit, when, names = (line.split("\t") + ["", ""])[:3]
        pure = commit.split("+")[0]
        same = "+" not in commit and git("diff", "--quiet", pure, "HEAD", "--", *FILES).returncode == 0
        fns: dict[str, str] = {}
        for n in names.split():
            if mutated is not None and function_of(n) not in mutated:
                continue
            k = fns.get(function_of(n), 0)
            fns[function_of(n)] = "all" if n.endswith("*") or k == "all" else k + 1
        what = "every mutant" if names == "all" else ", ".join(f"`{f}` ({k})" for f, k in sorted(fns.items()))
        lines.append(f"- {when}, commit `{commit[:12]}` (selection files {'equal to' if same else 'NOT equal to'} "
                     f"this page's commit's): {what}")
    return lines


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    draft = "--draft" in argv
    argv = [a for a in argv if a != "--draft"]
    out = Path(argv[0]) if argv else ROOT / "runs" / "mutation"
    work = out / "work"
    if not (work / "mutants").is_dir():
        print(f"mutation_notes.py: no mutmut run in {work} (run scripts/studies/mutation.sh first; the top of "
              "docs/results/mutation/survivors.md says how)", file=sys.stderr)
        return 2
    status = dict(line.strip().rsplit(": ", 1) for line in run(work, "results", "--all", "true").splitlines()
                  if ": " in line and line.strip().startswith("autogcl."))
    if not status:
        raise SystemExit(f"{work}: no mutmut results (run scripts/studies/mutation.sh first)")
    changed = diffs(work)
    notes = read_notes()
    survivors, missing, moved, stale = check(status, changed, notes)
    if draft:
        for m in missing + moved:
            print(f"{m}\t{change_of(changed.get(m, []))}\t")
        return 0
    version = importlib.metadata.version("mutmut")
    by_fn: dict[str, Counter] = {}
    for m, s in status.items():
        by_fn.setdefault(function_of(m), Counter())[s] += 1
    checked = {f: c for f, c in by_fn.items() if set(c) != {"not checked"}}
    kinds = sorted({s for c in checked.values() for s in c})
    head = git("rev-parse", "HEAD").stdout.strip()
    main_ref = git("rev-parse", "--verify", "-q", "main").stdout.strip()
    on_main = ""
    if main_ref:
        same_as_main = git("diff", "--quiet", main_ref, "HEAD", "--", *FILES).returncode == 0
        on_main = (f" (its selection files {'equal' if same_as_main else 'DIFFER FROM'} those of main at "
                   f"`{main_ref[:12]}`)")
    lines = ["# Surviving mutants of the selection code", "",
             "<!-- generated by scripts/studies/mutation_notes.py from a run of scripts/studies/mutation.sh; notes: notes.tsv -->", "",
             f"Written at commit `{head[:12]}`{on_main} with mutmut {version}. mutmut mutates `eval/svm.py`, `eval/metrics.py`, "
             "`protocols/semi.py`, `protocols/transfer.py`, `protocols/unsupervised.py` and `protocols/grid.py` "
             "and runs the selection tests alone (`tests/selection`) against each mutant. A survivor is a mutant "
             "those tests did not kill (`survived`), or one in a function they never call (`no tests`); other "
             "tests of the suite may still kill it. Each survivor below has its own note, written after reading "
             "its diff: what it changes, and why that does not change what is selected (which epoch, C or "
             "configuration a rule picks from given scores) or reported (which figure under which rule, beside "
             "which paper figure).", "", RERUN.format(version=version), "## The runs", "",
             "Each mutant's status is the one of the last run that ran it (later runs only added tests):", ""]
    lines += run_lines(out, set(by_fn))
    lines += ["", f"Functions run ({len(checked)} of {len(by_fn)}; `not checked`: mutants no run reached):", "",
              "| function | " + " | ".join(kinds) + " |", "|---|" + "---:|" * len(kinds)]
    for f in sorted(checked):
        lines.append(f"| `{f}` | " + " | ".join(str(checked[f].get(k, 0)) for k in kinds) + " |")
    total = Counter(status.values())
    lines += ["", "All mutants of the six files: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items())) + ".", "",
              "Not run at all: " + ", ".join(f"`{f}` ({c['not checked']})" for f, c in sorted(by_fn.items())
                                             if f not in checked) + ".", "",
              f"Survivors: {len(survivors)}; without a note: {len(missing)}; noted for another change: {len(moved)}; "
              f"notes of no survivor: {len(stale)}.", ""]
    if missing or moved or stale:
        lines += ["## UNREVIEWED", ""]
        lines += [f"- `{m}` ({status[m]}), no note: `{change_of(changed.get(m, []))}`" for m in missing]
        lines += [f"- `{m}`: noted for `{notes[m][0]}`, now `{change_of(changed.get(m, []))}`" for m in moved]
        lines += [f"- `{m}`: a note, but the mutant is {status.get(m, 'gone')}" for m in stale]
        lines.append("")
    fn = None
    for m in survivors:
        if function_of(m) != fn:
            fn = function_of(m)
            lines += ["", f"## `{fn}`", ""]
        diff = " / ".join(changed.get(m, [])) or "(diff not recorded)"
        note = notes.get(m, ("", "NO NOTE"))[1]
        lines.append(f"- `{m.removeprefix('autogcl.')}` ({status[m]}): `{diff}`  \n  {note}")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(survivors)} survivors; {len(missing)} without a note, {len(moved)} "
          f"noted for another change, {len(stale)} notes of no survivor")
    return 1 if missing or moved or stale else 0


if __name__ == "__main__":
    sys.exit(main())
