"""The mutation record of the selection functions (issues 35, 42 and 58), outside CI.

mutmut 3.x mutates the functions named in FUNCTIONS only (scripts/studies/mutation.sh) and runs
the selection tests (tests/selection) against each mutant. This script keeps
docs/results/mutation/record.json, each function's source hash beside its mutants' result, and
writes docs/results/mutation/survivors.md from it: every survivor with its own note from
docs/results/mutation/notes.tsv.

    python scripts/studies/mutation_notes.py --update [runs/mutation]  # after a run: the record, then survivors.md
    python scripts/studies/mutation_notes.py                  # survivors.md from the record and notes.tsv
    python scripts/studies/mutation_notes.py --draft          # print the notes.tsv lines to fill in
    python scripts/studies/mutation_notes.py --check          # the listed functions the record does not describe
    python scripts/studies/mutation_notes.py --files | --patterns [NAME ... | --stale]  # for mutation.sh

A function's hash is the sha256 of its code as ``ast.unparse`` writes it, without its docstring:
comments, formatting and the docstring leave it alone, and so does any edit outside the function.
tests/test_mutation_record.py fails when a listed function's hash differs from the record, naming
the command that reruns that function's mutants. A run updates the record entry of each function
it ran (the last line of runs/mutation/runs.tsv) whose every mutant has a result; the hash is the
one of the code mutmut mutated (the run's copy in runs/mutation/work).

notes.tsv holds one line per survivor: the mutant's name, the code it puts in (the ``+`` side of
its diff, as this script shows it), and a note written after reading that mutant's diff. The
script exits 1 when a survivor has no note, when a note was written for another change than the
mutant's current one (mutmut numbers a function's mutants in order, so a changed function
renumbers them), or when a note names a mutant that is not a survivor in the record.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "results" / "mutation"
OUT = DOCS / "survivors.md"
NOTES = DOCS / "notes.tsv"
RECORD = DOCS / "record.json"
HEADER = "mutant\tchange\tnote"
#: mutmut statuses that mean no selection test failed
SURVIVING = ("survived", "no tests")
#: the selection functions, the only ones mutated (``module.function`` under ``autogcl``)
FUNCTIONS = (
    # the C rule (inner-CV accuracy, first best on ties), one outer fold, the epoch rule, both selections
    "eval.svm._choose", "eval.svm._outer_fold", "eval.svm.select_epoch", "eval.svm.svm_protocol",
    # the scores the transfer rules read
    "eval.metrics.roc_auc", "eval.metrics.regression_scores",
    # the protocols' epoch rules and summaries
    "protocols.semi.select", "protocols.semi.summarize", "protocols.semi.make_summary",
    "protocols.transfer.select", "protocols.transfer._select_regression", "protocols.transfer.summarize",
    "protocols.transfer._spread", "protocols.transfer.make_summary", "protocols.transfer._pretraining",
    "protocols.unsupervised.summarize", "protocols.unsupervised.make_summary",
    # the configuration rule of a grid and its report
    "protocols.grid.validation_score", "protocols.grid.grid_report", "protocols.grid.write_reports",
    # the configuration rule of autogcl tune (each outer fold's chosen trial)
    "protocols.tune.choose",
)


def file_of(function: str) -> str:
    """``eval.svm.select_epoch`` -> ``autogcl/eval/svm.py``."""
    return "autogcl/" + function.rpartition(".")[0].replace(".", "/") + ".py"


def files() -> list[str]:
    return sorted({file_of(f) for f in FUNCTIONS})


def pattern_of(function: str) -> str:
    """mutmut's names of a function's mutants: ``autogcl.eval.svm.x_select_epoch__mutmut_*``."""
    module, _, name = function.rpartition(".")
    return f"autogcl.{module}.x_{name}__mutmut_*"


def source_hash(source: str, name: str, where: str = "<source>") -> str:
    """sha256 of the top-level function ``name`` of ``source`` as ``ast.unparse`` writes it,
    without its docstring (so comments, formatting and the docstring do not count)."""
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
            return hashlib.sha256(ast.unparse(node).encode()).hexdigest()
    raise LookupError(f"{where}: no top-level function {name!r}")


def current_hashes(root: Path = ROOT) -> dict[str, str | LookupError]:
    """Each listed function's hash in the tree at ``root`` (a LookupError where it is gone)."""
    sources: dict[str, str] = {}
    out: dict[str, str | LookupError] = {}
    for fn in FUNCTIONS:
        path = file_of(fn)
        try:
            if path not in sources:
                sources[path] = (root / path).read_text()
            out[fn] = source_hash(sources[path], fn.rpartition(".")[2], path)
        except (OSError, LookupError) as e:
            out[fn] = LookupError(f"{path}: {e}" if isinstance(e, OSError) else str(e))
    return out


def read_record(path: Path = RECORD) -> dict:
    if not path.is_file():
        return {"functions": {}}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise SystemExit(f"{path}: not valid JSON ({e})")


def rerun_command(functions) -> str:
    return "PYTHON=$PWD/.venv/bin/python bash scripts/studies/mutation.sh " + " ".join(functions)


def stale(root: Path = ROOT, record: dict | None = None) -> dict[str, str]:
    """function -> why the record does not describe it: its code changed since its mutants ran,
    it has no entry, it is gone from its file, or the record names a function FUNCTIONS lacks.
    Empty when the record covers every listed function as the code at ``root`` is."""
    entries = (read_record() if record is None else record).get("functions", {})
    out = {}
    for fn, h in current_hashes(root).items():
        entry = entries.get(fn)
        if isinstance(h, LookupError):
            out[fn] = f"not found ({h}): rename it in FUNCTIONS (scripts/studies/mutation_notes.py) too"
        elif entry is None:
            out[fn] = "listed in FUNCTIONS but the record has no mutation result for it"
        elif entry.get("hash") != h:
            out[fn] = (f"its code changed since its mutants ran (hash {h[:12]}, the record's {str(entry.get('hash'))[:12]} "
                       f"from commit {str(entry.get('commit'))[:12]})")
    for fn in sorted(set(entries) - set(FUNCTIONS)):
        out[fn] = "in the record but not in FUNCTIONS: remove its entry from the record"
    return out


def stale_message(problems: dict[str, str]) -> str:
    rerun = [fn for fn in problems if fn in FUNCTIONS]
    lines = [f"the mutation record ({RECORD.relative_to(ROOT)}) does not describe {len(problems)} selection "
             "function(s):"] + [f"  {fn}: {why}" for fn, why in problems.items()]
    if rerun:
        lines += ["rerun their mutants and commit the record in the same change (docs/results/mutation/survivors.md "
                  "says how):", f"  {rerun_command(rerun)}",
                  "then write a note in docs/results/mutation/notes.tsv for each new survivor "
                  "(python scripts/studies/mutation_notes.py --draft prints the lines to fill in)"]
    return "\n".join(lines)


# ------------------------------------------------------------------ reading a mutmut run
def mutmut(work: Path, *args) -> str:
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


def durations(work: Path) -> dict[str, float]:
    """mutant name -> seconds its tests ran (mutmut's .meta files; empty where they lack it)."""
    out: dict[str, float] = {}
    for meta in (work / "mutants").rglob("*.py.meta"):
        try:
            out.update(json.loads(meta.read_text()).get("durations_by_key", {}))
        except (OSError, json.JSONDecodeError):
            pass
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


def last_run(out: Path) -> tuple[str, str, set[str]]:
    """(commit, UTC time, functions) of the last line of runs.tsv (mutation.sh writes it)."""
    lines = (out / "runs.tsv").read_text().splitlines() if (out / "runs.tsv").is_file() else []
    if not lines:
        raise SystemExit(f"{out / 'runs.tsv'}: no run recorded (run scripts/studies/mutation.sh)")
    commit, when, names = (lines[-1].split("\t") + ["", ""])[:3]
    return commit, when, {function_of(n) for n in names.split()}


def update_record(out: Path, record: dict) -> list[str]:
    """Write the result of the last run into ``record`` for each function it ran whose every
    mutant has a result; returns the functions it ran that still lack one (left as they were)."""
    work = out / "work"
    status = dict(line.strip().rsplit(": ", 1) for line in mutmut(work, "results", "--all", "true").splitlines()
                  if ": " in line and line.strip().startswith("autogcl."))
    if not status:
        raise SystemExit(f"{work}: no mutmut results (run scripts/studies/mutation.sh first)")
    commit, when, ran = last_run(out)
    changed, seconds = diffs(work), durations(work)
    version = importlib.metadata.version("mutmut")
    hashes = current_hashes(work)
    by_fn: dict[str, dict[str, str]] = {}
    for m, s in status.items():
        by_fn.setdefault(function_of(m), {})[m] = s
    incomplete = []
    entries = record.setdefault("functions", {})
    for fn in FUNCTIONS:
        mutants = by_fn.get(fn, {})
        if fn not in ran:
            continue
        if not mutants or "not checked" in mutants.values() or isinstance(hashes[fn], LookupError):
            incomplete.append(fn)
            continue
        entries[fn] = {
            "file": file_of(fn), "hash": hashes[fn], "commit": commit, "run": when, "mutmut": version,
            "mutants": len(mutants), "results": dict(sorted(Counter(mutants.values()).items())),
            "test_seconds": round(sum(seconds.get(m, 0.0) for m in mutants), 1),
            "survivors": {m: {"status": s, "diff": changed.get(m, [])}
                          for m, s in sorted(mutants.items(), key=lambda kv: order(kv[0])) if s in SURVIVING},
        }
    record["functions"] = {fn: entries[fn] for fn in FUNCTIONS if fn in entries}
    # mutation.sh writes "seconds processes" when mutmut ends (no file: the run was cut)
    took = (out / "seconds").read_text().split() if (out / "seconds").is_file() else [None, None]
    record["last_run"] = {"commit": commit, "run": when, "mutmut": version, "functions": sorted(ran & set(FUNCTIONS)),
                          "wall_seconds": took[0] and int(took[0]), "children": took[1] and int(took[1])}
    return incomplete


def write_record(record: dict, path: Path = RECORD) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


# ------------------------------------------------------------------ notes and the page
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


def survivors_of(record: dict) -> dict[str, dict]:
    """mutant -> {"status", "diff"} over every function of the record."""
    return {m: s for e in record.get("functions", {}).values() for m, s in e.get("survivors", {}).items()}


def check(record: dict, notes: dict[str, tuple[str, str]]):
    """(survivors, survivors without a note, notes for another change, notes of no survivor)."""
    surv = survivors_of(record)
    survivors = sorted(surv, key=order)
    missing = [m for m in survivors if m not in notes]
    moved = [m for m in survivors if m in notes and notes[m][0] != change_of(surv[m]["diff"])]
    gone = sorted((m for m in notes if m not in surv), key=order)
    return survivors, missing, moved, gone


RERUN = """## How to rerun it (outside CI)

tests/test_mutation_record.py (in CI) fails when a listed function's code differs from its entry
in `record.json`, and names the command that reruns that function's mutants. In a session, from the
root of a checkout (the data mirror beside it, `../shared/data`, or `AUTOGCL_TEST_DATA=...`):

1. mutmut 3.x in the project's interpreter: `.venv/bin/python -m pip install 'mutmut>=3.3,<4'` (or
   the `dev` extra; not a dependency of the package). The script checks the major version.
2. `PYTHON=$PWD/.venv/bin/python bash scripts/studies/mutation.sh eval.svm.select_epoch ...` reruns
   every mutant of the functions named (as in `FUNCTIONS` of `scripts/studies/mutation_notes.py`);
   `--stale` names those whose code differs from the record; no name runs every listed function.
   It copies the tracked files into `runs/mutation/work` (ignored), runs one mutmut process at
   `nice -n 19` with one thread against `tests/selection`, then runs
   `scripts/studies/mutation_notes.py --update`, which writes the result and the hash of each
   function it ran into `record.json` and writes this page from the record. mutmut generates the mutants of
   the whole files but runs only those of the functions named.
3. This page lists each survivor with its note from `notes.tsv`; the generator exits 1 while a
   survivor has no note, a note was written for another change, or a note names a mutant that is
   not a survivor. `python scripts/studies/mutation_notes.py --draft` prints the lines to fill in;
   read each mutant's diff (below, or `cd runs/mutation/work && python -m mutmut show NAME`)
   before writing its note. A survivor that changes what is selected or reported is a gap: add a
   test in `tests/selection` that kills it instead of a note.
4. Commit `record.json`, `survivors.md` and `notes.tsv` with the change to the function.

A function's hash is the sha256 of its code as `ast.unparse` writes it, without its docstring:
comments, formatting, the docstring and any other function do not count. A change to a function
a listed one calls (outside the list) or to the selection tests does not mark the record stale.
Entries run at different commits may have met different selection tests; a run with no names
puts every function on one commit (about four minutes here).
"""

NOT_LISTED = """## What is not listed

The functions on a protocol's training path (`semi.run_fold`, `transfer.run_unit`,
`unsupervised.run_unit`) and `svm.svm_evaluate` (the SVM's folds, its parallel path and its
checks) are not mutated: a survivor there trains a fold or a seed, and most of their mutants
change training, checkpoints, outputs or error messages, not a selection. The wiring they add
(which parts are scored, which selection a run reports) is checked by the end-to-end tests of
`tests/selection` and by `scripts/studies/selection_flips.py` (`flips.txt`). An earlier record
(commit 733f076, whole files) mutated their selecting lines with no survivor that changed a
figure. `metrics.accuracy` has no mutants (mutmut leaves decorated functions alone). In
`autogcl tune`, the trial's running scores (`_Record.epoch`, a method) are not listed; its
choice of configuration (`tune.choose`) is.
"""


def page(record: dict, notes: dict[str, tuple[str, str]]) -> tuple[str, tuple]:
    survivors, missing, moved, gone = check(record, notes)
    entries = record.get("functions", {})
    surv = survivors_of(record)
    problems = stale(ROOT, record)
    kinds = sorted({k for e in entries.values() for k in e.get("results", {})})
    commits = sorted({e["commit"] for e in entries.values()})
    lines = ["# Surviving mutants of the selection functions", "",
             "<!-- generated by scripts/studies/mutation_notes.py from record.json and notes.tsv -->", "",
             f"mutmut mutates the {len(FUNCTIONS)} selection functions listed in `FUNCTIONS` of "
             "`scripts/studies/mutation_notes.py` (the C rule, the epoch rules, the configuration rules of a grid and of "
             "`autogcl tune`, the "
             "scores the rules read and the summaries that report the figures), and no other code, and runs the "
             "selection tests (`tests/selection`) against each mutant. `record.json` keeps each function's source "
             "hash beside its result, so the record goes stale only when a listed function changes, and a rerun "
             "redoes only that function. A survivor is a mutant those tests did not kill (`survived`), or one in a "
             "function they never call (`no tests`); other tests of the suite may still kill it. Each survivor "
             "below has its own note, written after reading its diff: what it changes, and why that does not "
             "change what is selected (which epoch, C or configuration a rule picks from given scores) or "
             "reported (which figure under which rule).", "",
             RERUN, NOT_LISTED, "## The record", ""]
    if problems:
        lines += ["**STALE**: the record does not describe these functions as the code of this page's checkout "
                  "is:", ""] + [f"- `{fn}`: {why}" for fn, why in problems.items()] + [""]
    else:
        lines += [f"Every listed function's code equals its record entry's (hashes checked when this page was "
                  f"written, and in CI). Runs at commit(s) {', '.join(f'`{c[:12]}`' for c in commits)}.", ""]
    last = record.get("last_run")
    if last:
        took = f"{last['wall_seconds']} s of wall time" if last.get("wall_seconds") is not None else "an unrecorded time"
        lines += [f"The last run (`{last['commit'][:12]}`, {last['run']}, mutmut {last['mutmut']}, "
                  f"{last.get('children') or '?'} mutmut process(es) at `nice -n 19` on the shared 2-core machine) ran "
                  f"{len(last['functions'])} of the {len(FUNCTIONS)} functions in {took}.", ""]
    lines += ["| function | commit | run (UTC) | mutants | " + " | ".join(kinds) + " | test seconds |",
              "|---|---|---|---:|" + "---:|" * len(kinds) + "---:|"]
    for fn in FUNCTIONS:
        e = entries.get(fn)
        if e is None:
            lines.append(f"| `{fn}` | (no result) | | | " + " | " * len(kinds) + " |")
            continue
        lines.append(f"| `{fn}` | `{e['commit'][:12]}` | {e['run']} | {e['mutants']} | "
                     + " | ".join(str(e['results'].get(k, 0)) for k in kinds) + f" | {e.get('test_seconds', '')} |")
    total = Counter()
    for e in entries.values():
        total.update(e.get("results", {}))
    lines += ["", "All: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items())) + f", in "
              f"{sum(e.get('test_seconds', 0) for e in entries.values()) / 60:.1f} min of test time (mutmut's "
              "durations; the wall time adds mutmut's start and its collection of which tests reach which function).",
              "", f"Survivors: {len(survivors)}; without a note: {len(missing)}; noted for another change: {len(moved)}; "
              f"notes of no survivor: {len(gone)}.", ""]
    if missing or moved or gone:
        lines += ["## UNREVIEWED", ""]
        lines += [f"- `{m}` ({surv[m]['status']}), no note: `{change_of(surv[m]['diff'])}`" for m in missing]
        lines += [f"- `{m}`: noted for `{notes[m][0]}`, now `{change_of(surv[m]['diff'])}`" for m in moved]
        lines += [f"- `{m}`: a note, but the mutant is not a survivor in the record" for m in gone]
        lines.append("")
    fn = None
    for m in survivors:
        if function_of(m) != fn:
            fn = function_of(m)
            lines += ["", f"## `{fn}`", ""]
        diff = " / ".join(surv[m]["diff"]) or "(diff not recorded)"
        note = notes.get(m, ("", "NO NOTE"))[1]
        lines.append(f"- `{m.removeprefix('autogcl.')}` ({surv[m]['status']}): `{diff}`  \n  {note}")
    return "\n".join(lines) + "\n", (survivors, missing, moved, gone)


def patterns(names: list[str]) -> list[str]:
    """mutmut names of the functions named (``--stale``: those the record does not describe; none: all)."""
    if names == ["--stale"]:
        chosen = [fn for fn in stale() if fn in FUNCTIONS]
    else:
        unknown = [n for n in names if n not in FUNCTIONS]
        if unknown:
            raise SystemExit(f"not a listed selection function: {', '.join(unknown)}; choose from {', '.join(FUNCTIONS)}")
        chosen = names or list(FUNCTIONS)
    return [pattern_of(fn) for fn in chosen]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--files"]:
        print("\n".join(files()))
        return 0
    if argv[:1] == ["--patterns"]:
        print("\n".join(patterns(argv[1:])))
        return 0
    if argv[:1] == ["--check"]:
        problems = stale()
        print(stale_message(problems) if problems else f"the mutation record covers the {len(FUNCTIONS)} listed "
              "selection functions as they are")
        return 1 if problems else 0
    draft = "--draft" in argv
    record = read_record()
    if argv[:1] == ["--update"]:  # mutation.sh, after its run
        out = Path(argv[1]) if len(argv) > 1 else ROOT / "runs" / "mutation"
        if not (out / "work" / "mutants").is_dir():
            print(f"mutation_notes.py: no mutmut run in {out / 'work'} (run scripts/studies/mutation.sh first)",
                  file=sys.stderr)
            return 2
        incomplete = update_record(out, record)
        write_record(record)
        if incomplete:
            print(f"mutation_notes.py: the last run left mutants without a result in {', '.join(incomplete)} "
                  "(their record entries are unchanged)", file=sys.stderr)
    elif argv and not draft:
        raise SystemExit(f"mutation_notes.py: unknown arguments {argv} (see its docstring)")
    notes = read_notes()
    if draft:
        _, missing, moved, _ = check(record, notes)
        surv = survivors_of(record)
        for m in missing + moved:
            print(f"{m}\t{change_of(surv[m]['diff'])}\t")
        return 0
    text, (survivors, missing, moved, gone) = page(record, notes)
    tmp = OUT.with_suffix(".md.tmp")
    tmp.write_text(text)
    os.replace(tmp, OUT)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(survivors)} survivors; {len(missing)} without a note, {len(moved)} "
          f"noted for another change, {len(gone)} notes of no survivor")
    return 1 if missing or moved or gone else 0


if __name__ == "__main__":
    sys.exit(main())
