#!/usr/bin/env bash
# The searches of issue 57 (defaults from evidence, the tuned table): `autogcl tune` on each TU
# dataset for each estimator, nested (each outer fold searches on its validation fold only; the
# chosen configuration's test-fold val and test_max are reported). Resumable: every search runs
# with --resume, so rerunning the same command continues where a SIGTERM, Ctrl-C or a crash left
# it (finished folds are kept, Ray Tune restores the interrupted search). Needs the tune extra
# (pip install -e '.[tune]'; scripts/setup.sh installs it).
#
#   bash scripts/studies/tune_searches.sh                        # semi, the small sets, on this machine
#   ESTIMATORS="autogcl graphcl" DATASETS="MUTAG PROTEINS" bash scripts/studies/tune_searches.sh
#   TRIALS=60 FOLDS=10 ADDRESS=10.0.0.1:6379 bash scripts/studies/tune_searches.sh   # on a running cluster
#   GPUS=0.25 DATASETS="COLLAB REDDIT-BINARY" bash scripts/studies/tune_searches.sh  # the large sets, GPU window
#
# Each search writes runs/tune/DATASET-ESTIMATOR/{search.json,foldK.json,summary.json} and its log
# to runs/tune/logs/DATASET-ESTIMATOR.log; the chosen configurations and their numbers are printed
# at the end. A signal stops the whole script after the running search has saved its state.
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=${AUTOGCL_DATA:-../shared/data}
OUT=${OUT:-runs/tune}
ESTIMATORS=${ESTIMATORS:-semi}
DATASETS=${DATASETS:-MUTAG PROTEINS IMDB-BINARY NCI1 DD}
TRIALS=${TRIALS:-40}
MAX_EPOCHS=${MAX_EPOCHS:-50}
GRACE=${GRACE:-5}
FOLD_LIMIT=${FOLD_LIMIT:-10}
CPUS=${CPUS:-}           # local cluster size (default: every core)
ADDRESS=${ADDRESS:-}     # a running cluster instead
GPUS=${GPUS:-0}          # GPUs per trial
EXTRA=${EXTRA:-}         # more options, e.g. "--space strategy=joint,supervised"
PY=${PY:-.venv/bin/python}
mkdir -p "$OUT/logs"
where=()
[ -n "$CPUS" ] && where+=(--num-cpus "$CPUS")
[ -n "$ADDRESS" ] && where+=(--address "$ADDRESS")
for est in $ESTIMATORS; do
  for ds in $DATASETS; do
    name="$ds-$est"
    echo "tune_searches: $name ($TRIALS trials per fold, $FOLD_LIMIT fold(s), up to $MAX_EPOCHS epochs)"
    rc=0
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "$PY" -m autogcl tune --estimator "$est" --dataset "$ds" \
      --trials "$TRIALS" --max-epochs "$MAX_EPOCHS" --grace-epochs "$GRACE" --fold-limit "$FOLD_LIMIT" \
      --gpus-per-trial "$GPUS" --data-root "$DATA" --out "$OUT" --resume "${where[@]}" $EXTRA \
      2>>"$OUT/logs/$name.log" || rc=$?
    if [ "$rc" -ne 0 ]; then
      echo "tune_searches: $name stopped (exit $rc; its log: $OUT/logs/$name.log); rerun this command to resume" >&2
      exit "$rc"
    fi
  done
done
"$PY" - "$OUT" <<'EOF'
import json, sys
from pathlib import Path
for s in sorted(Path(sys.argv[1]).glob("*/summary.json")):
    d = json.loads(s.read_text())
    print(f"{s.parent.name}: val {100 * d['val']['mean']:.2f} ± {100 * d['val']['std']:.2f}, "
          f"test_max {100 * d['test_max']['mean']:.2f} ± {100 * d['test_max']['std']:.2f} "
          f"over {d['val']['n']} fold(s); {d['search']['trials']} trials per fold; {d['selection']}")
EOF
