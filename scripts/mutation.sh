#!/usr/bin/env bash
# Mutation testing of the selection code (issue 35), outside CI: mutmut (pyproject's
# [tool.mutmut]: eval/svm.py, protocols/semi.py, protocols/transfer.py, protocols/grid.py,
# eval/metrics.py) against the selection tests alone (tests/selection).
#
#   bash scripts/mutation.sh                      # every mutant of the five files
#   bash scripts/mutation.sh 'autogcl.eval.svm.*'  # only the mutants whose names match
#
# It works in a copy of the tracked files under runs/mutation/work (ignored), so the
# checkout gets no mutants/ folder. scripts/mutation_notes.py then writes the committed list
# of survivors, each under the note that says why it does not change what is selected:
# docs/results/mutation/survivors.md (it exits 1 while a survivor has no note).
# MUTMUT_CHILDREN (default 2) processes; MUTATION_OUT another folder than runs/mutation.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python}
out=${MUTATION_OUT:-$repo/runs/mutation}
work=$out/work
data=${AUTOGCL_TEST_DATA:-$(cd "$repo/.." && pwd)/shared/data}
mkdir -p "$work"
# a fresh copy of the tracked files (mutmut keeps its cache in work/mutants: a changed source is redone)
(cd "$repo" && git ls-files -z --cached --others --exclude-standard -- autogcl tests pyproject.toml \
    | tar --null -T - -cf -) | tar -xf - -C "$work"
cd "$work"
export AUTOGCL_TEST_DATA=$data OMP_NUM_THREADS=1 PYTHONPATH=
rm -f mutants/mutmut-stats.json  # which tests reach which function: collected again, the tests may have changed
"$py" -m mutmut run --max-children "${MUTMUT_CHILDREN:-2}" "$@" || true
cd "$repo"
"$py" scripts/mutation_notes.py "$out"
