#!/usr/bin/env bash
# Molecule pre-training on the whole MOSES corpus in lent GPU calls (the queue's cell "pretrain /
# MOSES, whole corpus / 20 epochs"; a candidate for a stronger shipped encoder).
#
#   bash scripts/gpu/gpu_pretrain.sh prepare         # here: .gpu/pretrain: the corpus and RDKit, each one .xz
#   # a device call, carrying [".gpu/pretrain"]; again on the warm machine to go on:
#   AUTOGCL_COMMIT=<sha> bash scripts/gpu/gpu_pretrain.sh run
#   bash scripts/gpu/gpu_pretrain.sh unpack DIR      # here: the files of a call into runs/pretrain/$NAME
#
# run unpacks the corpus, then `autogcl transfer pretrain --resume` featurises it (all cores; about
# two minutes for 1.58 M molecules on 16) and trains until PRETRAIN_S seconds, when SIGTERM stops it
# before its next step with the checkpoint of that step. The run folder (runs/gpu_pretrain/, ignored,
# not carried) stays on the machine while it is warm, so the same command in the next call goes on
# from that step, training none again (and reads the featurised corpus from the cache there). A
# machine given back loses it: carrying a checkpoint (27 MiB: weights and Adam's moments) with RDKit
# (23 MiB), the corpus (7 MiB) and the working tree is more than the 64 MiB a call takes, so a
# fresh machine starts the run again. Under $OUT: the encoder of the last finished epoch
# (encoder.pt), metrics.csv and, once the run has finished, result.json and corpus.json.
#
# Environment: OUT and AUTOGCL_COMMIT (run), NAME (the run; default autogcl-moses-fullx20), EPOCHS (20),
# PRETRAIN_S (training's time in the call, default 500), DEVICE (cuda), WORKERS (featurising processes,
# default all cores), PRETRAIN_ARGS (more `transfer pretrain` options), SOURCE_DATA (the data root,
# default ../shared/data), CORPUS_LINES (prepare: molecules of the corpus, default all), WHEELS (prepare:
# 0 leaves RDKit out), CORPUS_FILE (run: where the corpus is unpacked, the same path in every
# call, since the run records it; default /tmp/gpu_pretrain/moses_train.csv), RUNS (run: the run folder's
# parent, default runs/gpu_pretrain; unpack: default runs), PYTHON (python3), GPU_DIR (.gpu).
set -uo pipefail
HERE="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$HERE"
STAGE=${1:?usage: gpu_pretrain.sh prepare|run|unpack DIR}
PY=${PYTHON:-python3}
P=${GPU_DIR:-.gpu}/pretrain
NAME=${NAME:-autogcl-moses-fullx20}

case $STAGE in
prepare)
  SRC=${SOURCE_DATA:-../shared/data}
  mkdir -p "$P"
  if [ ! -f "$P/moses_train.csv.xz" ]; then
    # the plain CSV (the header and CORPUS_LINES molecules, or all), recompressed: 7 MiB against the .gz's 10
    "$PY" - "$SRC/pretrain/moses_train.csv.gz" "$P/moses_train.csv.xz" "${CORPUS_LINES:-0}" <<'PYEOF' || exit 1
import gzip, itertools, lzma, os, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with gzip.open(src, "rb") as f, lzma.open(dst + ".tmp", "wb", preset=6) as g:
    g.writelines(itertools.islice(f, n + 1) if n > 0 else f)
os.replace(dst + ".tmp", dst)
PYEOF
  fi
  if [ "${WHEELS:-1}" = 1 ] && [ ! -f "$P/rdkit.tar.xz" ]; then
    # RDKit for the device's Python 3.12 (its image has none), unzipped and recompressed: 23 MiB
    # against the wheel's 30, which beside the corpus and the working tree would leave no room
    T=$(mktemp -d)
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d "$T" "rdkit==$("$PY" -c 'import rdkit; print(rdkit.__version__)')" || exit 1
    PYTHONPATH="$HERE" "$PY" scripts/gpu/ray_gpu.py repack "$T"/rdkit-*.whl "$P/rdkit.tar.xz" || exit 1
    rm -rf "$T"
  fi
  mib() { awk '{s += $1} END {printf "%.1f", s / 1048576}'; }
  tree=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 stat -c %s 2> /dev/null | mib)
  carried=$(find "$P" -type f -printf "%s\n" | mib)
  echo "gpu_pretrain: the call carries $carried MiB beside a $tree MiB working tree (64 MiB a call)"
  awk -v t="$tree" -v a="$carried" 'BEGIN {exit !(t + a > 64)}' \
    && { echo "gpu_pretrain: the call would carry more than 64 MiB" >&2; exit 1; }
  exit 0
  ;;
unpack)
  SRC=${2:?usage: gpu_pretrain.sh unpack DIR}
  [ -f "$SRC/encoder.pt" ] || { echo "gpu_pretrain: $SRC holds no encoder.pt" >&2; exit 1; }
  DEST=${RUNS:-runs}/pretrain/$NAME
  mkdir -p "$DEST"
  for f in encoder.pt metrics.csv result.json corpus.json pretrain.log; do
    [ -f "$SRC/$f" ] && cp "$SRC/$f" "$DEST/"
  done
  echo "gpu_pretrain: $DEST holds the call's files$([ -f "$DEST/result.json" ] || echo ' (the run has not finished: no result.json)')"
  exit 0
  ;;
run) ;;
*) echo "usage: gpu_pretrain.sh prepare|run|unpack DIR" >&2; exit 2 ;;
esac

: "${OUT:?set OUT to the folder that receives the files of the run}"
: "${AUTOGCL_COMMIT:?set AUTOGCL_COMMIT to the commit of the working tree the call carries}"
[ -f "$P/moses_train.csv.xz" ] || { echo "gpu_pretrain: no $P/moses_train.csv.xz: run prepare here and carry $P" >&2; exit 1; }
export AUTOGCL_COMMIT PYTHONUNBUFFERED=1
if [ -f "$P/rdkit.tar.xz" ] && ! "$PY" -c 'import rdkit' 2> /dev/null; then
  "$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' "$P/rdkit.tar.xz" /tmp/site \
    || exit 1
fi
export PYTHONPATH="$HERE:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
RUN=${RUNS:-runs/gpu_pretrain}/$NAME
mkdir -p "$OUT" "$(dirname "$RUN")"
CORPUS=${CORPUS_FILE:-/tmp/gpu_pretrain/moses_train.csv}
mkdir -p "$(dirname "$CORPUS")"
"$PY" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
  "$P/moses_train.csv.xz" "$CORPUS.tmp" && mv "$CORPUS.tmp" "$CORPUS" || exit 1
# SIGTERM at PRETRAIN_S: the run writes the checkpoint of its last step and exits 143; -k: a hung one
timeout -k 60 "${PRETRAIN_S:-500}" "$PY" -m autogcl transfer pretrain --corpus "$CORPUS" --epochs "${EPOCHS:-20}" \
  --device "${DEVICE:-cuda}" --workers "${WORKERS:-$(nproc)}" --out "$RUN" --resume --no-progress \
  ${PRETRAIN_ARGS:-} > "$OUT/pretrain.log" 2>&1
echo "gpu_pretrain: transfer pretrain exited $?"
PARTIAL="$(dirname "$RUN")/.$NAME.partial"
if [ -f "$RUN/result.json" ]; then
  for f in encoder.pt metrics.csv result.json corpus.json; do cp "$RUN/$f" "$OUT/"; done
  echo "gpu_pretrain: finished; $OUT holds its encoder and records"
elif [ -f "$PARTIAL/encoder.pt" ]; then
  for f in encoder.pt metrics.csv; do [ -f "$PARTIAL/$f" ] && cp "$PARTIAL/$f" "$OUT/"; done
  echo "gpu_pretrain: stopped; $OUT holds the encoder of its last finished epoch; the same command goes on"
else
  echo "gpu_pretrain: stopped before a finished epoch; the same command goes on"
fi
tail -3 "$OUT/pretrain.log"
