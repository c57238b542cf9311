#!/usr/bin/env bash
# Builds bench/attention_timeline.cu twice (with the kernel's trace marks and without) and runs
# both on each shape: the call's time with and without the marks, and the traced build's table of
# where a block's time goes. Needs nvcc and a Hopper GPU; logs go to $OUT/attention_timeline.log.
#   bash bench/attention_timeline.sh                       # the shipped models' short shapes
#   TIMELINE_SHAPES="4 32 4096 128 0;8 12 512 64 0" bash bench/attention_timeline.sh
#   TIMELINE_DEFINES="-DPINGPONG=0" bash bench/attention_timeline.sh   # a configuration of the starter
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-$PWD/gpu-logs}
mkdir -p "$OUT"
SHAPES=${TIMELINE_SHAPES:-"8 12 512 64 0;8 12 512 64 1;1 32 2048 128 1"}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
log=$OUT/attention_timeline.log
for build in traced untraced; do
  flags=(-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude ${TIMELINE_DEFINES:-})
  [[ $build == traced ]] && flags+=(-DAK_ATTENTION_TRACE)
  # shellcheck disable=SC2068
  if ! nvcc ${flags[@]} bench/attention_timeline.cu -lcuda -o "$dir/$build" >>"$log" 2>&1; then
    echo "attention_timeline.sh: the $build build failed ($log)" >&2
    tail -5 "$log" >&2
    exit 1
  fi
done
IFS=';' read -ra shapes <<<"$SHAPES"
for shape in "${shapes[@]}"; do
  # shellcheck disable=SC2086
  "$dir/untraced" $shape 2>&1 | tee -a "$log"
  # shellcheck disable=SC2086
  "$dir/traced" $shape 2>&1 | tee -a "$log"
  echo | tee -a "$log"
done
