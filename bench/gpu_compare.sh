#!/usr/bin/env bash
# One call on a GPU machine: build the CLI and run bench/compare.py (our tuned kernels against
# PyTorch eager and torch.compile, one timing method). Output and JSON under $OUT. The gpu tests
# run first (gpu_tests_first in bench/gpu_env.sh, whose build of them brings the CLI up to date:
# GPU_TESTS=0 skips them, GPU_TESTS_REGEX / GPU_TESTS_EXCLUDE narrow them, GPU_TESTS_TIMEOUT);
# their result is printed last.
#   OPS=rmsnorm,softmax TUNE_BUDGET=60s bash bench/gpu_compare.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
OPS=${OPS:-rmsnorm,softmax,layernorm,reduce,cross_entropy,rotary_embedding}

echo "== build"
if [[ ! -x build-gpu/autokernel ]]; then
  build_autokernel || exit 1
fi
gpu_tests_first
echo "== compare $OPS"
python3 bench/compare.py --ak build-gpu/autokernel --ops "$OPS" ${TUNE_BUDGET:+--tune-budget "$TUNE_BUDGET"} \
  --json-out "$OUT/compare.json" 2>&1 | tee "$OUT/compare.txt"
echo "$GPU_TESTS_RESULT"
