#!/usr/bin/env bash
# Two bench scripts at once on a machine of two GPUs (nvidia-h100-x2), one per GPU, from one build:
# a device call's minutes serve two single-GPU jobs. The CLI and the GPU tests are built once, and
# the gpu tests run once, before both commands (gpu_tests_first in bench/gpu_env.sh): pass
# GPU_TESTS=0, GPU_TESTS_REGEX or GPU_TESTS_EXCLUDE to this script, not to the commands, which only
# print its result; GPU_TESTS_TIMEOUT (default 120 s) comes before the commands' own deadlines,
# so leave it room in the call's timeout. Each command then runs with CUDA_VISIBLE_DEVICES set to
# its GPU, AK_PREBUILT=1 (its own build_autokernel does nothing) and OUT=$OUT/gpu0 or $OUT/gpu1.
# Both are waited for; the tail of each one's output comes last, the tests' result under them.
# Timings from the two GPUs are taken side by side: compare a figure only with one measured on
# the same GPU in the same command. The two share the host's CPUs: pair GPU-bound timings (CUDA
# events, KernelBench's millisecond problems) freely, but not a host-bound measurement
# (torch.compile's default mode, small models) with a job that loads the CPUs (the fourteenth
# session's call 3). Each GPU's files come back as one archive, $OUT/gpu0.tar.gz and
# $OUT/gpu1.tar.gz.
#   run(command="bash bench/gpu_pair.sh 'MODE=fastp bash bench/gpu_kernelbench.sh' 'OPS=flash_attention bash bench/gpu_matmul.sh'",
#       kind="nvidia-h100-x2", carry=[".carry"], timeout_s=600)
set -uo pipefail
cd "$(dirname "$0")/.."
(($# == 2)) || { echo "usage: bash bench/gpu_pair.sh 'COMMAND FOR GPU 0' 'COMMAND FOR GPU 1'" >&2; exit 2; }
source bench/gpu_env.sh
(($(nvidia-smi -L | wc -l) >= 2)) || { echo "gpu_pair.sh: this machine has fewer than two GPUs" >&2; exit 2; }
echo "== build (CLI and GPU tests)"
build_autokernel ON autokernel autokernel_gpu_tests || exit 1
gpu_tests_first 120
export AK_GPU_TESTS_DONE="$GPU_TESTS_RESULT (once, by gpu_pair.sh, before both commands)"
pids=()
for gpu in 0 1; do
  mkdir -p "$OUT/gpu$gpu"
  command=$([[ $gpu == 0 ]] && echo "$1" || echo "$2")
  echo "== gpu$gpu: $command"
  CUDA_VISIBLE_DEVICES=$gpu AK_PREBUILT=1 OUT=$OUT/gpu$gpu bash -c "$command" >"$OUT/gpu$gpu/stdout.txt" 2>&1 &
  pids+=($!)
done
status=0
for gpu in 0 1; do
  wait "${pids[$gpu]}"
  code=$?
  ((code != 0)) && status=1
  echo "== gpu$gpu exit $code"
  tail -40 "$OUT/gpu$gpu/stdout.txt"
done
# A device call brings back 8 files at most, none deep: each GPU's folder travels as one archive.
for gpu in 0 1; do
  tar -C "$OUT" -czf "$OUT/gpu$gpu.tar.gz" "gpu$gpu" && rm -rf "${OUT:?}/gpu$gpu"
done
echo "$GPU_TESTS_RESULT"
exit $status
