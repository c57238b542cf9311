#!/usr/bin/env python3
"""PyTorch's side of a profiler comparison: runs the function bench/compare.py times for one
case, on the same inputs, a few times to warm up, then once between cudaProfilerStart and
cudaProfilerStop, so that `ncu --profile-from-start off` records exactly that call's kernels.

    ncu --profile-from-start off --clock-control none ... python3 bench/ncu_torch.py matmul 4096x4096x4096 fp16
"""
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from compare import FUNCTIONS, TORCH_DTYPE, make_inputs  # noqa: E402


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: ncu_torch.py OP SHAPE DTYPE   (e.g. flash_attention 4x32x4096x128:causal=1 bf16)")
    op, shape, dtype = sys.argv[1:]
    if op not in FUNCTIONS or dtype not in TORCH_DTYPE:
        sys.exit(f"ncu_torch.py: unknown op {op!r} or dtype {dtype!r}")
    dims = [int(d) for d in shape.split(":")[0].split("x")]
    fn = FUNCTIONS[op](shape)
    args = make_inputs(op, dims, TORCH_DTYPE[dtype])
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    fn(*args)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
