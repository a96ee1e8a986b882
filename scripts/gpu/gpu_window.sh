#!/usr/bin/env bash
# One bounded GPU window: the most valuable missing cells of the paper, packed onto one lent GPU,
# within a budget, then every finished unit and summary returned as one file (docs/reproducing.md).
#
#   bash scripts/gpu/gpu_window.sh prepare        # here: copy what the window needs into .gpu/window
#   AUTOGCL_COMMIT=<sha> bash scripts/gpu/gpu_window.sh run   # there, in one device call, carry .gpu/window
#   bash scripts/gpu/gpu_window.sh unpack DIR     # here: unpack DIR/window.tar.gz, regenerate the tables
#
# `run` calls `autogcl reproduce --missing --budget`: a unit starts only when its time, estimated
# from committed runs on the same device, fits what is left; JOBS units share the GPU (each its own
# process, one CPU thread; CUDA MPS when available); at the budget the running ones get SIGTERM,
# write their checkpoint and stop. Every finished unit, and the summary of each cell whose seeds
# 0..k-1 finished, is published under docs/results/ and packed into $OUT/window.tar.gz, with the
# log ($OUT/window.log). The same call resumes: committed units are restored before planning.
#
# Environment: OUT (where the results go; required for run), BUDGET (seconds, default 500, autogcl.protocols.estimates.GPU_WINDOW_S: with
# the start, GRACE and the packing, it fits a 600-second call), GRACE (30), JOBS (8), DEVICE (cuda),
# ONLY (cells whose "protocol / label" contains one of its comma-separated texts; default
# "transfer / ,semi / REDDIT-BINARY" (the latter when its data was carried): the cells with a GPU
# estimate whose data travels; a semi
# cell runs the next folds that fit, --fold-limit), TU_SETS (the TU sets prepare copies as they are; default none:
# with the RDKit wheel, REDDIT-BINARY's 6 MB would take the call past 64 MiB), PACK_SETS (the TU sets it packs as bits, scripts/gpu/tu_pack.py; default COLLAB), SKIP_SETS (MoleculeNet sets prepare leaves out; default muv hiv), COMPUTE (gpu), UNIT_SECONDS (assumed unit time where no committed
# run estimates it), DATA (data root; default .gpu/window/data), ROOT (the repository whose
# docs/results receives the runs; default .), PYTHON (python3), AUTOGCL_COMMIT (the code's
# commit: the device's copy has no git folder).
set -uo pipefail
HERE="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$HERE"
STAGE=${1:-run}
WINDOW=${WINDOW:-.gpu/window}
PY=${PYTHON:-python3}

if [ "$STAGE" = prepare ]; then
  # the MoleculeNet files, COLLAB packed (its raw files alone exceed the 64 MiB a call carries),
  # the TU_SETS, and RDKit as a wheel for the device's Python 3.12 (its image has none)
  SRC=${SOURCE_DATA:-../shared/data}
  mkdir -p "$WINDOW/data/TU" "$WINDOW/whl"
  # writable copies (the mirror is read-only), so that prepare can run again over them; without the
  # sets whose unit never fits a window (SKIP_SETS, default muv hiv), so that all travels in 64 MiB
  cp -r --no-preserve=mode "$SRC/moleculenet" "$WINDOW/data/"
  for d in ${SKIP_SETS-muv hiv}; do rm -f "$WINDOW/data/moleculenet/$d".*; done
  for d in ${TU_SETS-}; do cp -r --no-preserve=mode "$SRC/TU/$d" "$WINDOW/data/TU/"; done
  # the large dense sets as bits (scripts/gpu/tu_pack.py: COLLAB's 59 MB of gzipped text in 1.5 MB);
  # run unpacks them into the data folder, checking each file's SHA-256
  for d in ${PACK_SETS-COLLAB}; do
    [ -d "$WINDOW/packed/$d" ] || "$PY" scripts/gpu/tu_pack.py pack "$SRC/TU/$d" "$WINDOW/packed/$d" || exit 1
  done
  if [ "${WHEELS:-1}" = 1 ] && ! ls "$WINDOW"/whl/rdkit-*.whl > /dev/null 2>&1; then
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d "$WINDOW/whl" "rdkit==$("$PY" -c 'import rdkit; print(rdkit.__version__)')" \
      || echo "gpu_window: no RDKit wheel (transfer cells need it on the device)" >&2
  fi
  du -sh "$WINDOW"
  echo "carry $WINDOW (the call sends it with the working tree: 64 MiB in all)"
  exit 0
fi

if [ "$STAGE" = unpack ]; then
  SRC=${2:?usage: gpu_window.sh unpack DIR (the folder holding window.tar.gz)}
  tar xzf "$SRC/window.tar.gz" -C "$HERE"
  PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}" "$PY" scripts/docs/docs.py
  echo "unpacked $SRC/window.tar.gz; commit docs/results/ and the regenerated pages"
  exit 0
fi

# what the window published (units, summaries, provenance), as one file with the units' logs: every
# file of each folder that holds one written since $STAMP (a unit that finished before the window, in
# a window stopped by a signal, is published now with its files' own times: all of it travels)
pack() {
  (cd "$ROOT" && { find docs/results -type f -newer "$STAMP" -printf '%h\n' 2> /dev/null | sort -u \
      | while read -r dir; do find "$dir" -maxdepth 1 -type f; done
    find runs/reproduce/logs -type f 2> /dev/null; } | sort -u | tar czf "$OUT/window.tar.gz" -T -)
}
if [ "$STAGE" = pack ]; then  # the packing alone (tests): ROOT, OUT, STAMP
  : "${ROOT:?set ROOT}" "${OUT:?set OUT}" "${STAMP:?set STAMP}"
  pack
  exit $?
fi
[ "$STAGE" = run ] || { echo "usage: gpu_window.sh prepare|run|unpack DIR" >&2; exit 2; }
: "${OUT:?set OUT to the folder that receives window.tar.gz and window.log}"
mkdir -p "$OUT"
ROOT=$(cd "${ROOT:-.}" && pwd)
DATA=${DATA:-$WINDOW/data}
DATA=$(cd "$DATA" && pwd)
DEVICE=${DEVICE:-cuda}
export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
if ls "$WINDOW"/whl/*.whl > /dev/null 2>&1 && ! "$PY" -c 'import rdkit' 2> /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$WINDOW"/whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
if [ "$DEVICE" != cpu ] && command -v nvidia-cuda-mps-control > /dev/null \
    && ! pgrep -f nvidia-cuda-mps-control > /dev/null; then
  nvidia-cuda-mps-control -d && echo "CUDA MPS daemon started"  # kernels of several units side by side
fi
for p in "$WINDOW"/packed/*; do  # the packed sets, as the mirror's text (scripts/gpu/tu_pack.py)
  [ -d "$p" ] || continue
  [ -d "$DATA/TU/$(basename "$p")/raw" ] || "$PY" scripts/gpu/tu_pack.py unpack "$p" "$DATA/TU/$(basename "$p")" \
    || { echo "gpu_window: could not unpack $p" >&2; exit 1; }
done
# the transfer cells (when RDKit's wheel was carried), and the semi and unsupervised rows of the
# large TU sets whose data was carried (TU_SETS, PACK_SETS)
DEFAULT_ONLY=""
ls "$WINDOW"/whl/*.whl > /dev/null 2>&1 && DEFAULT_ONLY="transfer / "
[ -d "$DATA/TU/REDDIT-BINARY" ] && DEFAULT_ONLY="$DEFAULT_ONLY,semi / REDDIT-BINARY"
[ -d "$DATA/TU/COLLAB" ] && DEFAULT_ONLY="$DEFAULT_ONLY,semi / COLLAB,unsupervised / COLLAB"
DEFAULT_ONLY=${DEFAULT_ONLY#,}
STAMP="$ROOT/runs/reproduce/.window-start"
mkdir -p "$(dirname "$STAMP")"
touch "$STAMP"
sleep 1  # files published from here on are newer than the stamp
args=(reproduce --missing --compute "${COMPUTE:-gpu}" --budget "${BUDGET:-500}" --grace "${GRACE:-30}"
      --jobs "${JOBS:-8}" --data-root "$DATA" --device "$DEVICE" --root "$ROOT" --only "${ONLY-$DEFAULT_ONLY}")
[ -n "${UNIT_SECONDS:-}" ] && args+=(--unit-seconds "$UNIT_SECONDS")
"$PY" -m autogcl "${args[@]}" 2>&1 | tee "$OUT/window.log"
rc=${PIPESTATUS[0]}
pack
echo "gpu_window: exit code $rc; $(tar tzf "$OUT/window.tar.gz" | grep -c 'result.json$') finished units and" \
     "$(tar tzf "$OUT/window.tar.gz" | grep -c 'summary.json$') summaries in $OUT/window.tar.gz" | tee -a "$OUT/window.log"
exit "$rc"
