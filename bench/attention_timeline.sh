#!/usr/bin/env bash
# Builds bench/attention_timeline.cu with and without the kernel's trace marks, for each variant of
# the starter, and runs them on each shape: the output checked against the fp32 definition, the
# call's time with and without the marks, and the traced build's table of where a block's time
# goes. Needs nvcc and a Hopper GPU; logs go to $OUT/attention_timeline.log.
#   bash bench/attention_timeline.sh                       # the shipped models' short shapes
#   TIMELINE_SHAPES="4 32 4096 128 0;8 12 512 64 0" bash bench/attention_timeline.sh  # B H S D causal [kv_heads] [dtype]
#   TIMELINE_VARIANTS="default:;chain:-DCHAIN=1" bash bench/attention_timeline.sh    # label:defines;...
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-$PWD/gpu-logs}
mkdir -p "$OUT"
SHAPES=${TIMELINE_SHAPES:-"8 12 512 64 0;8 12 512 64 1;8 12 512 64 1 4;1 32 2048 128 1"}
VARIANTS=${TIMELINE_VARIANTS:-"default:"}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
log=$OUT/attention_timeline.log
IFS=';' read -ra variants <<<"$VARIANTS"
IFS=';' read -ra shapes <<<"$SHAPES"
pids=()
for variant in "${variants[@]}"; do
  label=${variant%%:*}
  defines=${variant#*:}
  for build in traced untraced; do
    flags=(-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude)
    [[ $build == traced ]] && flags+=(-DAK_ATTENTION_TRACE)
    # shellcheck disable=SC2086  # defines is a list of flags
    nvcc "${flags[@]}" $defines bench/attention_timeline.cu -lcuda -o "$dir/$label.$build" >"$dir/$label.$build.log" 2>&1 &
    pids+=($!)
  done
done
for pid in "${pids[@]}"; do wait "$pid"; done
cat "$dir"/*.log >>"$log"
for variant in "${variants[@]}"; do
  label=${variant%%:*}
  for build in traced untraced; do
    [[ -x $dir/$label.$build ]] || { echo "attention_timeline.sh: the $label $build build failed ($log)" >&2; exit 1; }
  done
done
for shape in "${shapes[@]}"; do
  for variant in "${variants[@]}"; do  # the untraced calls of every variant side by side first
    label=${variant%%:*}
    # shellcheck disable=SC2086
    echo "[$label] $("$dir/$label.untraced" $shape 2>&1 | tr '\n' ' ')" | tee -a "$log"
  done
  for variant in "${variants[@]}"; do
    label=${variant%%:*}
    echo "[$label]" | tee -a "$log"
    # shellcheck disable=SC2086
    "$dir/$label.traced" $shape 2>&1 | tee -a "$log"
  done
  echo | tee -a "$log"
done
