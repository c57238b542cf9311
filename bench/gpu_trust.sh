#!/usr/bin/env bash
# One call on a GPU machine for the judge and its sandbox: build with the gpu tests, run them
# (the CUDA cheat battery among them; gpu_tests_first in bench/gpu_env.sh: GPU_TESTS=0 skips them,
# GPU_TESTS_EXCLUDE a regex of tests to leave out, GPU_TESTS_TIMEOUT default 480 s), measure
# the device, then bench every CUDA starter of OPS at its standard problem through the full
# harness (the judge's clock, fresh inputs, the sandboxed launcher) beside two timings of the same
# module in one process by events (bench/timing_crosscheck.py), and optionally the loop's
# throughput on the memory-bound suite. Logs and JSON under $OUT; a short table last, the tests'
# result in it.
#   OPS=rmsnorm,softmax LOOP_BUDGET=3m SLOT_SWEEP="2 7 8" ARENA_SWEEP="ipc vmm" bash bench/gpu_trust.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
OPS=${OPS:-rmsnorm,softmax,layernorm,reduce,cross_entropy,rotary_embedding,matmul,flash_attention,fused_mlp}
LOOP_BUDGET=${LOOP_BUDGET:-}
AK=$PWD/build-gpu/autokernel

{
  date -u; nvidia-smi; nvcc --version; c++ --version | head -1
} >"$OUT/env.txt" 2>&1

echo "== build"
build_autokernel ON autokernel autokernel_gpu_tests || exit 1
gpu_tests_first 480  # the cheat battery is half of what this script checks
"$AK" device --json >"$OUT/device.json"

echo "== bench and crosscheck"
python3 bench/timing_crosscheck.py --ak "$AK" --ops "$OPS" --json "$OUT/crosscheck.json"

# SLOT_SWEEP="2 7 8": the crosscheck again at each number of timed slots, for SWEEP_OPS (where the
# judge's clock and the events disagreed on 2026-11-24: docs/benchmarks.md).
if [[ -n ${SLOT_SWEEP:-} ]]; then
  echo "== slot sweep ($SLOT_SWEEP)"
  for slots in $SLOT_SWEEP; do
    python3 bench/timing_crosscheck.py --ak "$AK" --ops "${SWEEP_OPS:-rmsnorm,layernorm,cross_entropy}" --slots "$slots"
  done 2>&1 | tee "$OUT/slot-sweep.txt"
fi

# ARENA_SWEEP="ipc vmm launcher": the crosscheck again with the judge's arena made each way
# (AUTOKERNEL_ARENA: src/runtime/cuda/cuda_arena.cpp), for SWEEP_OPS.
if [[ -n ${ARENA_SWEEP:-} ]]; then
  echo "== arena sweep ($ARENA_SWEEP)"
  for arena in $ARENA_SWEEP; do
    echo "-- AUTOKERNEL_ARENA=$arena"
    AUTOKERNEL_ARENA=$arena python3 bench/timing_crosscheck.py --ak "$AK" \
      --ops "${SWEEP_OPS:-rmsnorm,layernorm,cross_entropy}" --json "$OUT/arena-$arena.json"
  done 2>&1 | tee "$OUT/arena-sweep.txt"
fi

# ARENA_PROBE=1: the same modules on the judge's arena layout, in one process and imported through
# CUDA IPC by a child (bench/arena_probe.py), for SWEEP_OPS.
if [[ ${ARENA_PROBE:-0} == 1 ]]; then
  echo "== arena probe"
  python3 bench/arena_probe.py --ak "$AK" --ops "${SWEEP_OPS:-rmsnorm,layernorm,cross_entropy}" \
    --json "$OUT/arena-probe.json" 2>&1 | tee "$OUT/arena-probe.txt"
fi

if [[ -n $LOOP_BUDGET ]]; then
  echo "== loop throughput ($LOOP_BUDGET)"
  AK=$AK BUDGET=$LOOP_BUDGET WORKSPACE=/tmp/loop-ws/workspace bash bench/loop_throughput.sh >"$OUT/loop.txt" 2>&1
  cp /tmp/loop-ws/workspace/results.tsv "$OUT/loop-results.tsv" 2>/dev/null
  tail -12 "$OUT/loop.txt"
fi

python3 - "$OUT" <<'PY'
import json, pathlib, sys
d = json.loads((pathlib.Path(sys.argv[1]) / "device.json").read_text())
c = d["ceilings"]
print(f"{d['name']}  copy {c['copy_gbps']:.0f} GB/s  matrix {c['matrix_tflops']:.0f} TFLOP/s")
PY
echo "$GPU_TESTS_RESULT"
