#!/usr/bin/env bash
# The second command of the README (and what CI runs): installs what is missing, builds with
# warnings as errors, builds everything again with a second compiler (clang, warnings as errors;
# its host code only: a portability error fails here, not on the GPU machine's g++), checks
# formatting, and runs the CPU-labelled tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
BUILD_DIR=build-clang scripts/build.sh -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DAK_WITH_CUDA=OFF
scripts/check-format.sh
ctest --test-dir build -L cpu --output-on-failure -j "$(nproc)" --timeout 900
