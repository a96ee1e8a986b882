#!/usr/bin/env bash
# Set up (or refresh) the project's virtual environment in .venv:
# PyTorch CPU first, so that nothing pulls a CUDA build, then autogcl with its test extras, Ray and Ray Tune.
# Each step prints a line as it starts (the first run downloads ~1 GB and takes minutes).
#
#   bash scripts/setup.sh          the environment the README's commands use
#   bash scripts/setup.sh docs     add one more extra (here the docs site's) to an environment set up before
#
# Both steps install by uv when it installs, much faster than pip, given pip's own index settings
# (scripts/uv_options.py: this machine's local file of the CPU build, its version cap) and pip's rule
# of the highest version on any index (--index-strategy unsafe-best-match), so that both pick the
# same releases; where uv cannot be had or fails, pip installs. uv does not compile bytecode up
# front: Python compiles what is imported, once, on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
# setuptools tells every editable install "Editable installation. Please be careful with folders ...",
# which pip prints as a BuildBackendWarning block; it says nothing about this project
export PYTHONWARNINGS="${PYTHONWARNINGS:+$PYTHONWARNINGS,}ignore:Editable installation:UserWarning"
pip_install() { .venv/bin/python -m pip install -q --disable-pip-version-check "$@" 2>&1 | grep -v "^WARNING: Location" || true; }

fast_install() {
  # pip install "$@", by uv, or by pip where uv fails
  local listing opts=()
  if [ -x .venv/bin/uv ] && listing=$(.venv/bin/python scripts/uv_options.py); then
    [ -z "$listing" ] || mapfile -t opts <<<"$listing"
    if .venv/bin/uv pip install -q --native-tls --python .venv/bin/python --index-strategy unsafe-best-match \
         "${opts[@]}" "$@"; then
      return 0
    fi
  fi
  echo "setup: uv did not install $*; pip instead" >&2
  pip_install "$@"
}
project_install() { fast_install -e ".[$1]"; }  # autogcl with the extras "$1" (comma-separated)

if [ "${1:-}" != "" ]; then
  [ -x .venv/bin/python ] || { echo "setup: no .venv here; run 'bash scripts/setup.sh' first" >&2; exit 1; }
  echo "setup: the extra '$1' (${SECONDS}s so far)"
  project_install "$1"
  echo "setup: done in ${SECONDS}s"
  exit 0
fi

STEPS=5
step() { echo "setup: [$1/$STEPS] $2 (${SECONDS}s so far)"; }
step 1 "virtual environment .venv"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
step 2 "pip and uv"
pip_install --upgrade pip uv
step 3 "PyTorch 2.13.0, CPU build (the largest download)"
fast_install "torch==2.13.0"
step 4 "autogcl with its dev, ray and tune extras (PyG, RDKit, scikit-learn, Ray, Optuna, ...)"
project_install dev,ray,tune
step 5 "checking the imports"
.venv/bin/python -c "import torch, torch_geometric, sklearn, rdkit, ray, ray.tune, optuna; print(f'autogcl environment ready: torch {torch.__version__}, PyG {torch_geometric.__version__}, RDKit {rdkit.__version__}, Ray {ray.__version__}, Optuna {optuna.__version__}')"
echo "setup: done in ${SECONDS}s"
