#!/usr/bin/env bash
# Set up (or refresh) the project's virtual environment in .venv:
# PyTorch CPU first, so that nothing pulls a CUDA build, then autogcl with its test extras, Ray and Ray Tune.
# Each step prints a line as it starts (the first run downloads ~1 GB and takes minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
STEPS=5
step() { echo "setup: [$1/$STEPS] $2 (${SECONDS}s so far)"; }
# setuptools tells every editable install "Editable installation. Please be careful with folders ...",
# which pip prints as a BuildBackendWarning block; it says nothing about this project
export PYTHONWARNINGS="${PYTHONWARNINGS:+$PYTHONWARNINGS,}ignore:Editable installation:UserWarning"
pip_install() { .venv/bin/python -m pip install -q --disable-pip-version-check "$@" 2>&1 | grep -v "^WARNING: Location" || true; }
step 1 "virtual environment .venv"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
step 2 "pip"
pip_install --upgrade pip
step 3 "PyTorch 2.13.0, CPU build (the largest download)"
pip_install "torch==2.13.0"
step 4 "autogcl with its dev, ray and tune extras (PyG, RDKit, scikit-learn, Ray, Optuna, ...)"
pip_install -e ".[dev,ray,tune]"
step 5 "checking the imports"
.venv/bin/python -c "import torch, torch_geometric, sklearn, rdkit, ray, ray.tune, optuna; print(f'autogcl environment ready: torch {torch.__version__}, PyG {torch_geometric.__version__}, RDKit {rdkit.__version__}, Ray {ray.__version__}, Optuna {optuna.__version__}')"
echo "setup: done in ${SECONDS}s"
