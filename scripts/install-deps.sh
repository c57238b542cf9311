#!/usr/bin/env bash
# Installs what autokernel needs to build and test, only what is missing.
# Debian packages through apt-get; idempotent, so every entry point may call it.
set -euo pipefail

packages=(
  build-essential cmake ninja-build git pkg-config
  libcli11-dev nlohmann-json3-dev libmuparser-dev libxxhash-dev
  libgtest-dev libopenblas-dev clang-format
  clang libomp-dev    # the second compiler CI builds everything with (scripts/test.sh)
  libseccomp-dev      # the sandbox of the process that runs a kernel's code
  python3-matplotlib  # the progress plot of `autokernel report` (system python3)
  python3-venv        # the project's Python environment (.venv: PyTorch from PyPI for the bridge)
)

missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if ((${#missing[@]})); then
  echo "autokernel: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Python environment of the bridge and its tests (.venv): a current PyTorch from PyPI.
"$(dirname "$0")/install-python.sh"

if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "autokernel: nvcc is at /usr/local/cuda/bin; add it to PATH for the CUDA backend" >&2
fi
