#!/usr/bin/env bash
# One device call: Nsight Compute counters for the compute-bound kernels that miss their targets,
# ours beside PyTorch's (cuBLAS for matmul, SDPA for flash_attention) on the issue's problems, with
# the clocks left alone (--clock-control none); then, when THROUGHPUT_BUDGET is set, the loop's
# experiments/hour over the memory-bound operators (bench/loop_throughput.sh) and the harness's
# time per stage for one of them. A side-by-side counter table per case is printed last; the
# reports, logs and tables come back in $OUT/ncu.tar.gz, the throughput run's log and results.tsv
# beside it.
#   NCU_CASES="matmul,4096x4096x4096,fp16" THROUGHPUT_BUDGET=3m bash bench/gpu_ncu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
AK=$PWD/build-gpu/autokernel
NCU_CASES=${NCU_CASES:-"matmul,4096x4096x4096,fp16 matmul,8192x8192x8192,fp16 \
flash_attention,4x32x4096x128:causal=1,bf16 flash_attention,4x32x4096x128:causal=0,bf16"}
THROUGHPUT_BUDGET=${THROUGHPUT_BUDGET:-}
NCU_LIMIT=${NCU_LIMIT:-150}
dir=$OUT/ncu
mkdir -p "$dir"
ncu_run() { timeout "$NCU_LIMIT" ncu --clock-control none --set full -f "$@"; }
# Our kernel's own name (the wgmma variants are what the default configurations run at these
# problems), and how many of its launches precede the stream-held timing loop in `bench --quick`
# (smoke and primary checks, two input sets each; flash_attention's smoke problem takes another
# variant).
declare -A KERNEL=([matmul]=wgmma_gemm_kernel [flash_attention]=attention_wgmma)
declare -A LAUNCHES=([matmul]=4 [flash_attention]=2)

{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; ncu --version | tail -1; } \
  2>&1 | tee "$dir/env.txt"
echo "== build"
build_autokernel || exit 1
"$AK" device >"$dir/device.txt" 2>&1

summaries=()
for case in $NCU_CASES; do
  IFS=, read -r op shape dtype <<<"$case"
  tag=$(echo "$op-$shape-$dtype" | tr ':=' '__')
  echo "== ncu $op $shape $dtype"
  ncu_run -k "regex:${KERNEL[$op]}" --launch-count "${LAUNCHES[$op]}" -o "$dir/$tag-ours" \
    "$AK" bench "kernels/cuda/$op.cu" --op "$op" --shape "$shape" --dtype "$dtype" --quick >"$dir/$tag-ours.log" 2>&1
  echo "ours: exit $?"
  ncu_run --profile-from-start off -o "$dir/$tag-torch" python3 bench/ncu_torch.py "$op" "$shape" "$dtype" \
    >"$dir/$tag-torch.log" 2>&1
  echo "torch: exit $?"
  python3 bench/ncu_summary.py "ours=$dir/$tag-ours.ncu-rep" "torch=$dir/$tag-torch.ncu-rep" >"$dir/$tag.txt" 2>&1
  summaries+=("$dir/$tag.txt")
done

tar -C "$OUT" -czf "$OUT/ncu.tar.gz" ncu && rm -rf "$dir"
for s in "${summaries[@]}"; do echo "== $(basename "$s" .txt)"; tar -xzOf "$OUT/ncu.tar.gz" "ncu/$(basename "$s")"; done

if [[ -n $THROUGHPUT_BUDGET ]]; then
  echo "== harness stages of one memory-bound experiment (rmsnorm 8192x8192 fp16)"
  "$AK" bench kernels/cuda/rmsnorm.cu --op rmsnorm --json >"$OUT/bench-rmsnorm.json" 2>&1
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print({"compile": round(d["compile_seconds"], 2), **{s["stage"]: round(s["seconds"], 2) for s in d["stages"]}, "total": round(d["total_seconds"], 2)})' \
    "$OUT/bench-rmsnorm.json"
  echo "== loop throughput ($THROUGHPUT_BUDGET)"
  AK=$AK BUDGET=$THROUGHPUT_BUDGET WORKSPACE=/tmp/throughput/workspace bash bench/loop_throughput.sh \
    >"$OUT/throughput.log" 2>&1
  cp /tmp/throughput/workspace/results.tsv "$OUT/throughput-results.tsv" 2>/dev/null
  tail -25 "$OUT/throughput.log"
fi
