#!/usr/bin/env bash
# Runs one unittest file of the bridge in a Python that has PyTorch: $AUTOKERNEL_PYTHON, else the
# first of the project's .venv, python3 and /usr/bin/python3 that imports torch (as the CLI chooses; src/core/python.cpp).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
candidates=("$root/.venv/bin/python" python3 /usr/bin/python3)
[[ -n ${AUTOKERNEL_PYTHON:-} ]] && candidates=("$AUTOKERNEL_PYTHON")
for python in "${candidates[@]}"; do
  if "$python" -c 'import torch' 2>/dev/null; then
    export PYTHONPATH="$root/python:$root/tests/python:$root/tests/models${PYTHONPATH:+:$PYTHONPATH}"
    cd "$(dirname "$1")"
    exec "$python" -m unittest -v "$(basename "$1")"
  fi
done
echo "no Python with PyTorch (tried ${candidates[*]}); run scripts/install-deps.sh" >&2
exit 1
