#!/usr/bin/env bash
# One call on a GPU machine: build the CLI and run bench/compare.py (our tuned kernels against
# PyTorch eager and torch.compile, one timing method). Output and JSON under $OUT.
#   OPS=rmsnorm,softmax TUNE_BUDGET=60s bash bench/gpu_compare.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
OPS=${OPS:-rmsnorm,softmax,layernorm,reduce,cross_entropy,rotary_embedding}

echo "== build"
if [[ ! -x build-gpu/autokernel ]]; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DAK_WERROR=ON -DAK_BUILD_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$PREFIX" >"$OUT/build.log" 2>&1 &&
    ninja -C build-gpu autokernel >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
fi
echo "== compare $OPS"
python3 bench/compare.py --ak build-gpu/autokernel --ops "$OPS" ${TUNE_BUDGET:+--tune-budget "$TUNE_BUDGET"} \
  --json-out "$OUT/compare.json" 2>&1 | tee "$OUT/compare.txt"
