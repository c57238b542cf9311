#!/usr/bin/env bash
# One call on a GPU machine: build, the GPU tests (gpu_tests_first in bench/gpu_env.sh: GPU_TESTS=0
# skips, GPU_TESTS_REGEX narrows; GPU_TESTS_EXCLUDE defaults to kernelbench, whose tests
# bench/gpu_kernelbench.sh runs), then our matmul, fused_mlp and flash_attention against PyTorch on
# every shape of them in the shipped model profiles, one column per configuration
# (bench/matmul_shapes.py). Logs under $OUT; the tables come last, the tests' result under them.
# TUNE_SHAPES=4096x32000x768,... first runs the engine's own search on each matmul shape
# (TUNE_STRATEGY, default model; TUNE_BUDGET, default 120s) from the defaults, unattended, and adds
# each search's recommended configuration (its winner where alternating rounds confirm it against
# the defaults, else the defaults) to the matmul columns.
# MATMUL_EXTRA_SHAPES=1x4096x4096,... (FUSED_MLP_, FLASH_ATTENTION_) replaces the standard problems
# added to the model shapes (matmul_shapes.py --extra-shapes); NO_MODEL_SHAPES=1 times those alone.
# B_NK=1 holds every matmul's B as a Linear's [N, K] weight (problem b_nk=1), as models call it.
# A configuration's home=DIR item takes an earlier tree's starter and headers (DIR holding its
# include/ and kernels/, e.g. from `git archive REV include kernels` into .carry/rev-REV), for a
# baseline column beside the current tree's (bench/compare_ours.py, checked_module).
#   OPS=matmul MATMUL_CONFIGS=";TMA_STORE=0;TMA_STORE=1 STAGES=3" DTYPES=fp16,bf16 bash bench/gpu_matmul.sh
#   OPS=flash_attention FLASH_ATTENTION_CONFIGS="home=.carry/rev-f183dc1;" bash bench/gpu_matmul.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
# Each op's configurations: unset or empty, one column of the starter's own defaults (an empty
# configuration); a leading ';' adds that column to others ("KEYS=176" alone has no defaults column).
MATMUL_CONFIGS=${MATMUL_CONFIGS:-}
FUSED_MLP_CONFIGS=${FUSED_MLP_CONFIGS:-}
FLASH_ATTENTION_CONFIGS=${FLASH_ATTENTION_CONFIGS:-}

echo "== build"
build_autokernel || exit 1
GPU_TESTS_EXCLUDE=${GPU_TESTS_EXCLUDE-kernelbench}  # set empty: every gpu test
gpu_tests_first
TUNE_SHAPES=${TUNE_SHAPES:-}
for shape in ${TUNE_SHAPES//,/ }; do
  echo "== tune matmul $shape"
  tag=$(echo "$shape" | tr ':=' '__')  # $OUT's files come back only under plain names
  build-gpu/autokernel tune kernels/cuda/matmul.cu --op matmul --shape "$shape" --dtype fp16 --json \
    --strategy "${TUNE_STRATEGY:-model}" --budget "${TUNE_BUDGET:-120s}" >"$OUT/tune-$tag.json" 2>"$OUT/tune-$tag.log"
  recommended=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("recommended") or "")' \
    "$OUT/tune-$tag.json" 2>/dev/null)
  python3 - "$OUT/tune-$tag.json" <<'PY' || tail -3 "$OUT/tune-$tag.log"
import json, sys
d = json.load(open(sys.argv[1]))
best, why = d.get("best") or {}, (d.get("confirmation") or {}).get("why", "no confirmation")
us = (best.get("timing") or {}).get("median_us")
print(f"{len(d.get('trials', []))} trials, best {best.get('config')} at {us} us; {why}")
PY
  [[ -n $recommended ]] && MATMUL_CONFIGS="$MATMUL_CONFIGS;$recommended"
done
for op in ${OPS:-matmul fused_mlp}; do
  configs_var=$(echo "${op}_CONFIGS" | tr a-z A-Z)
  echo "== $op shapes"
  extra_var=$(echo "${op}_EXTRA_SHAPES" | tr a-z A-Z)
  python3 bench/matmul_shapes.py --ak build-gpu/autokernel --op "$op" --configs "${!configs_var}" ${B_NK:+--b-nk} \
    ${!extra_var:+--extra-shapes "${!extra_var}"} ${NO_MODEL_SHAPES:+--no-model-shapes} --dtypes "${DTYPES:-fp16}" --json-out "$OUT/$op-shapes.json" >"$OUT/$op-shapes.md" 2>"$OUT/$op-shapes.log"
  grep "^\[build\]" "$OUT/$op-shapes.log"
done
for op in ${OPS:-matmul fused_mlp}; do cat "$OUT/$op-shapes.md"; done
clock_summary
echo "$GPU_TESTS_RESULT"
