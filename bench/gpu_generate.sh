#!/usr/bin/env bash
# One device call for model.generate() as transformers users run it (issue 11): transformers' own
# LlamaForCausalLM (examples/hf_llama.py), two `autokernel run`s — one on the prompt's shape (the
# prefill's problems), one on one token a row (a decode step's: `--input-shape <batch>,1`) — each
# deciding its kernels in eager, then bench/generate_time.py: generate() with and without the
# kernels of both runs, the prefill and a decode step timed apart. A short table is printed last;
# logs, both runs' verify.json and generate.json under $OUT. Needs .carry (transformers):
#   run(command="bash bench/gpu_generate.sh", carry=[".carry"], timeout_s=420)
#   MODEL=examples/hf_llama.py:HFLlama7B4L PROMPT=1,512 DECODE=1,1 bash bench/gpu_generate.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
MODEL=${MODEL:-examples/hf_llama.py:HFLlama}
PROMPT=${PROMPT:-8,512}
DECODE=${DECODE:-${PROMPT%%,*},1}
NEW_TOKENS=${NEW_TOKENS:-32}
REPEATS=${REPEATS:-7}
PREFILL_BUDGET=${PREFILL_BUDGET:-100s}
DECODE_BUDGET=${DECODE_BUDGET:-80s}
TOP=${TOP:-8}
AK=$PWD/build-gpu/autokernel
START=$(date +%s)
log() { echo "== $(date -u +%H:%M:%S) [$(($(date +%s) - START)) s] $*" | tee -a "$OUT/generate.log"; }

machine_summary 2>&1 | tee "$OUT/generate.log"

log build
build_autokernel || exit 1
use_carried_wheels >>"$OUT/generate.log"
log "the custom ops' native kernels"
PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} timeout 240 python3 -m autokernel prepare >>"$OUT/generate.log" 2>&1

run_on() {  # SHAPE BUDGET NAME: `autokernel run` deciding in eager, its verify table to the log
  local shape=$1 budget=$2 name=$3 ws=/tmp/gen-$3
  log "run $MODEL at $shape (budget $budget)"
  timeout $((${budget%s} + 90)) "$AK" run --model "$MODEL" --input-shape "$shape" --dtype fp16 --top "$TOP" \
    --budget "$budget" --compile-modes none --mode eager --workspace "$ws" --restart >"$OUT/run-$name.txt" 2>&1
  echo "run $name exit: $?" | tee -a "$OUT/generate.log"
  sed -n '/^kernel  /,/^$/p' "$OUT/run-$name.txt" | tee -a "$OUT/generate.log"
  cp "$ws/verify.json" "$OUT/verify-$name.json" 2>/dev/null
}
run_on "$PROMPT" "$PREFILL_BUDGET" prefill
run_on "$DECODE" "$DECODE_BUDGET" decode

log "generate(): prompt $PROMPT, $NEW_TOKENS new tokens, $REPEATS rounds"
timeout 180 python3 bench/generate_time.py --model "$MODEL" --prompt "$PROMPT" --new-tokens "$NEW_TOKENS" \
  --repeats "$REPEATS" --workspace /tmp/gen-prefill --workspace /tmp/gen-decode \
  --json-out "$OUT/generate.json" 2>"$OUT/generate_time.err" | tee -a "$OUT/generate.log"
echo "generate_time exit: ${PIPESTATUS[0]}" | tee -a "$OUT/generate.log"
tail -3 "$OUT/generate_time.err"
