#!/usr/bin/env bash
# One device call for model.generate() as transformers users run it (issue 11): transformers' own
# LlamaForCausalLM (examples/hf_llama.py), two `autokernel run`s — one on the prompt's shape (the
# prefill's problems, decided in eager), one on one token a row (a decode step's: `--input-shape
# <batch>,1`, decided in DECODE_MODE: eager, or COMPILE's mode) — then bench/generate_time.py:
# generate() with and without the kernels of both runs, the prefill and a decode step timed
# apart. A short table is printed last; logs and generate.json under $OUT, both runs' output and
# verify.json in $OUT/runs.tar.gz. The gpu tests run first, after the build (gpu_tests_first in
# bench/gpu_env.sh: GPU_TESTS=0 skips them, GPU_TESTS_REGEX / GPU_TESTS_EXCLUDE narrow them,
# GPU_TESTS_TIMEOUT default 90 s); their result ends the table.
# COMPILE (default none: eager, as before) times generate() compiled as transformers users run it,
# a static cache and CompileConfig(mode=COMPILE): default, reduce-overhead or
# max-autotune-no-cudagraphs (generate_time.py --compile; the decode run decides in that mode; the
# compiles take longer: GEN_TIMEOUT, 300 s then, and GPU_TESTS=0 leave room). Needs .carry (transformers):
#   run(command="bash bench/gpu_generate.sh", carry=[".carry"], timeout_s=600)
#   MODEL=examples/hf_llama.py:HFLlama7B4L PROMPT=1,512 DECODE=1,1 bash bench/gpu_generate.sh
#   COMPILE=reduce-overhead GPU_TESTS=0 bash bench/gpu_generate.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
MODEL=${MODEL:-examples/hf_llama.py:HFLlama}
PROMPT=${PROMPT:-8,512}
DECODE=${DECODE:-${PROMPT%%,*},1}
NEW_TOKENS=${NEW_TOKENS:-32}
REPEATS=${REPEATS:-7}
PREFILL_BUDGET=${PREFILL_BUDGET:-100s}
TOP=${TOP:-8}
COMPILE=${COMPILE:-none}
GEN_TIMEOUT=${GEN_TIMEOUT:-$([ "$COMPILE" = none ] && echo 180 || echo 300)}
# transformers compiles generate()'s decode steps only (its prefill stays eager), so the decode run
# decides its kernels in the mode they will run in, and the prefill run in eager.
DECODE_MODE=${DECODE_MODE:-$([ "$COMPILE" = none ] && echo eager || echo "$COMPILE")}
# A compiled decision compiles the model with and without each candidate: at 150 s the H200 left
# verify 66 s, and its first measurement with the kernels (~27 s) did not fit (docs/benchmarks.md).
DECODE_BUDGET=${DECODE_BUDGET:-$([ "$DECODE_MODE" = eager ] && echo 80s || echo 240s)}
AK=$PWD/build-gpu/autokernel
START=$(date +%s)
log() { echo "== $(date -u +%H:%M:%S) [$(($(date +%s) - START)) s] $*" | tee -a "$OUT/generate.log"; }

machine_summary 2>&1 | tee "$OUT/generate.log"

log build
build_autokernel || exit 1
gpu_tests_first 90  # the runs and generate() below take most of a call
echo "$GPU_TESTS_RESULT" >>"$OUT/generate.log"
use_carried_wheels >>"$OUT/generate.log"
log "the custom ops' native kernels"
PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} timeout 240 python3 -m autokernel prepare >>"$OUT/generate.log" 2>&1

run_on() {  # SHAPE BUDGET NAME MODE: `autokernel run` deciding in MODE, its verify table to the log
  local shape=$1 budget=$2 name=$3 ws=/tmp/gen-$3
  log "run $MODEL at $shape (budget $budget, deciding in $4)"
  timeout $((${budget%s} + 150)) "$AK" run --model "$MODEL" --input-shape "$shape" --dtype fp16 --top "$TOP" \
    --budget "$budget" --compile-modes "$([ "$4" = eager ] && echo none || echo "$4")" --mode "$4" --workspace "$ws" --restart >"$OUT/run-$name.txt" 2>&1
  echo "run $name exit: $?" | tee -a "$OUT/generate.log"
  sed -n '/^kernel  /,/^$/p' "$OUT/run-$name.txt" | tee -a "$OUT/generate.log"
  cp "$ws/verify.json" "$OUT/verify-$name.json" 2>/dev/null
}
run_on "$PROMPT" "$PREFILL_BUDGET" prefill eager
run_on "$DECODE" "$DECODE_BUDGET" decode "$DECODE_MODE"

log "generate(): prompt $PROMPT, $NEW_TOKENS new tokens, $REPEATS rounds, compile $COMPILE"
timeout "$GEN_TIMEOUT" python3 bench/generate_time.py --model "$MODEL" --prompt "$PROMPT" --new-tokens "$NEW_TOKENS" \
  --repeats "$REPEATS" --compile "$COMPILE" --workspace /tmp/gen-prefill --workspace /tmp/gen-decode \
  --json-out "$OUT/generate.json" 2>"$OUT/generate_time.err" | tee -a "$OUT/generate.log"
echo "generate_time exit: ${PIPESTATUS[0]}" | tee -a "$OUT/generate.log"
tail -3 "$OUT/generate_time.err"
echo "$GPU_TESTS_RESULT"
# The device tool brings back 8 files: both runs' outputs and verify.json travel as one archive.
(cd "$OUT" && tar -czf runs.tar.gz run-*.txt verify-*.json 2>/dev/null && rm -f run-*.txt verify-*.json)
