#!/usr/bin/env bash
# The first command of the README: installs what is missing, builds, and runs the main job on
# its embedded default — `autokernel tune` on the rmsnorm starter of whichever backend this
# machine has (CUDA with a GPU, the host backend otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ak=build/autokernel
if "$ak" device --backend cuda --json >/dev/null 2>&1; then
  echo "== main job: tune kernels/cuda/rmsnorm.cu (rmsnorm 8192x8192 fp16) on the GPU"
  exec "$ak" tune kernels/cuda/rmsnorm.cu --op rmsnorm --shape 8192x8192 --dtype fp16 "$@"
else
  echo "== main job: no GPU here; tune kernels/host/rmsnorm.cpp (rmsnorm 1024x4096 fp32) on the host backend"
  exec "$ak" tune kernels/host/rmsnorm.cpp --op rmsnorm --shape 1024x4096 --dtype fp32 --max-time 1 "$@"
fi
