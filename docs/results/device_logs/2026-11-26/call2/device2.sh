#!/usr/bin/env bash
# Second device call (2026-11-26): torchrun --nproc-per-node 1 on NCCL after the launched() fix,
# the CUDA tests, and full-size throughput against b434260 with the bf16 row (after the neighbour-sum fix).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
exec > >(tee -a "$OUT/device2.log") 2>&1
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/window/whl/*.whl
export PYTHONPATH=$PWD:/tmp/site
C=.gpu/window/data/pretrain/moses_train.csv.gz
echo "== $(el) s: NCCL, one process"
OMP_NUM_THREADS=2 NCCL_DEBUG=INFO timeout -k 5 60 python3 -m torch.distributed.run --standalone --nproc-per-node 1 \
  -m autogcl transfer pretrain --corpus $C --max-molecules 20000 --chunk-size 10000 --epochs 1 --device cuda \
  --no-progress --out /tmp/nccl --workers 8 > "$OUT/nccl2.log" 2>&1; echo "nccl exit code $?"
grep -m1 "distributed run" "$OUT/nccl2.log"; echo "NCCL INFO lines: $(grep -c 'NCCL INFO' "$OUT/nccl2.log")"
grep -m2 "NCCL version\|comm 0x" "$OUT/nccl2.log" | cut -c1-160
python3 -c "
import json, torch
r = json.load(open('/tmp/nccl/result.json')); print('world_size', r['world_size'], 'runtime', r['runtime'].get('world_size'), 'molecules_per_s', r['molecules_per_s'])
s = torch.load('/tmp/nccl/encoder.pt', weights_only=False)['state_dict']
print('untrained BN tensors:', [k for k, v in s.items() if '.bns.' in k and ((k.endswith('weight') and bool((v == 1).all())) or (k.endswith('bias') and bool((v == 0).all())))], 'of', sum('.bns.' in k and k.endswith(('weight', 'bias')) for k in s))
"
echo "== $(el) s: CUDA tests"
timeout -k 5 60 python3 -m pytest -q -rs -p no:cacheprovider tests/test_cuda.py tests/models/test_mol_gin.py 2>&1 | tail -4
echo "== $(el) s: throughput at full size against b434260 (3 windows of 200 steps), then bf16"
mkdir -p "$OUT/perf"
OMP_NUM_THREADS=1 timeout -k 5 70 python3 benchmarks/engine.py --sections throughput --widths 300 --device cuda \
  --baseline-path .gpu/base --chunk-file .gpu/chunk10k.pt.gz --windows 3 --steps 200 --tag h100-b434260 --out "$OUT/perf" \
  --note "measured on a lent H100 with nothing else running on it; baseline: b434260 (git archive into .gpu/base); a row missing here was cut by the 70 s limit of this step"
echo "== $(el) s: done"
