#!/usr/bin/env bash
# The full tables of docs/results/: on each TU dataset of the mirror (cheapest first), the
# unsupervised protocol (autogcl and graphcl, 5 seeds, 30 epochs, SVM at 10/20/30), then the
# semi-supervised rows labeled, graphcl_cl, naive and joint (10 folds, 1 seed). Units run on
# Ray, one CPU (one torch thread) each: on a 2-core machine two at a time.
#
#   bash scripts/tables.sh                 # everything; resumable: rerun the same command
#   DATASETS="MUTAG PROTEINS" bash scripts/tables.sh
#   EXECUTOR="--executor serial" bash scripts/tables.sh
#
# After each dataset the tables are rebuilt from what has finished (autogcl report) into
# docs/results/unsupervised.md and docs/results/semi.md, the summaries are copied beside
# them, and every command's wall time is appended to docs/results/commands.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${AUTOGCL_DATA:-../shared/data}
OUT=${OUT:-runs/tables}
EXECUTOR=${EXECUTOR:---executor ray --cpus-per-unit 1}
DATASETS=${DATASETS:-MUTAG PROTEINS IMDB-BINARY NCI1 DD REDDIT-BINARY COLLAB}
ROWS=${ROWS:-labeled,graphcl_cl,naive,joint}
RESULTS=docs/results
mkdir -p "$RESULTS"
[ -f "$RESULTS/commands.tsv" ] || printf 'started\tfinished\twall_s\texit\tcommand\n' > "$RESULTS/commands.tsv"

timed() {  # run an autogcl command, log its wall time (an interrupted or failed one too)
  local start end rc=0
  start=$(date +%s)
  .venv/bin/autogcl "$@" || rc=$?
  end=$(date +%s)
  printf '%s\t%s\t%s\t%s\tautogcl %s\n' "$(date -d @"$start" -Is)" "$(date -d @"$end" -Is)" \
    "$((end - start))" "$rc" "$*" >> "$RESULTS/commands.tsv"
  return $rc
}

publish() {  # the tables of what has finished so far, and their summaries
  local kind dest
  dest=$(realpath "$RESULTS")/summaries
  for kind in unsupervised semi; do
    if [ -d "$OUT/$kind" ] && find "$OUT/$kind" -name summary.json | grep -q .; then
      .venv/bin/autogcl report "$OUT/$kind" --out "$RESULTS/$kind.md" > /dev/null
      mkdir -p "$dest"
      (cd "$OUT" && find "$kind" -name summary.json -exec cp --parents {} "$dest/" \;)
    fi
  done
}

for ds in $DATASETS; do
  for method in autogcl graphcl; do
    # shellcheck disable=SC2086
    timed unsupervised --dataset "$ds" --method "$method" --seeds 5 --data-root "$DATA" \
      --out "$OUT/unsupervised" --resume --no-progress $EXECUTOR
  done
  publish
  # shellcheck disable=SC2086
  timed semi --dataset "$ds" --row "$ROWS" --seeds 1 --data-root "$DATA" --out "$OUT/semi" \
    --resume --no-progress $EXECUTOR
  publish
done
