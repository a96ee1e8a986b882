#!/usr/bin/env bash
# Mutation testing of the selection functions (issues 35, 42 and 58), outside CI: mutmut 3.x runs
# the mutants of the functions listed in FUNCTIONS of scripts/studies/mutation_notes.py, and no
# other code, against the selection tests alone (tests/selection). How to rerun it in a new
# session: the top of docs/results/mutation/survivors.md.
#
#   bash scripts/studies/mutation.sh                                   # every listed function
#   bash scripts/studies/mutation.sh eval.svm.select_epoch protocols.semi.select  # those functions
#   bash scripts/studies/mutation.sh --stale                           # those whose code differs from the record
#
# Every mutant of the functions named is run, even when mutmut has a result for it. It works in a
# copy of the tracked (and untracked, not ignored) files under runs/mutation/work (ignored), so
# the checkout gets no mutants/ folder; the copy's [tool.mutmut] is given the listed functions'
# files. The commit the copy was taken from (with "+changes" when those files or tests/selection
# differ from it) and the functions run are written as a line of runs/mutation/runs.tsv.
# scripts/studies/mutation_notes.py --update then writes each function's result and source hash into
# docs/results/mutation/record.json and writes docs/results/mutation/survivors.md from it (it
# exits 1 while a survivor has no note in docs/results/mutation/notes.tsv).
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
case $py in /*) ;; */*) py=$(cd "$(dirname "$py")" && pwd)/$(basename "$py") ;; esac  # mutmut runs in the copy
notes="$repo/scripts/studies/mutation_notes.py"
# the files of the listed functions, and the mutmut names of the functions asked for
files=$("$py" "$notes" --files) && names=$("$py" "$notes" --patterns "$@") || exit 2
mapfile -t FILES <<< "$files"
if [ -z "$names" ]; then echo "mutation.sh: no function to run (--stale: the record is current)"; exit 0; fi
mapfile -t NAMES <<< "$names"

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
# every run, one line: commit, UTC time, the mutmut names it ran (mutation_notes.py reads the last)
printf '%s\t%s\t%s\n' "$commit" "$(date -u +%Y-%m-%dT%H:%MZ)" "${NAMES[*]}" >> "$out/runs.tsv"
# the copy's [tool.mutmut]: FILES are mutated (only NAMES run); tests/selection/test_nci1_outlier.py checks a
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
# a file that mutmut copied unmutated in an earlier run (before it held a listed function) would
# count as done (its copy is newer than the source): remove such copies, so that it is mutated
for f in "${FILES[@]}"; do
  if [ -f "$work/mutants/$f" ] && ! grep -q "__mutmut_" "$work/mutants/$f"; then rm -f "$work/mutants/$f" "$work/mutants/$f.meta"; fi
done
cd "$work"
export AUTOGCL_TEST_DATA=$data OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=
rm -f mutants/mutmut-stats.json  # which tests reach which function: collected again, the tests may have changed
rm -f "$out/seconds"  # written when mutmut ends: the wall time of the run, which the record keeps
start=$(date +%s)
nice -n 19 "$py" -m mutmut run --max-children "${MUTMUT_CHILDREN:-1}" "${NAMES[@]}" || true
took=$(( $(date +%s) - start ))
echo "$took ${MUTMUT_CHILDREN:-1}" > "$out/seconds"  # seconds, mutmut processes
echo "mutation.sh: mutmut ran ${#NAMES[@]} function(s) in $took s"
cd "$repo"
"$py" "$notes" --update "$out"
