#!/usr/bin/env bash
# Set up (or refresh) the project's virtual environment in .venv:
# PyTorch CPU first, so that nothing pulls a CUDA build, then autogcl with its test extras, Ray and Ray Tune.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -m pip install -q --disable-pip-version-check "torch==2.13.0" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[dev,ray,tune]" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import torch, torch_geometric, sklearn, rdkit, ray, ray.tune, optuna; print(f'autogcl environment ready: torch {torch.__version__}, PyG {torch_geometric.__version__}, RDKit {rdkit.__version__}, Ray {ray.__version__}, Optuna {optuna.__version__}')"
