#!/usr/bin/env bash
# Configures and builds autokernel into ./build, or $BUILD_DIR (warnings are errors). Extra
# arguments go to cmake the first time (e.g. BUILD_DIR=build-clang scripts/build.sh
# -DCMAKE_CXX_COMPILER=clang++).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
dir=${BUILD_DIR:-build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f $dir/CMakeCache.txt ]]; then
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DAK_WERROR=ON "$@" >/dev/null
fi
cmake --build "$dir" --parallel "$(nproc)"
