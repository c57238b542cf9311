#!/usr/bin/env bash
# One device call on a machine of several GPUs (nvidia-h100-x2 or larger): the loop measuring on
# every GPU at once (issue 17), and the judge's newest trust checks on the GPU (issue 10).
#
#  1. build the CLI and the GPU tests;
#  2. GPU tests (gpu_tests_first in bench/gpu_env.sh, `ctest -L gpu -V` into ctest-gpu.log):
#     GPU_TESTS_REGEX defaults to the CUDA cheat battery (batching the work of calls not made
#     among them) and L2 persistence across the judge's flush (empty: every gpu test); GPU_TESTS=0
#     skips them, and any other GPU_TESTS is, as before, a gtest filter (A.B:C*-D.E), which runs as
#     the ctest regex it means (ctest names the tests as gtest does);
#  3. one starter timed by the judge on each GPU (the same kernel agrees across GPUs?);
#  4. the judge beside CUDA events in one process (bench/timing_crosscheck.py, CROSSCHECK_OPS);
#  5. the memory-bound suite under `optimize` for BUDGET on GPU 0 alone, then on every GPU
#     (--gpus all): experiments per hour over the whole run and over its second half (after
#     each worker has drawn its references), per worker;
#  6. a table last, the tests' result in it; logs and both runs' results.tsv in $OUT (the details
#     in details.tar.gz).
#   run(command="bash bench/gpu_workers.sh", kind="nvidia-h100-x2", carry=[".carry"], timeout_s=600)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
DEADLINE_S=${DEADLINE_S:-560}  # the whole script, from its start (the device call allows 600)
BUDGET=${BUDGET:-80}             # each optimize run at most; less when the deadline needs it
CROSSCHECK_OPS=${CROSSCHECK_OPS-reduce,rmsnorm}  # empty: skipped
OPS=${OPS:-rmsnorm,softmax,reduce}
GPU_TESTS=${GPU_TESTS:-1}
# A gtest filter (globs joined by ':', exclusions after '-') as the ctest regex it means.
gtest_regex() { sed -e 's/[]+().[|^$]/\\&/g' -e 's/\*/.*/g' -e 's/?/./g' -e 's/:/|^/g' -e 's/^/^/' <<<"$1"; }
if [[ $GPU_TESTS != 0 && $GPU_TESTS != 1 ]]; then
  [[ $GPU_TESTS == *-* ]] && GPU_TESTS_EXCLUDE=$(gtest_regex "${GPU_TESTS#*-}")
  GPU_TESTS_REGEX=$(gtest_regex "${GPU_TESTS%%-*}")
  GPU_TESTS=1
fi
GPU_TESTS_REGEX=${GPU_TESTS_REGEX-'^Cuda/CudaCheatBattery\.|^CudaCheats\.(ResultReuseGainsNothing|L2PersistenceGainsNothing)'}
GPU_TESTS_VERBOSE=${GPU_TESTS_VERBOSE-1}  # the figures the L2 test prints, for workers.log
AK=$PWD/build-gpu/autokernel
START=$(date +%s)
log() { echo "== $(date -u +%H:%M:%S) [$(($(date +%s) - START)) s] $*" | tee -a "$OUT/workers.log"; }

{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm --format=csv; nproc; } 2>&1 | tee "$OUT/workers.log"
GPUS=$(nvidia-smi -L | wc -l)

log build
build_autokernel ON autokernel autokernel_gpu_tests || exit 1

log "gpu tests"
gpu_tests_first 300
{ echo "$GPU_TESTS_RESULT"; grep -E "^[0-9]+: L2 persistence:" "$OUT/ctest-gpu.log" 2>/dev/null; } | tee -a "$OUT/workers.log"

log "one starter on each GPU"
for g in $(seq 0 $((GPUS - 1))); do
  ((${BENCH_EACH:-1})) || break
  CUDA_VISIBLE_DEVICES=$g timeout 120 "$AK" bench kernels/cuda/rmsnorm.cu --op rmsnorm --max-time 1 --json \
    >"$OUT/bench-gpu$g.json" 2>>"$OUT/workers.log"
done

if [[ -n $CROSSCHECK_OPS ]] && (($(date +%s) - START < DEADLINE_S / 2)); then
  log "the judge beside CUDA events in one process ($CROSSCHECK_OPS)"
  timeout 120 python3 bench/timing_crosscheck.py --ak "$AK" --ops "$CROSSCHECK_OPS" --json "$OUT/crosscheck.json" \
    >"$OUT/crosscheck.txt" 2>&1
  tail -6 "$OUT/crosscheck.txt" | tee -a "$OUT/workers.log"
fi
left=$((DEADLINE_S - ($(date +%s) - START)))
BUDGET=$(((left - 60) / 2 < BUDGET ? (left - 60) / 2 : BUDGET))

run_loop() {  # NAME GPUS
  local ws=/tmp/workers-$1
  rm -rf "$ws"
  log "optimize --suite --ops $OPS --gpus $2 for ${BUDGET}s"
  timeout $((BUDGET + 120)) "$AK" optimize --suite --ops "$OPS" --workspace "$ws" --budget "${BUDGET}s" \
    --gpus "$2" --target 10 --patience 100000 >"$OUT/optimize-$1.txt" 2>&1
  echo "optimize $1 exit: $?" | tee -a "$OUT/workers.log"
  tail -3 "$OUT/optimize-$1.txt" | tee -a "$OUT/workers.log"
  cp "$ws/results.tsv" "$OUT/results-$1.tsv" 2>/dev/null
}
if ((BUDGET >= 20)); then
  run_loop one 0
  run_loop all all
else
  log "no time left for the loop runs ($left s)"
fi

log summary
python3 - "$OUT" "$GPUS" <<'EOF' | tee "$OUT/workers-table.txt"
import csv, json, os, sys
out, gpus = sys.argv[1], int(sys.argv[2])
print(f"\n{gpus} GPUs; device time of one starter (rmsnorm 8192x8192 fp16, the judge):")
medians = []
for g in range(gpus):
    try:
        j = json.load(open(os.path.join(out, f"bench-gpu{g}.json")))
        medians.append(j["timing"]["median_us"])
        print(f"  gpu{g}: {j['status']} {j['timing']['median_us']:.2f} us (noise {100 * j['timing']['noise']:.2f}%)")
    except (OSError, ValueError, KeyError) as e:
        print(f"  gpu{g}: no result ({e})")
if len(medians) > 1:
    print(f"  spread across GPUs: {100 * (max(medians) / min(medians) - 1):.2f}%")
rates = {}
for name in ("one", "all"):
    try:
        rows = list(csv.DictReader(open(os.path.join(out, f"results-{name}.tsv")), delimiter="\t"))
    except OSError:
        print(f"{name}: no results")
        continue
    end = max(float(r["elapsed_s"]) for r in rows)
    half = [r for r in rows if float(r["elapsed_s"]) > end / 2]
    workers = sorted({r["worker"] for r in rows if r["worker"]})
    per = ", ".join(f"{w} {sum(r['worker'] == w for r in rows)}" for w in workers)
    passed = sum(r["status"] == "PASS" for r in rows)
    rates[name] = 3600 * len(half) / (end / 2)
    print(f"{name:4s}: {len(rows)} experiments ({passed} PASS) in {end:.0f} s = {3600 * len(rows) / end:.0f}/h; "
          f"second half {rates[name]:.0f}/h; per worker: {per}")
    confirms = [r for r in rows if float(r.get("best_again_us") or 0) > 0]
    for r in confirms:
        print(f"      keep timed again beside the best on {r['worker']}: {r['name']} {r['config']} "
              f"{r['median_us']} / {r['again_us']} us against {r['best_again_us']}: {r['decision']}")
if "one" in rates and "all" in rates and rates["one"] > 0:
    print(f"scaling (second halves): {rates['all'] / rates['one']:.2f}x with {gpus} GPUs = "
          f"{rates['all'] / (gpus * rates['one']):.2f} of linear (target >= 0.9)")
EOF
echo "$GPU_TESTS_RESULT" | tee -a "$OUT/workers-table.txt"
# The device tool brings back 8 files: the rest travel as one archive.
(cd "$OUT" && shopt -s nullglob && details=(build.log bench-gpu*.json crosscheck.* optimize-*.txt results-*.tsv) &&
   tar -czf details.tar.gz "${details[@]}" && rm -f "${details[@]}")
