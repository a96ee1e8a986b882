#!/usr/bin/env bash
# One prepared device call (2026-11-26): issue 41's GPU medians and the NCCL epoch, then issue 42's
# test suite on a second machine beside the budgeted transfer window. Ends by ~570 s.
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
REPO=$PWD
mkdir -p "$OUT/perf" "$OUT/win"
exec > >(tee -a "$OUT/device.log") 2>&1
export PYTHONUNBUFFERED=1 AUTOGCL_COMMIT=${COMMIT:?}
echo "== $(date -u) start"; nvidia-smi -L; python3 -V; nproc; uname -m
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/window/whl/*.whl
export PYTHONPATH=$REPO:/tmp/site
python3 -c "import torch, torch_geometric, rdkit, sklearn; print('torch', torch.__version__, 'pyg', torch_geometric.__version__, 'rdkit', rdkit.__version__, 'sklearn', sklearn.__version__, torch.cuda.get_device_name())"
NOTE="measured on a lent H100 with nothing else running on it; baseline: b434260 (git archive into .gpu/base)"
echo "== $(el) s: throughput"
OMP_NUM_THREADS=1 timeout -k 5 150 python3 benchmarks/engine.py --sections throughput --device cuda --baseline-path .gpu/base \
  --chunk-file .gpu/chunk10k.pt.gz --windows 3 --steps 200 --tag h100 --out "$OUT/perf" --note "$NOTE"
echo "== $(el) s: split"
OMP_NUM_THREADS=1 timeout -k 5 70 python3 benchmarks/engine.py --sections split --device cuda --chunk-file .gpu/chunk10k.pt.gz \
  --windows 3 --steps 200 --tag h100 --out "$OUT/perf" --note "$NOTE"
echo "== $(el) s: NCCL epoch, suite and window side by side"
( OMP_NUM_THREADS=2 NCCL_DEBUG=INFO timeout -k 5 170 python3 -m torch.distributed.run --standalone --nproc-per-node 1 \
    -m autogcl transfer pretrain --corpus .gpu/window/data/pretrain/moses_train.csv.gz --max-molecules 20000 \
    --chunk-size 10000 --epochs 1 --device cuda --no-progress --out /tmp/nccl-epoch --workers 2 > "$OUT/nccl.log" 2>&1
  echo "nccl exit code $?" >> "$OUT/nccl.log"
  python3 -c "
import json, torch
r = json.load(open('/tmp/nccl-epoch/result.json')); print('result keys', sorted(r)); print('world_size', r.get('world_size'))
s = torch.load('/tmp/nccl-epoch/encoder.pt', weights_only=False)['state_dict']
bn = {k: (float(v.float().std()), float(v.float().mean())) for k, v in s.items() if 'bn' in k and k.endswith(('weight', 'bias'))}
print('BN (std, mean):', bn)
print('untrained BN tensors (weight all 1 or bias all 0):', [k for k, v in s.items() if 'bn' in k and ((k.endswith('weight') and bool((v == 1).all())) or (k.endswith('bias') and bool((v == 0).all())))])
" >> "$OUT/nccl.log" 2>&1 ) &
NCCL=$!
( AUTOGCL_TEST_DATA=$REPO/.gpu/window/data timeout -k 10 $(( 560 - $(el) )) python3 -m pytest -q -rs -n 6 -p no:cacheprovider tests \
    > "$OUT/suite.log" 2>&1; echo "suite exit code $?" >> "$OUT/suite.log" ) &
SUITE=$!
BUDGET=$(( 545 - $(el) )) GRACE=15 JOBS=8 OUT=$OUT/win PYTHON=python3 bash scripts/gpu_window.sh run
wait $NCCL; wait $SUITE
echo "== $(el) s: done"; tail -3 "$OUT/suite.log"; tail -8 "$OUT/nccl.log"; ls -la "$OUT" "$OUT/perf" "$OUT/win"
