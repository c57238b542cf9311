#!/usr/bin/env python3
"""One call of an operator for a profiler: PyTorch's function as bench/compare.py times it, or
with --module our compiled kernel (the .so that `autokernel bench --json` names) through the ABI,
on the same inputs. It runs a few times to warm up, then once between cudaProfilerStart and
cudaProfilerStop, so that `ncu --profile-from-start off` records exactly that call's kernels.
(The harness itself cannot be profiled kernel by kernel: its checks hold the stream shut while
the kernel is enqueued, and a profiler serializes the launch behind that hold.)

    ncu --profile-from-start off --clock-control none ... \\
        python3 bench/ncu_driver.py flash_attention 4x32x4096x128:causal=1 bf16 [--module PATH.so]
"""
import argparse
import math
import pathlib
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "python")]
from compare import FUNCTIONS, TORCH_DTYPE, make_inputs  # noqa: E402
from problem_shape import is_causal, shape_dims, shape_params  # noqa: E402


def scalars_of(op, dims, shape):
    """The ABI scalars matching compare.py's PyTorch functions."""
    return {"rmsnorm": [1e-6], "layernorm": [1e-5],
            "flash_attention": [1 / math.sqrt(dims[-1]), float(is_causal(shape))]}.get(op, [])


def ours(module_path, op, dims, shape, inputs):
    from autokernel.runtime.abi import KernelModule
    from autokernel.runtime.ops import OPS
    module, spec = KernelModule(module_path, op), OPS[op]
    outputs, scalars = spec.allocate(inputs), scalars_of(op, dims, shape)

    def call(*args):
        code = module.launch(list(args), outputs, scalars)
        if code != 0:
            raise SystemExit(f"ncu_driver.py: ak_launch returned {code}")
    return call


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("op", choices=sorted(FUNCTIONS))
    p.add_argument("shape", help="e.g. 4096x4096x4096 or 4x32x4096x128:causal=1")
    p.add_argument("dtype", choices=sorted(TORCH_DTYPE))
    p.add_argument("--module", help="our compiled kernel (.so); default: PyTorch's function")
    args = p.parse_args()
    dims = shape_dims(args.shape)
    inputs = make_inputs(args.op, dims, TORCH_DTYPE[args.dtype], shape_params(args.shape))
    fn = ours(args.module, args.op, dims, args.shape, inputs) if args.module else FUNCTIONS[args.op](args.shape)
    for _ in range(3):
        fn(*inputs)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    fn(*inputs)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
