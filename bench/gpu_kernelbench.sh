#!/usr/bin/env bash
# KernelBench on a GPU in one device call (at most 8 minutes): build the CLI; the judge's GPU tests
# (load_inline CUDA and Triton solutions pass and are timed beside eager and torch.compile; every
# exploit is rejected with its reason; a bad solution leaves the next evaluation unaffected), run
# by gpu_tests_first (bench/gpu_env.sh) as `ctest -L gpu -R kernelbench` within TESTS_LIMIT
# (GPU_TESTS_REGEX empty: every gpu test; GPU_TESTS=0 skips them, and MODE=fastp or run does so
# unless GPU_TESTS=1);
# `kernelbench map --level 1` (which level-1 problems our operators compute, by running each
# reference under the profiler) and the ModelNew of our kernels judged for the mapped ones, in
# problem order as the time allows; fast_p over those, and the time to evaluate one solution
# (compile excluded). Logs and JSON under $OUT; a short table last, the tests' result under it.
#
#   bash bench/gpu_kernelbench.sh                 # tests, then map + fast_p in the time left
#   MODE=fastp bash bench/gpu_kernelbench.sh      # no tests: the whole call for map + fast_p
#   KB_PROBLEMS=1,2,23,95 MODE=fastp bash bench/gpu_kernelbench.sh   # only these level-1 problems
#   KB_PROBLEMS=23,95 MODE=run RUN_BUDGET=90s bash bench/gpu_kernelbench.sh
#                                                 # the loop: our kernels optimized on each problem's shapes
# Every step ends by DEADLINE (465 s after the start); the map stops there with what it judged.
#
# The device machine gets the repository only: copy the problems into the carried folder first
# (`cp -r ../shared/kernelbench .carry/kernelbench`) and name .carry (scripts/prepare-carry.sh) in
# the call's carry.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
MODE=${MODE:-all}
DEADLINE=${DEADLINE:-465}  # seconds after the start by which every step has ended (the call allows 480)
TESTS_LIMIT=${TESTS_LIMIT:-220}
KB_PROBLEMS=${KB_PROBLEMS:-}
AK=$PWD/build-gpu/autokernel
WS=/tmp/kernelbench-workspace
started=$SECONDS
log() { echo "== $(date -u +%H:%M:%S) +$((SECONDS - started))s $*"; }
left() { echo $((DEADLINE - (SECONDS - started))); }

KB_DIR=${KB_DIR:-}
for candidate in "$KB_DIR" .carry/kernelbench ../shared/kernelbench; do
  [[ -n $candidate && -d $candidate/level1 ]] && { KB_DIR=$(cd "$candidate" && pwd); break; }
done
[[ -d ${KB_DIR:-}/level1 ]] || { echo "no KernelBench problems: cp -r ../shared/kernelbench .carry/kernelbench"; exit 2; }

{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv
  nvcc --version | tail -1; python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
} >"$OUT/env.txt" 2>&1
export AUTOKERNEL_PYTHON=python3 AUTOKERNEL_KERNELBENCH=$KB_DIR TORCH_EXTENSIONS_DIR=/tmp/torch-extensions

log build
build_autokernel || exit 1

[[ $MODE == all ]] || GPU_TESTS=${GPU_TESTS:-0}  # fastp and run: the whole call for the map
GPU_TESTS_REGEX=${GPU_TESTS_REGEX-kernelbench}  # the judge's; the rest take longer than a call leaves
GPU_TESTS_VERBOSE=${GPU_TESTS_VERBOSE-1}  # each unittest's line and honest_cuda's timing, below
((TESTS_LIMIT > $(left) - 60)) && TESTS_LIMIT=$(($(left) - 60))
gpu_tests_first "$TESTS_LIMIT"
grep -E "^[0-9]+: (test_.* \.\.\. |Ran |OK|FAILED)|honest_cuda:" "$OUT/ctest-gpu.log" 2>/dev/null | tail -12

MAP_LIMIT=$(($(left) - 15))
((MAP_LIMIT < 10)) && MAP_LIMIT=10  # timeout 0 would mean no limit
what=(map)
[[ $MODE == run ]] && what=(run --budget "${RUN_BUDGET:-60s}")
log "${what[*]} --level 1: our kernels judged on the mapped problems (limit ${MAP_LIMIT}s)"
rm -rf "$WS"
timeout "$MAP_LIMIT" "$AK" kernelbench "${what[@]}" --level 1 ${KB_PROBLEMS:+--problems "$KB_PROBLEMS"} --device cuda \
  --workspace "$WS" --baselines eager --trials 5 --max-time 1 --min-rounds 5 >"$OUT/map.log" 2>&1
echo "map exit: $? (124: the time ran out; the problems judged so far count)"
cp "$WS/map.json" "$OUT/" 2>/dev/null
cp "$WS"/kernelbench-*.json "$OUT/" 2>/dev/null
for record in "$WS"/level1/*/eval.json; do  # records/<problem>/eval.json, as `kernelbench score` reads a tree
  [[ -f $record ]] || continue
  mkdir -p "$OUT/records/$(basename "$(dirname "$record")")"
  cp "$record" "$OUT/records/$(basename "$(dirname "$record")")/"
done

log summary
[[ -d $OUT/records ]] && "$AK" kernelbench score "$OUT/records" --json >"$OUT/fastp.json"
python3 - "$OUT" <<'PY'
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
mapping = json.loads((out / "map.json").read_text()) if (out / "map.json").exists() else None
records = [json.loads(p.read_text()) for p in sorted((out / "records").glob("*/eval.json"))]
if mapping:
    rows = mapping["problems"]
    mapped = [r for r in rows if r.get("mapped")]
    print(f"map: {len(mapped)} of {len(rows)} level-1 problems mapped onto our operators on {mapping['device']['name']}")
    for r in mapped:
        print(f"  {r['key']:<52} {', '.join(o['op'] for o in r['ops']):<22} {100 * r['share']:5.1f}%")
judged = {r["problem"]["key"]: r for r in records}
print(f"\n{'problem':<52} {'status':<14} {'ours us':>10} {'eager us':>10} {'speedup':>8}")
for key, r in sorted(judged.items(), key=lambda kv: kv[1]["problem"].get("number", 0)):
    t = r.get("timing", {})
    ours, eager = t.get("solution", {}).get("median_us"), t.get("eager", {}).get("median_us")
    speed = r.get("speedup", {}).get("eager")
    print(f"{key:<52} {r['status']:<14} {ours or 0:10.1f} {eager or 0:10.1f} {speed or 0:7.2f}x"
          + ("" if r["status"] == "PASS" else f"  {r.get('reason', '')[:70]}"))
seconds = [r["seconds"]["without_build"] for r in records if "seconds" in r]
if seconds:
    print(f"\ntime to evaluate one solution, compile excluded: median {statistics.median(seconds):.1f} s "
          f"(min {min(seconds):.1f}, max {max(seconds):.1f}, {len(seconds)} evaluations)")
if records and (out / "fastp.json").exists():
    for level in json.loads((out / "fastp.json").read_text())["levels"]:
        print(f"level {level['level']}: {level['attempted']} judged, fast_0 {level['fast_0']:.2f}, "
              f"fast_1 {level['fast_1']:.2f}, fast_2 {level['fast_2']:.2f} (vs eager)")
PY
echo "$GPU_TESTS_RESULT"
