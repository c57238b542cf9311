#!/usr/bin/env bash
# One device call (about 5-7 minutes on a bare H100 or H200, 3-4 on a warm one) for fused_mlp inside
# torch.compile's graphs (bench/mlp_in_graph.py): the compact LLaMA's MLP (8x512 tokens, 768 ->
# 2048), a 7B-shaped one (1x2048, 4096 -> 11008) and four residual MLP blocks of the compact
# shape, fp16, each in eager, compile default and reduce-overhead, with and without our kernel
# (plus apply's traced graph without it): time a call, host time, GPU kernels, profiles, Inductor's code.
#
#  1. build the CLI (only where build-gpu/autokernel is missing; AK_REBUILD=1 forces it), which
#     builds and checks the kernel for each shape (`autokernel bench --quick`); then the gpu tests
#     (gpu_tests_first in bench/gpu_env.sh, whose build of them brings the CLI up to date too:
#     GPU_TESTS=0 skips them, GPU_TESTS_REGEX / GPU_TESTS_EXCLUDE narrow them, GPU_TESTS_TIMEOUT
#     defaults to a quarter of the time left);
#  2. the carried wheels (ninja), then the custom ops' native kernels (`python3 -m autokernel
#     prepare`): without them the numbers would be the Python twin's, so the call stops
#     (ALLOW_PYTHON_OPS=1 goes on);
#  3. bench/mlp_in_graph.py; no case starts past DEADLINE_S less 100 s.
# Files back: env.txt, build.log (when built), ctest-gpu.log, mlp_in_graph.log (everything, the
# table and the tests' result last),
# mlp_in_graph.json, mlp.tar.gz (per case: profile tables, Inductor's generated code and the
# bench output). Needs .carry (scripts/prepare-carry.sh):
#   run(command="bash bench/gpu_mlp_in_graph.sh", carry=[".carry"], timeout_s=600)
#   CASES=mlp:8x512x768x2048 VARIANTS=abcef bash bench/gpu_mlp_in_graph.sh   (fewer cases or variants)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
DEADLINE_S=${DEADLINE_S:-540}  # the whole script, from its start
START=$(date +%s)
LOG=$OUT/mlp_in_graph.log
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}

machine_summary >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt" | tee "$LOG"

if [[ ! -x build-gpu/autokernel || ${AK_REBUILD:-0} == 1 ]]; then
  echo "== build" | tee -a "$LOG"
  build_autokernel || exit 1
fi
gpu_tests_first $(((DEADLINE_S - ($(date +%s) - START)) / 4))
echo "$GPU_TESTS_RESULT" >>"$LOG"
use_carried_wheels >>"$LOG" 2>&1
echo "== the custom ops' native kernels" | tee -a "$LOG"
timeout 240 python3 -m autokernel prepare 2>&1 | tee -a "$LOG"
if ! grep -q "custom ops in C++ ready" "$LOG" && [[ ${ALLOW_PYTHON_OPS:-0} != 1 ]]; then
  echo "gpu_mlp_in_graph: the custom ops' native kernels did not build (see $LOG); ALLOW_PYTHON_OPS=1 runs without them"
  exit 1
fi

left=$((DEADLINE_S - ($(date +%s) - START)))
echo "== mlp_in_graph ($left s left)" | tee -a "$LOG"
timeout $((left > 60 ? left : 60)) python3 bench/mlp_in_graph.py --ak build-gpu/autokernel --out "$OUT" \
  --budget $((left > 200 ? left - 100 : 100)) ${CASES:+--cases "$CASES"} ${VARIANTS:+--variants "$VARIANTS"} ${SOURCE:+--source "$SOURCE"} 2>&1 |
  grep --line-buffered -v '^USDT:' | tee -a "$LOG"
status=${PIPESTATUS[0]}
# At most 8 files come back from a device call: the per-case folders travel as one archive.
[[ -d $OUT/mlp ]] && tar -C "$OUT" -czf "$OUT/mlp.tar.gz" mlp && rm -rf "$OUT/mlp"
((status == 124)) && echo "gpu_mlp_in_graph: stopped at DEADLINE_S ($DEADLINE_S s); what finished is in mlp_in_graph.json"
echo "$GPU_TESTS_RESULT" | tee -a "$LOG"
exit "$status"
