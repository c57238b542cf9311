#!/usr/bin/env bash
# One device call for the model pipeline and the compute-bound kernels, within the 10-minute
# limit of a call: build, the gpu tests (gpu_tests_first in bench/gpu_env.sh: GPU_TESTS=0 skips
# them, GPU_TESTS_REGEX / GPU_TESTS_EXCLUDE narrow them, GPU_TESTS_TIMEOUT default 60 s), then
# the main job on a GPU (`autokernel run --model llama`, compact, fp16, 8 x 512 tokens: profile,
# extract, optimize, report, verify), then bench/compare.py for matmul, flash_attention and
# fused_mlp (the file's default configuration of each, against cuBLAS / SDPA / eager PyTorch).
# Every step has its own time limit so the call ends in time and $OUT keeps what finished. A
# short table is printed last, the tests' result under it.
#   RUN_BUDGET=300s RUN_TOP=5 COMPARE_OPS=matmul,flash_attention,fused_mlp bash bench/gpu_session.sh
#   COMPARE_OPS=rmsnorm,softmax COMPARE_DTYPES=bf16 COMPARE_COMPILE=1 bash bench/gpu_session.sh
# Needs .carry (scripts/prepare-carry.sh) named in the call's carry.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
RUN_BUDGET=${RUN_BUDGET:-300s}  # the whole run's (profile, extract, optimize, report, verify)
RUN_LIMIT=${RUN_LIMIT:-330}
RUN_TOP=${RUN_TOP:-5}
RUN_KERNEL_BUDGET=${RUN_KERNEL_BUDGET:-}
COMPARE_OPS=${COMPARE_OPS:-matmul,flash_attention,fused_mlp}
COMPARE_LIMIT=${COMPARE_LIMIT:-150}
COMPARE_DTYPES=${COMPARE_DTYPES:-fp16,bf16,fp32}
COMPARE_COMPILE=${COMPARE_COMPILE:-0}  # torch.compile max-autotune takes minutes for the matmuls
AK=$PWD/build-gpu/autokernel
WS=/tmp/llama-workspace
log() { echo "== $(date -u +%H:%M:%S) $*"; }

machine_summary 2>&1 | tee "$OUT/session.log"

log build | tee -a "$OUT/session.log"
build_autokernel || exit 1
gpu_tests_first 60  # RUN_LIMIT and COMPARE_LIMIT take most of the call
echo "$GPU_TESTS_RESULT" >>"$OUT/session.log"

log "run --model llama (limit ${RUN_LIMIT}s, run budget $RUN_BUDGET)" | tee -a "$OUT/session.log"
timeout "$RUN_LIMIT" "$AK" run --model llama --input-shape 8,512 --dtype fp16 --top "$RUN_TOP" --budget "$RUN_BUDGET" \
  ${RUN_KERNEL_BUDGET:+--kernel-budget "$RUN_KERNEL_BUDGET"} \
  --compile-modes default --mode default --workspace "$WS" --restart 2>&1 | tee -a "$OUT/session.log"
echo "run exit: ${PIPESTATUS[0]}" | tee -a "$OUT/session.log"
for f in profile.json verify.json results.tsv reports/progress.png; do [[ -f $WS/$f ]] && cp "$WS/$f" "$OUT/"; done
"$AK" report --workspace "$WS" --json --no-plot >"$OUT/report.json" 2>/dev/null

log "compare $COMPARE_OPS (limit ${COMPARE_LIMIT}s)" | tee -a "$OUT/session.log"
compile_flag=(--no-compile); [[ $COMPARE_COMPILE == 1 ]] && compile_flag=()
timeout "$COMPARE_LIMIT" python3 bench/compare.py --ak "$AK" --ops "$COMPARE_OPS" --dtypes "$COMPARE_DTYPES" \
  "${compile_flag[@]}" --tune-budget 1 \
  --json-out "$OUT/compare.json" 2>&1 | tee -a "$OUT/session.log"

log summary
python3 - "$OUT" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
def load(name):
    p = out / name
    return json.loads(p.read_text()) if p.exists() else None
v, r, c = load("verify.json"), load("report.json"), load("compare.json")
if r:
    s = r["summary"]
    print(f"optimize: {s['experiments']} experiments in {s['elapsed_s']:.0f} s = {s['experiments_per_hour']:.0f}/hour, "
          f"projected {s['projected_speedup']:.3f}x")
    for k in r["kernels"]:
        print(f"  {k['name']:45s} {k['baseline_us']:9.1f} -> {k['best_us']:9.1f} us  roofline {100*k['best_roofline']:.1f}%")
if v:
    print(f"verify: passed={v['passed']}, plugging decided in {v['decide_mode']}")
    for row in v["timing"]["rows"]:
        torch_us, ours_us = row.get("torch_us"), row.get("ours_us")
        ratio = f"{torch_us / ours_us:.2f}x" if torch_us and ours_us else "-"
        print(f"  {row['mode']:28s} PyTorch {torch_us or 0:9.0f} us, ours {ours_us or 0:9.0f} us: {ratio} "
              f"({len(row['kernels'])} kernels) {row.get('note', '')}")
    replay = v["timing"].get("replay", {})
    print(f"  graphs: eager {replay.get('eager_us', 0):.0f} us, ours {replay.get('ours_us', 0):.0f} us "
          f"{replay.get('ours_note', '')}")
    for k in v["kernels"]:
        decision = k["decisions"].get(v["decide_mode"], {})
        print(f"  {k['name']:45s} in={decision.get('in')} calls={k['calls']} {decision.get('why', k.get('why', ''))}")
for row in (c or {}).get("rows", []):
    ours = row["ours_us"]
    compiled = row.get("compile_us")
    print(f"compare {row['op']:16s} {row['shape']:24s} {row['dtype']}: ours {ours or 0:9.1f} us, eager {row['eager_us']:9.1f} us"
          f" -> {row['eager_us'] / ours if ours else 0:.2f}x, compile {compiled or 0:.1f} us -> "
          f"{compiled / ours if ours and compiled else 0:.2f}x, {100 * (row.get('roofline') or 0):.1f}% ({row['note'][:50]})")
PY
echo "$GPU_TESTS_RESULT"
