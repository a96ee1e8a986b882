#!/usr/bin/env bash
# Mutation testing of the selection code (issues 35 and 42), outside CI: mutmut 3.x mutates
# the files in FILES below and runs the selection tests alone (tests/selection) against each
# mutant. How to rerun it in a new session: the top of docs/results/mutation/survivors.md.
#
#   bash scripts/studies/mutation.sh                      # every mutant of the selection files
#   bash scripts/studies/mutation.sh 'autogcl.eval.svm.*'  # only the mutants whose names match (rerun even if done)
#
# It works in a copy of the tracked (and untracked, not ignored) files under runs/mutation/work
# (ignored), so the checkout gets no mutants/ folder; the copy's [tool.mutmut] is given FILES.
# The commit the copy was taken from is written to runs/mutation/commit (with "+changes" when
# the mutated files or tests/selection differ from it), and a line per run to
# runs/mutation/runs.tsv. scripts/studies/mutation_notes.py then writes
# docs/results/mutation/survivors.md: every survivor with its note from
# docs/results/mutation/notes.tsv (it exits 1 while a survivor has no note, a note was written
# for another change, or a note names a mutant that no longer survives).
#
# The machine is shared: one mutmut process (MUTMUT_CHILDREN, default 1), at nice 19, with
# one BLAS/OpenMP thread. MUTATION_OUT: another folder than runs/mutation; PYTHON: the
# interpreter (mutmut >= 3.3 installed in it).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python}
out=${MUTATION_OUT:-$repo/runs/mutation}
work=$out/work
data=${AUTOGCL_TEST_DATA:-$(cd "$repo/.." && pwd)/shared/data}
#: the selection files: the C grid and epoch choice of the SVM, the scores (accuracy, ROC-AUC),
#: the epoch choice and summaries of the three protocols, and the grid's configuration choice
FILES=(autogcl/eval/svm.py autogcl/eval/metrics.py autogcl/protocols/semi.py autogcl/protocols/transfer.py
       autogcl/protocols/unsupervised.py autogcl/protocols/grid.py)

version=$("$py" -c 'import mutmut; print(mutmut.__version__)' 2>/dev/null) || {
  echo "mutmut is not installed for $py: $py -m pip install 'mutmut>=3.3,<4'" >&2; exit 2; }
case $version in 3.*) ;; *) echo "mutmut $version: this script needs mutmut 3.x" >&2; exit 2 ;; esac

mkdir -p "$work"
# a fresh copy of the files (mutmut keeps its cache in work/mutants: a changed function is redone)
(cd "$repo" && git ls-files -z --cached --others --exclude-standard -- autogcl tests pyproject.toml \
    | tar --null -T - -cf -) | tar -xf - -C "$work"
commit=$(git -C "$repo" rev-parse HEAD)
if [ -n "$(git -C "$repo" status --porcelain -- "${FILES[@]}" tests/selection)" ]; then commit="$commit+changes"; fi
echo "$commit" > "$out/commit"
# every run, one line: commit, UTC time, the names it ran (all: every mutant); survivors.md lists them
printf '%s\t%s\t%s\n' "$commit" "$(date -u +%Y-%m-%dT%H:%MZ)" "${*:-all}" >> "$out/runs.tsv"
# the copy's [tool.mutmut]: FILES are mutated; tests/selection/test_nci1_outlier.py checks a
# committed note (not a selection), and needs scripts/ and docs/, which the copy leaves out
"$py" - "$work/pyproject.toml" "${FILES[@]}" <<'EOF'
import json, re, sys
path, files = sys.argv[1], sys.argv[2:]
text = open(path).read()
for key, value in (("only_mutate", files),
                   ("pytest_add_cli_args_test_selection", ["tests/selection",
                                                           "--ignore=tests/selection/test_nci1_outlier.py"])):
    text, n = re.subn(rf"(?ms)^{key} = \[.*?\]\n", f"{key} = {json.dumps(value)}\n", text)
    assert n == 1, f"pyproject.toml: no [tool.mutmut] {key} to replace"
open(path, "w").write(text)
EOF
cd "$work"
export AUTOGCL_TEST_DATA=$data OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=
rm -f mutants/mutmut-stats.json  # which tests reach which function: collected again, the tests may have changed
nice -n 19 "$py" -m mutmut run --max-children "${MUTMUT_CHILDREN:-1}" "$@" || true
cd "$repo"
"$py" scripts/studies/mutation_notes.py "$out"
