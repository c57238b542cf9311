#!/usr/bin/env bash
# One device call: Nsight Compute counters for the compute-bound kernels that miss their targets,
# ours beside PyTorch's (cuBLAS for matmul, SDPA for flash_attention) on the issue's problems, with
# the clocks left alone (--clock-control none); then, when THROUGHPUT_BUDGET is set, the loop's
# experiments/hour over the memory-bound operators (bench/loop_throughput.sh) and the harness's
# time per stage for one of them. A side-by-side counter table per case is printed last; the
# reports, logs and tables come back in $OUT/ncu.tar.gz, the throughput run's log and results.tsv
# beside it. The gpu tests run first (gpu_tests_first in bench/gpu_env.sh: GPU_TESTS=0 skips them,
# GPU_TESTS_REGEX / GPU_TESTS_EXCLUDE narrow them, GPU_TESTS_TIMEOUT default 180 s); their result
# is printed last.
#   NCU_CASES="matmul,4096x4096x4096,fp16" THROUGHPUT_BUDGET=3m bash bench/gpu_ncu.sh
#   NCU_BACKEND=triton NCU_CASES="fused_mlp,4096x4096x11008,fp16" bash bench/gpu_ncu.sh  # the Triton starter
# A case's fourth field is a configuration of our starter, NAME=VALUE items joined by '+'
# (written in as its defaults, as bench/matmul_shapes.py's columns): "matmul,64x4096x4096:b_nk=1,fp16,SKINNY_STREAM_K=0".
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
AK=$PWD/build-gpu/autokernel
NCU_CASES=${NCU_CASES:-"matmul,4096x4096x4096,fp16 matmul,8192x8192x8192,fp16 \
flash_attention,4x32x4096x128:causal=1,bf16 flash_attention,4x32x4096x128:causal=0,bf16"}
THROUGHPUT_BUDGET=${THROUGHPUT_BUDGET:-}
NCU_BACKEND=${NCU_BACKEND:-cuda}  # whose starter is "ours": kernels/cuda/OP.cu or kernels/triton/OP.py
case $NCU_BACKEND in cuda) ext=cu ;; triton) ext=py ;; *) echo "NCU_BACKEND: cuda or triton" >&2; exit 2 ;; esac
NCU_LIMIT=${NCU_LIMIT:-150}
dir=$OUT/ncu
mkdir -p "$dir"
ncu_run() { timeout "$NCU_LIMIT" ncu --clock-control none --set full -f "$@"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; ncu --version | tail -1; } \
  2>&1 | tee "$dir/env.txt"
echo "== build"
build_autokernel || exit 1
gpu_tests_first 180  # each case's two profiles may take NCU_LIMIT each
"$AK" device >"$dir/device.txt" 2>&1

summaries=()
for case in $NCU_CASES; do
  IFS=, read -r op shape dtype config <<<"$case"
  tag=$(echo "$op-$shape-$dtype${config:+-$config}" | tr ':=+' '___')
  kernel=kernels/$NCU_BACKEND/$op.$ext
  if [[ -n $config ]]; then
    kernel=$dir/$tag.$ext
    python3 -c 'import sys; sys.path.insert(0, "bench"); from compare_ours import with_defaults
print(with_defaults(open(sys.argv[1]).read(), sys.argv[2].replace("+", " "), sys.argv[3]), end="")' \
      "kernels/$NCU_BACKEND/$op.$ext" "$config" "$NCU_BACKEND" >"$kernel" || exit 1
  fi
  echo "== ncu $op $shape $dtype ${config:-}"
  # Ours: checked and built by the harness first (not profiled: its checks hold the stream), then
  # driven through the ABI on the same inputs as PyTorch's call.
  module=$("$AK" bench "$kernel" --op "$op" --shape "$shape" --dtype "$dtype" --quick --json \
    2>"$dir/$tag-bench.err" | tee "$dir/$tag-bench.json" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("module", ""))')
  echo "ours: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["status"], round(d["timing"]["median_us"], 1), "us")' "$dir/$tag-bench.json" 2>&1)"
  ncu_run --profile-from-start off -o "$dir/$tag-ours" python3 bench/ncu_driver.py "$op" "$shape" "$dtype" \
    --module "$module" >"$dir/$tag-ours.log" 2>&1
  echo "ncu ours: exit $?"
  ncu_run --profile-from-start off -o "$dir/$tag-torch" python3 bench/ncu_driver.py "$op" "$shape" "$dtype" \
    >"$dir/$tag-torch.log" 2>&1
  echo "ncu torch: exit $?"
  if [[ -n ${NCU_HOT:-} ]]; then  # the instructions where our kernel's warps stalled most
    ncu --import "$dir/$tag-ours.ncu-rep" --page source --csv --print-source sass >"$dir/$tag-ours-source.csv" \
      2>"$dir/$tag-ours-source.err" || ncu --import "$dir/$tag-ours.ncu-rep" --page source --csv \
      >"$dir/$tag-ours-source.csv" 2>>"$dir/$tag-ours-source.err"
    python3 bench/ncu_summary.py --hot "$NCU_HOT" "$dir/$tag-ours-source.csv" >"$dir/$tag-hot.txt" 2>&1
    # PyTorch's too (SASS only), to set the two kernels' instruction mixes side by side.
    ncu --import "$dir/$tag-torch.ncu-rep" --page source --csv --print-source sass >"$dir/$tag-torch-source.csv" \
      2>"$dir/$tag-torch-source.err"
    python3 bench/ncu_summary.py --mix "ours=$dir/$tag-ours-source.csv" "torch=$dir/$tag-torch-source.csv" \
      >"$dir/$tag-mix.txt" 2>&1
    summaries+=("$dir/$tag-mix.txt")
    summaries+=("$dir/$tag-hot.txt")
  fi
  python3 bench/ncu_summary.py "ours=$dir/$tag-ours.ncu-rep" "torch=$dir/$tag-torch.ncu-rep" >"$dir/$tag.txt" 2>&1
  summaries+=("$dir/$tag.txt")
done

tar -C "$OUT" -czf "$OUT/ncu.tar.gz" ncu && rm -rf "$dir"
for s in "${summaries[@]}"; do echo "== $(basename "$s" .txt)"; tar -xzOf "$OUT/ncu.tar.gz" "ncu/$(basename "$s")"; done

if [[ -n $THROUGHPUT_BUDGET ]]; then
  echo "== harness stages of one memory-bound experiment (rmsnorm 8192x8192 fp16)"
  "$AK" bench kernels/cuda/rmsnorm.cu --op rmsnorm --results "$OUT/bench-rmsnorm.tsv" >/dev/null 2>&1
  python3 -c 'import csv,sys; print(list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))[-1]["phases"])' \
    "$OUT/bench-rmsnorm.tsv"
  echo "== loop throughput ($THROUGHPUT_BUDGET)"
  AK=$AK BUDGET=$THROUGHPUT_BUDGET WORKSPACE=/tmp/throughput/workspace bash bench/loop_throughput.sh \
    >"$OUT/throughput.log" 2>&1
  cp /tmp/throughput/workspace/results.tsv "$OUT/throughput-results.tsv" 2>/dev/null
  tail -25 "$OUT/throughput.log"
fi
echo "$GPU_TESTS_RESULT"
