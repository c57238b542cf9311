#!/usr/bin/env bash
# One device call for the Triton backend, within 8 minutes: build, the gpu tests of the harness's
# Triton path (gpu_tests_first in bench/gpu_env.sh: GPU_TESTS_REGEX defaults to Triton, empty runs
# every gpu test; GPU_TESTS=0, or STEPS without tests, skips them), every Triton starter benched at
# its standard shape (timing, roofline and the uncached compile time of its module), every
# starter through all five stages in fp16, bf16 and fp32 at a small timed shape (its module now a
# cache hit), and the compare rows (our CUDA and Triton kernels, eager, torch.compile,
# Liger-Kernel) for rmsnorm, rotary, SwiGLU and cross entropy. Each step starts only while the
# call's time lasts (DEADLINE seconds from the start) and has its own limit, so $OUT keeps what
# finished; a short table is printed last, the tests' result under it.
#
#   bash bench/gpu_triton.sh                      # from the repository root, on the GPU machine
#   DEADLINE=900 COMPARE_COMPILE=1 bash bench/gpu_triton.sh
#   STEPS=compare COMPARE_OPS=rotary_embedding,fused_mlp bash bench/gpu_triton.sh   # some steps only
#   STEPS=compare COMPARE_OPS=flash_attention COMPARE_DTYPES=bf16 bash bench/gpu_triton.sh
#   BENCH_OPS=flash_attention,fused_mlp bash bench/gpu_triton.sh   # bench and stages for these only
#
# Carry .carry: the build's small libraries (scripts/prepare-carry.sh, which remakes .carry) and
# then, for the Liger column, the wheel (`.venv/bin/pip download liger-kernel==0.8.5 --no-deps -d
# .carry/wheels`); without it the Liger cells say "absent". Files under $OUT: env.txt,
# build.log, ctest-gpu.log, bench.jsonl, check.jsonl, compare.json, compare.log, results.tsv.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
DEADLINE=${DEADLINE:-470}            # seconds; the device call's limit is 600
COMPARE_COMPILE=${COMPARE_COMPILE:-0}  # torch.compile max-autotune of SwiGLU alone takes minutes
STEPS=${STEPS:-tests,bench,stages,compare}  # which steps run, e.g. STEPS=compare for the table alone
COMPARE_OPS=${COMPARE_OPS:-rmsnorm,rotary_embedding,fused_mlp,cross_entropy}
COMPARE_DTYPES=${COMPARE_DTYPES:-fp16}  # flash_attention's rows are bf16: COMPARE_DTYPES=fp16,bf16
BENCH_OPS=${BENCH_OPS:-}  # the bench and stages steps for these ops only (comma-separated; empty: all)
wants() { [[ ,$STEPS, == *,$1,* ]]; }
picked() { [[ -z $BENCH_OPS || ,$BENCH_OPS, == *,$1,* ]]; }
AK=$PWD/build-gpu/autokernel
START=$SECONDS
export AUTOKERNEL_CACHE=/tmp/ak-triton-cache  # fresh per machine: the first builds are uncached
rm -rf "$AUTOKERNEL_CACHE"
: >"$OUT/bench.jsonl"
: >"$OUT/check.jsonl"
log() { echo "== $(date -u +%H:%M:%S) +$((SECONDS - START))s $*"; }
left() { echo $((DEADLINE - (SECONDS - START))); }
# step NAME MIN_SECONDS: whether there is time left for a step that needs about MIN_SECONDS.
step() {
  if (($(left) < $2)); then
    log "skip $1 ($(left)s left)"
    return 1
  fi
  log "$1"
}

{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  nvcc --version | tail -2; c++ --version | head -1
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
} >"$OUT/env.txt" 2>&1
use_carried_wheels >>"$OUT/env.txt"
python3 -c 'import liger_kernel, importlib.metadata as m; print("liger-kernel", m.version("liger-kernel"))' \
  >>"$OUT/env.txt" 2>&1 || echo "liger-kernel absent" >>"$OUT/env.txt"

step build 0
build_autokernel ON autokernel autokernel_gpu_tests || exit 1

wants tests || GPU_TESTS=${GPU_TESTS:-0}  # STEPS=compare and the like: the table alone, as before
GPU_TESTS_REGEX=${GPU_TESTS_REGEX-Triton}
gpu_tests_first $(($(left) - 30))

# op, standard shape, dtype (the issue's targets), small shape for the five stages.
STARTERS=(
  "rmsnorm 8192x8192 fp16 1024x4096" "softmax 8192x8192 fp16 1024x4096" "layernorm 8192x8192 fp16 1024x4096"
  "reduce 16384x4096 fp16 2048x2048" "cross_entropy 8192x32768 fp16 512x8192"
  "rotary_embedding 4x32x4096x128 fp16 1x8x512x64" "matmul 4096x4096x4096 fp16 256x256x256"
  "flash_attention 4x32x4096x128:causal=1 bf16 1x4x256x64:causal=1"
  "flash_attention 4x32x4096x128:causal=0 bf16 1x4x256x64:causal=0" "fused_mlp 4096x4096x11008 fp16 128x256x704"
)
bench() {  # bench OP SHAPE DTYPE OUTFILE [extra...]: one experiment, one JSON line appended
  local op=$1 shape=$2 dtype=$3 out=$4
  shift 4
  timeout 240 "$AK" bench "kernels/triton/$op.py" --op "$op" --shape "$shape" --dtype "$dtype" --json \
    --results "$OUT/results.tsv" "$@" >/tmp/ak-bench.json 2>/tmp/ak-bench.err
  python3 -c 'import json, sys; s = sys.stdin.read(); print(json.dumps(json.loads(s[s.index("{"):])))' \
    </tmp/ak-bench.json >>"$out" 2>/dev/null ||
    echo "{\"op\": \"$op\", \"problem\": \"$shape\", \"dtype\": \"$dtype\", \"status\": \"NO_RESULT\", \"reason\": \"$(tail -c 200 /tmp/ak-bench.err | tr -d '\"\\\n')\"}" >>"$out"
}
wants bench && for entry in "${STARTERS[@]}"; do
  read -r op shape dtype small <<<"$entry"
  picked "$op" || continue
  step "bench $op $shape $dtype (quick: smoke + the timed problem)" 25 && bench "$op" "$shape" "$dtype" "$OUT/bench.jsonl" \
    --quick --max-time 1
done
wants stages && for entry in "${STARTERS[@]}"; do
  read -r op shape dtype small <<<"$entry"
  [[ $shape == *causal=0 ]] && continue  # one attention row: the stages run causal and not anyway
  picked "$op" || continue
  step "five stages: $op $small" 25 && bench "$op" "$small" "$dtype" "$OUT/check.jsonl" --max-time 0.3
done

if wants compare && step "compare ($COMPARE_OPS)" 90; then
  timeout $(($(left) - 10)) python3 bench/compare.py --ak "$AK" --ops "$COMPARE_OPS" \
    --dtypes "$COMPARE_DTYPES" --backends cuda,triton --tune-budget 1 $([[ $COMPARE_COMPILE == 1 ]] || echo --no-compile) \
    --json-out "$OUT/compare.json" >"$OUT/compare.log" 2>&1
  tail -8 "$OUT/compare.log"
fi

log summary
python3 - "$OUT" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
rows = lambda name: [json.loads(l) for l in (out / name).read_text().splitlines() if l.strip()] \
    if (out / name).exists() else []
checks = {(c.get("op"), c.get("dtype")): c for c in rows("check.jsonl")}
print(f"{'op':17s} {'problem':26s} {'dtype':5s} {'status':8s} {'us':>9s} {'GB/s':>6s} {'TFLOP/s':>7s} {'roof%':>6s} "
      f"{'compile s':>9s}  five stages (small shape)")
for b in rows("bench.jsonl"):
    t = b.get("timing") or {}
    c = checks.get((b.get("op"), b.get("dtype")), {})
    stages = c.get("status", "-") + ("" if c.get("status") in (None, "PASS") else f" at {c.get('stage')}: "
                                     f"{c.get('reason', '')[:60]}")
    compile_s = "cached" if b.get("compile_cached") else f"{b.get('compile_seconds', 0):.2f}"
    print(f"{b.get('op', '?'):17s} {b.get('problem', '?'):26s} {b.get('dtype', '?'):5s} {b.get('status', '?'):8s} "
          f"{t.get('median_us', 0):9.1f} {b.get('gbps', 0):6.0f} {b.get('tflops', 0):7.1f} "
          f"{100 * b.get('roofline', 0):6.1f} {compile_s:>9s}  {stages}")
compare = json.loads((out / "compare.json").read_text()) if (out / "compare.json").exists() else {"rows": []}
for r in compare["rows"]:
    f = lambda v: "-" if v is None else f"{v:.1f}"
    cells = " ".join(f"{b} {f(r[b].get('us'))}" for b in ("cuda", "triton") if b in r)
    print(f"compare {r['op']:16s} {r['dtype']}: {cells}, eager {f(r['eager_us'])}, compile {f(r['compile_us'])}, "
          f"Liger {f(r['liger_us'])} us -> {r.get('winner') or '-'}")
PY
echo "$GPU_TESTS_RESULT"
