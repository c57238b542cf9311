#!/usr/bin/env bash
# One call on a GPU machine: build the CLI and run bench/compare.py (our tuned kernels against
# PyTorch eager and torch.compile, one timing method). Output and JSON under $OUT.
#   OPS=rmsnorm,softmax TUNE_BUDGET=60s bash bench/gpu_compare.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-logs}
mkdir -p "$OUT"
PREFIX=$PWD/.carry/root/usr
export LD_LIBRARY_PATH=$PREFIX/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export AUTOKERNEL_CACHE=${AUTOKERNEL_CACHE:-/tmp/autokernel-cache}
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
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
