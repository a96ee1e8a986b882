#!/usr/bin/env bash
# The GPU parts of the full tables (docs/results/README.md), on one machine with one GPU and
# many cores, time-boxed and resumable: every unit (dataset x seed, or dataset x method x
# seed) is its own process, JOBS at a time, all sharing the GPU; each stops cleanly
# (SIGTERM; its last checkpoint is kept) at the deadline, and the same command continues later.
#
#   bash scripts/gpu/gpu_runs.sh pretrain [SECONDS]    # AutoGCL pre-training on the whole corpus
#   bash scripts/gpu/gpu_runs.sh finetune [SECONDS]    # the FINETUNE job list below
#   bash scripts/gpu/gpu_runs.sh tu [SECONDS]          # unsupervised DD, REDDIT-BINARY, COLLAB
#
# Environment: AUTOGCL_DATA (data root), RUNS (runs folder, default runs/gpu), JOBS (processes
# at a time, default: cores - 2), PYTHON (default python3), EPOCHS_PRETRAIN (default 20),
# MPS (default 1: start the CUDA MPS daemon if none runs),
# FINETUNE: job lines "TAG CHECKPOINT|- DATASET SEED EPOCHS" (default: the four main sets,
# 10 seeds, 100 epochs, from $RUNS/pretrain/autogcl-moses-full/encoder.pt).
# A final serial pass (`--resume`) over each finished group writes its summary.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
STAGE=${1:?usage: gpu_runs.sh pretrain|finetune|tu [SECONDS]}
export DEADLINE=$(( $(date +%s) + ${2:-540} ))
export RUNS=${RUNS:-runs/gpu} PY=${PYTHON:-python3} DEVICE=${DEVICE:-cuda}
JOBS=${JOBS:-$(( $(nproc) > 3 ? $(nproc) - 2 : 1 ))}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} PYTHONUNBUFFERED=1
mkdir -p "$RUNS/logs"

# CUDA MPS lets the units' kernels run side by side on the one GPU instead of taking turns:
# on an H100 with 10-11 fine-tuning units at a time, a 100-epoch unit took about 110 s with
# MPS and about 210 s without (docs/results/gpu.md). Started once per machine; MPS=0: off.
if [ "${MPS:-1}" = 1 ] && [ "$DEVICE" != cpu ] && command -v nvidia-cuda-mps-control > /dev/null \
    && ! pgrep -f nvidia-cuda-mps-control > /dev/null; then
  nvidia-cuda-mps-control -d && echo "CUDA MPS daemon started"
fi

left() { echo $(( DEADLINE - $(date +%s) )); }

# one unit: NAME ARGS...; skipped when less than 20 s are left, stopped at the deadline
unit() {
  local name=$1; shift
  local rem; rem=$(left)
  [ "$rem" -gt 20 ] || { echo "skip $name (deadline)"; return 0; }
  local t0=$SECONDS rc=0
  timeout -k 30 "$rem" "$PY" -m autogcl "$@" --no-progress --resume > "$RUNS/logs/$name.log" 2>&1 || rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(( SECONDS - t0 ))" >> "$RUNS/logs/units.tsv"
}
export -f unit left

case $STAGE in
pretrain)
  # featurising the corpus (RDKit, ~800 molecules/s per core: ~2,000 core-seconds for the 1.58 M
  # MOSES molecules) comes first and is cached; give it the machine's cores alone
  unit pretrain-autogcl-moses-full transfer pretrain --epochs "${EPOCHS_PRETRAIN:-20}" \
    --out "$RUNS/pretrain/autogcl-moses-full" --device "$DEVICE" --workers "$(nproc)"
  ;;
finetune)
  FINETUNE=${FINETUNE:-$(for seed in 0 1 2 3 4 5 6 7 8 9; do for ds in bbbp bace clintox sider; do
    echo "moses-full $RUNS/pretrain/autogcl-moses-full/encoder.pt $ds $seed 100"; done; done)}
  # featurise each dataset once (all cores) before the units share it through the cache
  echo "$FINETUNE" | awk '{print $3}' | sort -u | while read -r ds; do
    "$PY" -c "import autogcl.data.moleculenet as m; m.load_moleculenet('$ds', progress=False)"
  done
  echo "$FINETUNE" | xargs -P "$JOBS" -L 1 bash -c '
    ckpt=(); [ "$1" = - ] || ckpt=(--checkpoint "$1")
    unit "ft-$0-$2-seed$3" transfer finetune --dataset "$2" --first-seed "$3" --seeds 1 --epochs "$4" \
      --tag "$0" "${ckpt[@]}" --out "$RUNS/transfer" --device "$DEVICE" --workers 1'
  # summaries of the groups whose seeds all finished
  echo "$FINETUNE" | awk '{print $1, $2, $3, $5}' | sort -u | while read -r tag ckpt ds ep; do
    n=$(echo "$FINETUNE" | awk -v t="$tag" -v d="$ds" '$1 == t && $3 == d' | wc -l)
    first=$(echo "$FINETUNE" | awk -v t="$tag" -v d="$ds" '$1 == t && $3 == d {print $4}' | sort -n | head -1)
    done_n=$(find "$RUNS/transfer/$tag/$ds" -maxdepth 2 -name result.json 2>/dev/null | wc -l)
    [ "$done_n" -ge "$n" ] || { echo "$tag/$ds: $done_n of $n seeds finished"; continue; }
    ckpt_arg=(); [ "$ckpt" = - ] || ckpt_arg=(--checkpoint "$ckpt")
    "$PY" -m autogcl transfer finetune --dataset "$ds" --first-seed "$first" --seeds "$n" --epochs "$ep" \
      --tag "$tag" "${ckpt_arg[@]}" --out "$RUNS/transfer" --device "$DEVICE" --workers 1 --resume \
      --no-progress > "$RUNS/logs/summary-$tag-$ds.log" 2>&1 || echo "summary $tag/$ds failed"
  done
  ;;
tu)
  TU=${TU:-$(for seed in 0 1 2 3 4; do for ds in DD REDDIT-BINARY COLLAB; do for m in autogcl graphcl; do
    echo "$ds $m $seed"; done; done; done)}
  echo "$TU" | xargs -P "$JOBS" -L 1 bash -c '
    unit "unsup-$0-$1-seed$2" unsupervised --dataset "$0" --method "$1" --first-seed "$2" --seeds 1 \
      --out "$RUNS/unsupervised" --device "$DEVICE" --jobs 1'
  echo "$TU" | awk '{print $1, $2}' | sort -u | while read -r ds m; do
    n=$(echo "$TU" | awk -v d="$ds" -v mm="$m" '$1 == d && $2 == mm' | wc -l)
    done_n=$(find "$RUNS/unsupervised" -path "*/$ds-$m*/seed*/result.json" 2>/dev/null | wc -l)
    [ "$done_n" -ge "$n" ] || { echo "$ds/$m: $done_n of $n seeds finished"; continue; }
    "$PY" -m autogcl unsupervised --dataset "$ds" --method "$m" --seeds "$n" --out "$RUNS/unsupervised" \
      --device "$DEVICE" --jobs 4 --resume --no-progress > "$RUNS/logs/summary-$ds-$m.log" 2>&1 || true
  done
  ;;
*) echo "unknown stage $STAGE" >&2; exit 2 ;;
esac
echo "stage $STAGE done with $(left) s left"
