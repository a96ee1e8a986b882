#!/usr/bin/env bash
# One prepared call for a lent GPU: the checks the test suite cannot make there, then the budgeted
# window of paper cells (scripts/gpu/gpu_window.sh) with the time left (docs/reproducing.md).
#
#   bash scripts/gpu/gpu_checks.sh prepare      # here: .gpu/ (b434260's code, a featurised chunk, a small
#                                           # corpus; gpu_window.sh prepare: data and an RDKit wheel;
#                                           # .gpu/suite: the suite call's whole data, without MNIST); it
#                                           # prints what each call carries and fails above 64 MiB
#   # the device call, carrying [".gpu/base", ".gpu/chunk10k.pt.gz", ".gpu/window"], 600-second limit:
#   AUTOGCL_COMMIT=<sha> bash scripts/gpu/gpu_checks.sh run
#   bash scripts/gpu/gpu_window.sh unpack DIR   # here, DIR the files_at/win of the call; then copy
#                                           # DIR/perf/*.json to docs/results/perf and run scripts/docs/docs.py
#   # a second call (on the warm machine or a fresh one), if the device time left allows it,
#   # carrying [".gpu/suite"]:
#   AUTOGCL_COMMIT=<sha> SUITE_S=240 bash scripts/gpu/gpu_checks.sh suite   # then copy
#                                           # DIR/suite/*.json to docs/results/suite and run scripts/docs/docs.py
#   # Ray on the GPU (the device has no Ray; prepare packs one that fits a call: scripts/gpu/ray_gpu.py),
#   # a call carrying [".gpu/ray"], about 2 minutes:
#   AUTOGCL_COMMIT=<sha> TAG=h200 bash scripts/gpu/gpu_checks.sh ray   # then copy DIR/ray_gpu_*.json to
#                                           # docs/results/perf: four MUTAG units of a quarter GPU against serial
#
# run, each step time-boxed, everything under $OUT (at most 8 files come back):
#   1. `torchrun --nproc-per-node 1 ... --device cuda`: one pre-training epoch on NCCL; nccl.log
#      must say "distributed run: 1 processes (nccl)" and name no untrained BatchNorm;
#   2. the CUDA tests (tests/test_cuda.py, the molecule GIN under bf16 autocast): cuda_tests.log;
#   3. the pre-training step's waits for the GPU (perf/pretrain_waits_TAG.json: host_waits and the
#      synchronizations CUDA's sync debug mode reports, 12 steps at full size), atoms removed and
#      removed in place (static views);
#   4. full-size throughput against b434260, then atoms removed in place (static views), those
#      batches padded to 256-atom buckets, the padded step as CUDA graphs (two probes: a graph per
#      shape and view pair, engine.py's GraphedSteps; torch.compile's reduce-overhead mode), bf16
#      and compile (perf/*.json, 3 windows of 200 steps each, medians), alone on the GPU;
#   5. gpu_window.sh run with BUDGET = what is left of CALL_S (win/window.tar.gz, win/window.log).
# Environment: OUT and AUTOGCL_COMMIT (required for run), CALL_S (the call's limit, default 570), PYTHON (python3),
# TU_SETS (the window's unpacked TU sets; default none), PACK_SETS (its packed ones; default COLLAB), SUITE_SETS (the suite's; default MUTAG
# PROTEINS NCI1), SUITE_S (the suite stage's limit, default 240), SUITE_TESTS (its test paths, split on spaces; default the whole suite),
# WORKERS (its xdist workers, default 12), CORPUS_LINES (molecules of the small corpus, default 20000), CHUNK (molecules of the featurised
# chunk, default 10000), BASE (the baseline commit, default b434260), GPU_DIR (default .gpu), TAG
# (the benchmark files' tag, default h100: name the card).
set -uo pipefail
HERE="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$HERE"
STAGE=${1:-run}
PY=${PYTHON:-python3}
G=${GPU_DIR:-.gpu}

if [ "$STAGE" = prepare ]; then
  SRC=${SOURCE_DATA:-../shared/data}
  mkdir -p "$G/base" "$G/window/data/pretrain"
  git archive "${BASE:-b434260}" autogcl | tar -x -C "$G/base" || { echo "gpu_checks: no git archive of ${BASE:-b434260}" >&2; exit 1; }
  "$PY" - "$SRC/pretrain/moses_train.csv.gz" "$G/window/data/pretrain/moses_train.csv.gz" "${CORPUS_LINES:-20000}" <<'PYEOF' || exit 1
import gzip, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with gzip.open(src, "rt") as f, gzip.open(dst, "wt") as g:
    for i, line in enumerate(f):
        if i > n:  # the header, then n molecules
            break
        g.write(line)
PYEOF
  PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}" "$PY" - "$SRC" "$G/chunk10k.pt.gz" "${CHUNK:-10000}" <<'PYEOF' || exit 1
import gzip, shutil, sys
from autogcl.data.corpus import MoleculeCorpus
from autogcl.protocols.pretrain import resolve_corpus
root, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
chunk = MoleculeCorpus(resolve_corpus("", root), max_molecules=n, chunk_size=n, progress=False).prepare()[0]
with open(chunk.path, "rb") as f, gzip.open(dst, "wb") as g:
    shutil.copyfileobj(f, g)
PYEOF
  WINDOW="$G/window" PYTHON="$PY" bash scripts/gpu/gpu_window.sh prepare || exit 1
  # Ray for the device's Python, slimmed to fit a call, with its dependencies and MUTAG (the ray stage)
  if [ "${WHEELS:-1}" = 1 ] && [ ! -f "$G/ray/ray.tar.xz" ]; then
    PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}" "$PY" scripts/gpu/ray_gpu.py pack --out "$G/ray" --data-root "$SRC" \
      || echo "gpu_checks: no Ray pack (the ray stage needs one)" >&2
  fi
  # the suite call's folder, whole, so that it runs on the warm machine or a fresh one: RDKit's
  # wheel, the window's MoleculeNet sets but ToxCast, the small corpus and the small TU sets.
  # MNIST stays out (the call would exceed 64 MiB): its tests skip, saying so
  rm -rf "$G/suite"; mkdir -p "$G/suite/data/TU" "$G/suite/data/moleculenet"
  cp -r "$G/window/whl" "$G/suite/" 2> /dev/null
  cp -r "$G/window/data/pretrain" "$G/suite/data/" || exit 1
  for f in "$G"/window/data/moleculenet/*; do
    case "$(basename "$f")" in toxcast*) ;; *) cp -r "$f" "$G/suite/data/moleculenet/" || exit 1 ;; esac
  done
  for d in ${SUITE_SETS-MUTAG PROTEINS NCI1}; do cp -r --no-preserve=mode "$SRC/TU/$d" "$G/suite/data/TU/" || exit 1; done
  # what travels: the working tree (tracked and untracked files that git does not ignore) and the carry
  mib() { awk '{s += $1} END {printf "%.1f", s / 1048576}'; }
  tree=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 stat -c %s 2> /dev/null | mib)
  one=$(find "$G/base" "$G/chunk10k.pt.gz" "$G/window" -type f -printf "%s\n" | mib)
  two=$(find "$G/suite" -type f -printf "%s\n" | mib)
  three=$(find "$G/ray" -type f -printf "%s\n" 2> /dev/null | mib)
  echo "gpu_checks: the run call carries $one MiB, the suite call $two MiB and the ray call $three MiB, each beside a $tree MiB working tree (64 MiB a call)"
  awk -v t="$tree" -v a="$one" -v b="$two" -v c="$three" 'BEGIN {exit !(t + a > 64 || t + b > 64 || t + c > 64)}' \
    && { echo "gpu_checks: a call would carry more than 64 MiB" >&2; exit 1; }
  exit 0
fi
if [ "$STAGE" = suite ]; then
  # a second call: the whole test suite on another machine's CPU (and GPU),
  # recorded by scripts/suite/suite_record.py with every failure and skip named (docs/reliability.md);
  # stopped with SIGINT at SUITE_S seconds, when the record says "cut" and counts what ran
  : "${OUT:?set OUT to the folder that receives the record}"
  : "${AUTOGCL_COMMIT:?set AUTOGCL_COMMIT to the commit of the working tree the call carries}"
  mkdir -p "$OUT"
  [ -d "$G/suite/data/TU/MUTAG" ] || { echo "gpu_checks: no $G/suite/data/TU/MUTAG: run prepare here and carry $G/suite" >&2; exit 1; }
  # cuBLAS's workspace for the deterministic CUDA tests, set before any test starts cuBLAS
  export AUTOGCL_COMMIT PYTHONUNBUFFERED=1 AUTOGCL_TEST_DATA="$(cd "$G/suite/data" && pwd)" CUBLAS_WORKSPACE_CONFIG=:4096:8
  if ls "$G"/suite/whl/*.whl > /dev/null 2>&1 && ! "$PY" -c 'import rdkit' 2> /dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$G"/suite/whl/*.whl
  fi
  export PYTHONPATH="$HERE:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
  N=()
  "$PY" -c 'import xdist' 2> /dev/null && N=(-n "${WORKERS:-12}")
  OMP_NUM_THREADS=1 "$PY" scripts/suite/suite_record.py --tag "${TAG:-h100}-suite" --out "$OUT/suite" \
    --timeout-s "${SUITE_S:-240}" --note "a lent GPU machine; data: the carried .gpu/suite/data (no MNIST, no ToxCast; tests of data they lack skip)" \
    -- ${N[@]+"${N[@]}"} -p no:cacheprovider ${SUITE_TESTS:-} > "$OUT/suite.log" 2>&1
  rc=$?
  tail -3 "$OUT/suite.log"
  exit $rc  # pytest's exit status (the record is written either way)
fi
if [ "$STAGE" = ray ]; then
  # a call carrying .gpu/ray: Ray unpacked under /tmp (the dependencies the device lacks added), then
  # four MUTAG units serially and as Ray units of a quarter GPU each; $OUT/ray_gpu_$TAG.json says
  # whether every unit's numbers are equal (exit 1 when not)
  : "${OUT:?set OUT to the folder that receives the record}"
  : "${AUTOGCL_COMMIT:?set AUTOGCL_COMMIT to the commit of the working tree the call carries}"
  [ -f "$G/ray/ray.tar.xz" ] || { echo "gpu_checks: no $G/ray/ray.tar.xz: run prepare here and carry $G/ray" >&2; exit 1; }
  mkdir -p "$OUT"
  export AUTOGCL_COMMIT PYTHONUNBUFFERED=1 PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
  timeout -k 10 "${RAY_S:-400}" "$PY" scripts/gpu/ray_gpu.py check --source "$G/ray" --out "$OUT" --device cuda \
    --tag "${TAG:-h100}" > "$OUT/ray.log" 2>&1
  rc=$?
  tail -3 "$OUT/ray.log"
  exit $rc
fi
[ "$STAGE" = run ] || { echo "usage: gpu_checks.sh prepare|run|suite|ray" >&2; exit 2; }
: "${OUT:?set OUT to the folder that receives the logs and files}"
# the commit every published unit names: the device's copy may hold a stale git folder
: "${AUTOGCL_COMMIT:?set AUTOGCL_COMMIT to the commit of the working tree the call carries}"
export AUTOGCL_COMMIT
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p "$OUT/perf" "$OUT/win"
exec > >(tee -a "$OUT/checks.log") 2>&1
TEE=$!
export PYTHONUNBUFFERED=1
echo "== $(date -u) gpu_checks at ${AUTOGCL_COMMIT:-an unnamed commit}"; nvidia-smi -L 2> /dev/null; "$PY" -V; nproc
if ls "$G"/window/whl/*.whl > /dev/null 2>&1 && ! "$PY" -c 'import rdkit' 2> /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$G"/window/whl/*.whl
fi
export PYTHONPATH="$HERE:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
C=$G/window/data/pretrain/moses_train.csv.gz

echo "== $(el) s: one NCCL pre-training epoch (torchrun, one process)"
rm -rf /tmp/nccl-epoch  # never read an earlier call's run on a warm machine
# -k 40: torchrun gives its workers about 30 s to stop before it kills them
OMP_NUM_THREADS=4 NCCL_DEBUG=WARN timeout -k 40 120 "$PY" -m torch.distributed.run --standalone --nproc-per-node 1 \
  -m autogcl transfer pretrain --corpus "$C" --max-molecules 20000 --chunk-size 10000 --epochs 1 --device cuda \
  --no-progress --out /tmp/nccl-epoch --workers 8 > "$OUT/nccl.log" 2>&1
echo "exit code $?" >> "$OUT/nccl.log"
"$PY" - >> "$OUT/nccl.log" 2>&1 <<'PYEOF'
import json, torch
r = json.load(open("/tmp/nccl-epoch/result.json"))
s = torch.load("/tmp/nccl-epoch/encoder.pt", weights_only=True)["state_dict"]
bn = [k for k in s if ".bns." in k and k.endswith(("weight", "bias"))]
still = [k for k in bn if bool((s[k] == (1 if k.endswith("weight") else 0)).all())]
print(f"world_size {r['world_size']}, {r['molecules_per_s']:.0f} molecules/s; untrained BatchNorm tensors: {still} of {len(bn)}")
PYEOF
grep -m1 "distributed run" "$OUT/nccl.log"; tail -2 "$OUT/nccl.log"

echo "== $(el) s: the CUDA tests"
CUBLAS_WORKSPACE_CONFIG=:4096:8 timeout -k 5 90 "$PY" -m pytest -q -rs -p no:cacheprovider tests/test_cuda.py tests/models/test_mol_gin.py \
  > "$OUT/cuda_tests.log" 2>&1; tail -2 "$OUT/cuda_tests.log"

echo "== $(el) s: the step's waits for the GPU (host_waits and CUDA's sync debug mode), width 300, atoms removed and removed in place"
OMP_NUM_THREADS=1 timeout -k 5 100 "$PY" benchmarks/engine.py --sections waits --widths 300 --device cuda \
  --chunk-file "$G/chunk10k.pt.gz" --tag "${TAG:-h100}" --out "$OUT/perf" 2>&1 | tail -3

echo "== $(el) s: full-size throughput against b434260, then static views, padded, as CUDA graphs, bf16 and compile rows"
OMP_NUM_THREADS=1 timeout -k 5 200 "$PY" benchmarks/engine.py --sections throughput --widths 300 --device cuda \
  --baseline-path "$G/base" --chunk-file "$G/chunk10k.pt.gz" --windows 3 --steps 200 --tag "${TAG:-h100}" --out "$OUT/perf" \
  --note "measured on a lent GPU with nothing else running on it; baseline: b434260 (git archive into .gpu/base); a row missing here was cut by the 200 s limit of this step"

# 90 s kept for the window's grace, its summaries and its archive
LEFT=$(( ${CALL_S:-570} - $(el) - 90 ))
echo "== $(el) s: the budgeted window, $LEFT s"
if [ "$LEFT" -gt 60 ]; then
  WINDOW="$G/window" BUDGET=$LEFT GRACE=15 OUT="$OUT/win" PYTHON="$PY" bash scripts/gpu/gpu_window.sh run > /dev/null 2>&1
  tail -1 "$OUT/win/window.log"
fi
echo "== $(el) s: done"
exec >&- 2>&-
wait "$TEE"  # tee has written all of checks.log before the call collects $OUT
