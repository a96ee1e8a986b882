#!/usr/bin/env bash
# The full tables of docs/results/: on each TU dataset of the mirror (cheapest first), the
# unsupervised protocol (autogcl and graphcl, 5 seeds, 30 epochs, SVM at 10/20/30), then the
# semi-supervised rows labeled, graphcl_cl, naive and joint (10 folds, 1 seed). Units run on
# Ray, one CPU (one torch thread) each: on a 2-core machine two at a time.
#
#   bash scripts/docs/tables.sh                 # everything; resumable: rerun the same command
#   DATASETS="MUTAG PROTEINS" bash scripts/docs/tables.sh
#   EXECUTOR="--executor serial" bash scripts/docs/tables.sh
#   PROTOCOLS=semi ROWS=naive,joint DATASETS=NCI1 bash scripts/docs/tables.sh
#   SEMI_OPTS="--split released --select test_max" PROTOCOLS=semi DATASETS=NCI1 bash scripts/docs/tables.sh
#
# After each sweep the finished units (config.json, metrics.csv, result.json: no checkpoints)
# and the summaries are copied under docs/results/units/ and docs/results/summaries/, each
# with a provenance.json naming the code commit and device (autogcl.protocols.publishing), the
# tables are rebuilt from all committed summaries (python scripts/docs/docs.py: docs/results.md,
# docs/results/unsupervised.md, docs/results/semi.md, the queue, ...), and every command's wall time is
# appended to docs/results/commands.tsv. A fresh clone restores the committed units into the
# run folder first, so a table begun in one checkout resumes in another without redoing them
# (the rows that predate unit-keeping, listed in docs/results/README.md, have only summaries:
# name the datasets with DATASETS to skip them).
#
#   bash scripts/docs/tables.sh publish         # only copy and rebuild what has finished so far
#
# A named result set beside the tables (SET=NAME) runs into runs/NAME and keeps its units and
# summaries under docs/results/{units,summaries}/NAME/, leaving the tables alone; the loss-form
# comparison of docs/results/loss_forms.md is one:
#
#   SET=lossforms METHODS=autogcl PROTOCOLS=unsupervised DATASETS=REDDIT-BINARY \
#     UNSUP_OPTS="--sim-loss mse --cl-variant released" bash scripts/docs/tables.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=${AUTOGCL_DATA:-../shared/data}
SET=${SET:-}  # a named result set (empty: the tables)
case $SET in unsupervised | semi)  # the tables' own folders under docs/results/units/
  echo "tables.sh: SET=$SET would mix with the tables' units; choose another name" >&2; exit 2 ;;
esac
OUT=${OUT:-runs/${SET:-tables}}
EXECUTOR=${EXECUTOR:---executor ray --cpus-per-unit 1}
DATASETS=${DATASETS:-MUTAG PROTEINS IMDB-BINARY NCI1 DD REDDIT-BINARY COLLAB}
ROWS=${ROWS:-labeled,graphcl_cl,naive,joint}
PROTOCOLS=${PROTOCOLS:-unsupervised semi}
SEMI_OPTS=${SEMI_OPTS:-}  # more options of every semi command (e.g. the released code's split)
UNSUP_OPTS=${UNSUP_OPTS:-}  # more options of every unsupervised command (e.g. the released losses)
METHODS=${METHODS:-autogcl graphcl}
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

UNITS=$RESULTS/units${SET:+/$SET}
SUMMARIES=$RESULTS/summaries${SET:+/$SET}

restore() {  # committed finished units the run folder lacks (a fresh clone, another machine)
  local f unit
  [ -d "$UNITS" ] || return 0
  while IFS= read -r f; do
    unit=${f%/result.json}
    [ -f "$OUT/$unit/result.json" ] && continue
    mkdir -p "$OUT/$unit"
    cp "$UNITS/$unit"/{config.json,metrics.csv,result.json} "$OUT/$unit/"
  done < <(cd "$UNITS" && find unsupervised semi -name result.json 2>/dev/null)
}

publish() {  # finished units and summaries under docs/results/, each with its provenance.json, then the tables
  mkdir -p "$UNITS" "$SUMMARIES"
  # autogcl.protocols.publishing.publish_sweeps: the code commit and devices of what it copies
  .venv/bin/python -c 'import sys; from autogcl.protocols.publishing import publish_sweeps as p; p(*sys.argv[1:3], ".")' \
    "$OUT" "$SUMMARIES"
  if [ -z "$SET" ]; then .venv/bin/python scripts/docs/docs.py > /dev/null; fi  # every generated table
}

restore
if [ "${1:-}" = publish ]; then publish; exit 0; fi

for ds in $DATASETS; do
  if [[ " $PROTOCOLS " == *" unsupervised "* ]]; then
    for method in $METHODS; do
      # shellcheck disable=SC2086
      timed unsupervised --dataset "$ds" --method "$method" --seeds 5 --data-root "$DATA" \
        --out "$OUT/unsupervised" --resume --no-progress $EXECUTOR $UNSUP_OPTS
    done
    publish
  fi
  [[ " $PROTOCOLS " == *" semi "* ]] || continue
  for row in ${ROWS//,/ }; do  # one row at a time, so each row's table lands when it finishes
    # shellcheck disable=SC2086
    timed semi --dataset "$ds" --row "$row" --seeds 1 --data-root "$DATA" --out "$OUT/semi" \
      --resume --no-progress $EXECUTOR $SEMI_OPTS
    publish
  done
done
