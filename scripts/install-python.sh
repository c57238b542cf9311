#!/usr/bin/env bash
# Makes the project's Python environment, .venv (ignored by git), from python/requirements.txt:
# a current PyTorch from PyPI and what the bridge and its tests use. Only what is missing is
# installed; a machine without an index (the GPU machine) keeps using its own python3.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${AUTOKERNEL_VENV:-.venv}
stamp="$venv/.requirements.sha256"
want=$(sha256sum python/requirements.txt | cut -d' ' -f1)
if [[ -x $venv/bin/python && -f $stamp && $(cat "$stamp") == "$want" ]]; then
  exit 0
fi
base=$(command -v python3)
if ! "$base" -c 'import venv, ensurepip' 2>/dev/null; then
  echo "autokernel: $base cannot make a virtual environment (python3-venv missing)" >&2
  exit 1
fi
echo "autokernel: making the Python environment $venv (PyTorch from PyPI, a few minutes the first time)" >&2
[[ -x $venv/bin/python ]] || "$base" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r python/requirements.txt
echo "$want" >"$stamp"
