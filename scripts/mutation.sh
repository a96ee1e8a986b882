#!/usr/bin/env bash
# Mutation testing of the selection code (issue 35), outside CI: mutmut (pyproject's
# [tool.mutmut]: eval/svm.py, protocols/semi.py, protocols/transfer.py, protocols/grid.py,
# eval/metrics.py) against the selection tests alone (tests/selection).
#
#   bash scripts/mutation.sh                      # every mutant of the five files
#   bash scripts/mutation.sh 'autogcl.eval.svm.*'  # only the mutants whose names match
#
# It works in a copy of the tracked files under runs/mutation/work (ignored), so the
# checkout gets no mutants/ folder; the survivors' list and their diffs are written to
# runs/mutation/survivors.txt and runs/mutation/survivors.diff. The committed review of each
# survivor is docs/results/mutation/survivors.md. MUTMUT_CHILDREN (default 2) processes.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python}
out=$repo/runs/mutation
work=$out/work
data=${AUTOGCL_TEST_DATA:-$(cd "$repo/.." && pwd)/shared/data}
mkdir -p "$work"
# a fresh copy of the tracked files (mutmut keeps its cache in work/mutants: a changed source is redone)
(cd "$repo" && git ls-files -z --cached --others --exclude-standard -- autogcl tests pyproject.toml \
    | tar --null -T - -cf -) | tar -xf - -C "$work"
cd "$work"
export AUTOGCL_TEST_DATA=$data OMP_NUM_THREADS=1 PYTHONPATH=
"$py" -m mutmut run --max-children "${MUTMUT_CHILDREN:-2}" "$@" || true
"$py" -m mutmut results --all false > "$out/results.txt" 2>&1 || true
grep -E ': (survived|no tests)' "$out/results.txt" | sed 's/^ *//' > "$out/survivors.txt" || true
: > "$out/survivors.diff"
while read -r line; do
    "$py" -m mutmut show "${line%%:*}" < /dev/null >> "$out/survivors.diff" 2>&1 || true
done < "$out/survivors.txt"
echo "$(wc -l < "$out/survivors.txt") survivor(s): $out/survivors.txt, diffs in $out/survivors.diff"
