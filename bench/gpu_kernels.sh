#!/usr/bin/env bash
# One call on a GPU machine: build (with the gpu tests), run the gpu-labelled tests (GPU_TESTS=0
# skips them; GPU_TESTS_REGEX, GPU_TESTS_EXCLUDE, GPU_TESTS_TIMEOUT: bench/gpu_env.sh), then bench
# every CUDA kernel in OPS through the full harness at its standard problem (and tune it with
# TUNE_BUDGET when set). Logs under $OUT; the tests' result is printed last.
#   OPS=matmul,flash_attention TUNE_BUDGET=90s bash bench/gpu_kernels.sh
# TUNE_SED narrows the tuned space (a sed script run on a copy of the kernel), e.g.
#   TUNE_SED='s|@tune WGMMA: 0, 1|@tune WGMMA: 1|'; SHAPE and DTYPE override the problem of
# both bench and tune.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
OPS=${OPS:-matmul,flash_attention,fused_mlp}
TUNE_BUDGET=${TUNE_BUDGET:-}
TUNE_SED=${TUNE_SED:-}
problem=(${SHAPE:+--shape "$SHAPE"} ${DTYPE:+--dtype "$DTYPE"})
BENCH=${BENCH:-1}
AK=$PWD/build-gpu/autokernel

echo "== build"
build_autokernel ON autokernel autokernel_gpu_tests || exit 1
gpu_tests_first
"$AK" device --json >"$OUT/device.json"

for op in ${OPS//,/ }; do
  if [[ $BENCH == 1 ]]; then
  echo "== bench $op"
  "$AK" bench "kernels/cuda/$op.cu" --op "$op" "${problem[@]}" --json --results "$OUT/results.tsv" >"$OUT/bench-$op.json" 2>/dev/null
  python3 - "$OUT/bench-$op.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
stages = " ".join(f"{s['stage']}:{'ok' if s['passed'] else 'FAIL'}({s['checks']})" for s in r["stages"])
print(f"{r['op']} {r['problem']} {r['dtype']}: {r['status']} {r.get('stage','')} {r.get('reason','')[:400]}")
print(f"  {stages}")
if r["status"] == "PASS":
    print(f"  {r['timing']['median_us']:.1f} us  {r['tflops']:.1f} TFLOP/s  {r['gbps']:.0f} GB/s  {100*r['roofline']:.1f}% of roofline")
PY
  fi
  if [[ -n $TUNE_BUDGET ]]; then
    echo "== tune $op ($TUNE_BUDGET)"
    kernel=kernels/cuda/$op.cu
    if [[ -n $TUNE_SED ]]; then
      mkdir -p /tmp/narrowed && sed "$TUNE_SED" "$kernel" >"/tmp/narrowed/$op.cu" && kernel=/tmp/narrowed/$op.cu
    fi
    "$AK" tune "$kernel" --op "$op" "${problem[@]}" --budget "$TUNE_BUDGET" --results "$OUT/results.tsv" 2>&1 |
      tee -a "$OUT/tune.txt" | grep -E "^\[|best|faster|no config" | cut -c1-260
  fi
done
echo "$GPU_TESTS_RESULT"
