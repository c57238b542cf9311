#!/usr/bin/env bash
# One call on a GPU machine: build, run the gpu-labelled tests (and the cpu ones), measure the
# device, bench and tune the CUDA rmsnorm starter. Logs and JSON go under $OUT (default
# ./gpu-logs); a short table is printed last, the tests' result in it.
# The gpu tests (bench/gpu_env.sh: gpu_tests_first) are this script's point: they get up to 480 s
# (GPU_TESTS_TIMEOUT); GPU_TESTS=0 skips them, GPU_TESTS_REGEX / GPU_TESTS_EXCLUDE narrow them.
#
# At most 8 files come back from a device call: env.txt, build.log, ctest-gpu.log, ctest-cpu.log,
# device.json, bench-rmsnorm.json, results.tsv, and the caller's own tee of this script's output.
#
# The device machine has no internet: header-only and small libraries this build needs and it
# lacks travel in .carry/root (Debian packages unpacked by scripts/prepare-carry.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
SHAPE=${SHAPE:-8192x8192}
TUNE_BUDGET=${TUNE_BUDGET:-}      # e.g. 4m; default: the whole space
CPU_TESTS=${CPU_TESTS:-1}
AK=$PWD/build-gpu/autokernel

{
  date -u; nvidia-smi; nvcc --version; cmake --version | head -1; ninja --version; c++ --version | head -1
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
} >"$OUT/env.txt" 2>&1

step() { echo "== $*"; }

step build
build_autokernel ON all || exit 1

step gpu tests
gpu_tests_first 480
if [[ $CPU_TESTS == 1 ]]; then
  step cpu tests
  ctest --test-dir build-gpu -L cpu -j 8 --output-on-failure >"$OUT/ctest-cpu.log" 2>&1
  tail -3 "$OUT/ctest-cpu.log"
fi

step device
"$AK" device --remeasure
"$AK" device --json >"$OUT/device.json"

step bench rmsnorm "$SHAPE" fp16
"$AK" bench kernels/cuda/rmsnorm.cu --op rmsnorm --shape "$SHAPE" --dtype fp16 --results "$OUT/results.tsv"
"$AK" bench kernels/cuda/rmsnorm.cu --op rmsnorm --shape "$SHAPE" --dtype fp16 --json --results "$OUT/results.tsv" \
  >"$OUT/bench-rmsnorm.json"

step tune rmsnorm "$SHAPE" fp16
"$AK" tune kernels/cuda/rmsnorm.cu --op rmsnorm --shape "$SHAPE" --dtype fp16 --results "$OUT/results.tsv" \
  ${TUNE_BUDGET:+--budget "$TUNE_BUDGET"} \
  | tee /tmp/tune-rmsnorm.txt

step summary
python3 - "$OUT" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
d = json.loads((out / "device.json").read_text())
b = json.loads((out / "bench-rmsnorm.json").read_text())
c = d["ceilings"]
print(f"device        {d['name']} ({d['arch']}, {d['multiprocessors']} SMs, L2 {d['l2_bytes']>>20} MiB)")
print(f"copy          {c['copy_gbps']:.0f} GB/s")
print(f"matrix        {c['matrix_tflops']:.0f} TFLOP/s ({c['matrix_how']})")
t = b["timing"]
print(f"rmsnorm bench {b['status']} {t['median_us']:.1f} us  noise {100*t['noise']:.2f}%  n={t['samples']}  "
      f"{b['gbps']:.0f} GB/s  {100*b['roofline']:.1f}% of copy")
PY
tail -4 /tmp/tune-rmsnorm.txt
echo "$GPU_TESTS_RESULT"
