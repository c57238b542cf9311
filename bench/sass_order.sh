#!/usr/bin/env bash
# Where ptxas put a kernel's waits: for each function of KERNEL_FILE whose name matches REGEX, its
# wgmma waits, named barriers, matrix instructions, exponentials, shuffles and conversions in SASS
# order, runs of one counted ("MUFU.EX2 x41"). The PTX's order is not the SASS's: until 2026-12-06
# ptxas placed the attention's wait for P V ahead of the softmax meant to run under it (a masking
# branch in the loop), and only the SASS showed it (docs/benchmarks.md, thirty-fifth session).
# Needs nvcc and cuobjdump with nvdisasm: the GPU machine's toolkit has both; on a machine whose
# toolkit has only the compilers, those of NVIDIA's wheels in the project's .venv
# (python/requirements.txt), so the SASS needs no device call. The matched functions' SASS goes to $OUT.
#   bash bench/sass_order.sh kernels/cuda/flash_attention.cu 'attention_wgmmaI13__nv_bfloat16Li128ELb0ELi128ELb0'
#   SASS_DEFINES="-DLAZY_RESCALE=1" bash bench/sass_order.sh kernels/cuda/flash_attention.cu 'Li128ELb0ELi128ELb1'
set -uo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 2 ]] || { echo "usage: bench/sass_order.sh KERNEL_FILE FUNCTION_REGEX" >&2; exit 2; }
[[ -f $1 ]] || { echo "sass_order.sh: no file $1" >&2; exit 2; }
export PATH=$PATH:/usr/local/cuda/bin
if ! command -v cuobjdump >/dev/null; then
  for bin in .venv/lib/python3*/site-packages/nvidia/cu*/bin; do
    [[ -x $bin/cuobjdump && -x $bin/nvdisasm ]] && export PATH=$PATH:$PWD/$bin
  done
fi
command -v cuobjdump >/dev/null ||
  { echo "sass_order.sh: needs cuobjdump (the CUDA toolkit's, or scripts/install-deps.sh's in .venv)" >&2; exit 2; }
OUT=${OUT:-$PWD/gpu-logs}
mkdir -p "$OUT"
tag=$(basename "$1" | tr '.' '_')
cubin=$(mktemp --suffix=.cubin)
trap 'rm -f "$cubin"' EXIT
# shellcheck disable=SC2086  # SASS_DEFINES is a list of flags
if ! nvcc -std=c++17 -O3 -cubin -gencode=arch=compute_90a,code=sm_90a -Iinclude ${SASS_DEFINES:-} "$1" \
  -o "$cubin" 2>"$OUT/$tag.nvcc.log"; then
  tail -5 "$OUT/$tag.nvcc.log" >&2
  exit 1
fi
cuobjdump -sass "$cubin" | awk -v pattern="$2" '/Function : / { keep = $0 ~ pattern } keep' >"$OUT/$tag.sass" || exit 1
awk '
  function flush() { if (last != "") printf "%s x%d | ", last, n; last = "" }
  /Function : / { if (name != "") { flush(); print "" } name = $3; printf "== %s\n", name; next }
  match($0, /WARPGROUP\.DEPBAR\.LE gsb0, 0x[0-9]+|BAR\.SYNC[A-Z._]*|BAR\.ARV|HGMMA\.[0-9x]+|MUFU\.EX2|SHFL\.BFLY|F2FP[A-Z0-9._]*/) {
    token = substr($0, RSTART, RLENGTH)
    if (token == last) n++; else { flush(); last = token; n = 1 }
  }
  END { flush(); if (name == "") print "sass_order.sh: no function matched"; else print "" }
' "$OUT/$tag.sass"
