#!/usr/bin/env bash
# The full unsupervised protocol of the closing figures: 30 epochs, SVM at 10/20/30,
# 5 seeds on MUTAG and PROTEINS, 2 seeds on NCI1, for autogcl and graphcl (random4).
# Resumable: rerun the same command after an interruption.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${AUTOGCL_DATA:-../shared/data}
OUT=${OUT:-runs/unsupervised}
for spec in MUTAG:5 PROTEINS:5 NCI1:2; do
  ds=${spec%%:*}; n=${spec##*:}
  for method in autogcl graphcl; do
    .venv/bin/autogcl unsupervised --dataset "$ds" --method "$method" --seeds "$n" \
      --data-root "$DATA" --out "$OUT" --resume --no-progress "$@"
  done
done
