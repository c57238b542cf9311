#!/usr/bin/env bash
# One call on a GPU machine for the judge and its sandbox: build with the gpu tests, run them
# (the CUDA cheat battery among them), measure the device, then bench every CUDA starter of
# OPS at its standard problem through the full harness (the judge's clock, fresh inputs, the
# sandboxed launcher), and optionally the loop's throughput on the memory-bound suite.
# Logs and JSON under $OUT; a short table last.
#   OPS=rmsnorm,softmax LOOP_BUDGET=3m bash bench/gpu_trust.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
OPS=${OPS:-rmsnorm,softmax,layernorm,reduce,cross_entropy,rotary_embedding,matmul,flash_attention,fused_mlp}
GPU_TESTS=${GPU_TESTS:-1}
LOOP_BUDGET=${LOOP_BUDGET:-}
AK=$PWD/build-gpu/autokernel

{
  date -u; nvidia-smi; nvcc --version; c++ --version | head -1
  git log -1 --format='commit %H' 2>/dev/null || true
} >"$OUT/env.txt" 2>&1

echo "== build"
build_autokernel ON autokernel autokernel_gpu_tests || exit 1
if [[ $GPU_TESTS == 1 ]]; then
  echo "== gpu tests"
  ctest --test-dir build-gpu -L gpu --output-on-failure >"$OUT/ctest-gpu.log" 2>&1
  grep -E "tests passed|\*\*\*Failed|Failed  " "$OUT/ctest-gpu.log" | tail -12
fi
"$AK" device --json >"$OUT/device.json"

for op in ${OPS//,/ }; do
  echo "== bench $op"
  "$AK" bench "kernels/cuda/$op.cu" --op "$op" --json --results "$OUT/results.tsv" >"$OUT/bench-$op.json" \
    2>"$OUT/bench-$op.err"
done

if [[ -n $LOOP_BUDGET ]]; then
  echo "== loop throughput ($LOOP_BUDGET)"
  AK=$AK BUDGET=$LOOP_BUDGET WORKSPACE=/tmp/loop-ws/workspace bash bench/loop_throughput.sh >"$OUT/loop.txt" 2>&1
  cp /tmp/loop-ws/workspace/results.tsv "$OUT/loop-results.tsv" 2>/dev/null
  tail -12 "$OUT/loop.txt"
fi

echo "== summary"
python3 - "$OUT" ${OPS//,/ } <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
d = json.loads((out / "device.json").read_text())
c = d["ceilings"]
print(f"{d['name']}  copy {c['copy_gbps']:.0f} GB/s  matrix {c['matrix_tflops']:.0f} TFLOP/s")
print(f"{'op':<17}{'problem':<26}{'dtype':<6}{'status':<8}{'median us':>10}{'roof %':>8}{'n':>5}{'noise %':>8}  phases")
for op in sys.argv[2:]:
    try:
        r = json.loads((out / f"bench-{op}.json").read_text())
    except Exception as e:
        print(f"{op:<17}no result ({e})")
        continue
    t = r.get("timing", {})
    line = f"{op:<17}{r.get('problem',''):<26}{r.get('dtype',''):<6}{r['status']:<8}"
    if r["status"] == "PASS":
        line += f"{t['median_us']:>10.1f}{100*r['roofline']:>8.1f}{t['samples']:>5}{100*t['noise']:>8.2f}"
        line += f"  setup {r.get('setup_seconds',0):.1f}s timing {t.get('seconds',0):.1f}s total {r.get('total_seconds',0):.1f}s"
    else:
        line += f"  {r.get('stage','')}: {r.get('reason','')[:160]}"
    print(line)
PY
