#!/usr/bin/env bash
# Configures and builds autokernel into ./build (warnings are errors). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DAK_WERROR=ON "$@" >/dev/null
fi
cmake --build build --parallel "$(nproc)"
