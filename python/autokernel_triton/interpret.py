"""Runs a Triton kernel file through its own launch mapping on CPU tensors, with Triton's
interpreter: the numerics of the kernels and the mapping (arguments, grids, variants, scratch)
checked without a GPU. The ahead-of-time compiler (aot.py) evaluates the same parsed
expressions in C++; here they are evaluated in Python.

TRITON_INTERPRET=1 must be set before triton is first imported (this module sets it when it is
imported first).
"""
import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402

from autokernel_triton.spec import load_module, parse_spec  # noqa: E402

TORCH_DTYPES = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32", torch.int32: "i32",
                torch.int64: "i64"}
DTYPE_OF = {name: dtype for dtype, name in TORCH_DTYPES.items()}


class Unsupported(Exception):
    """The mapping does not take this call (what ak_launch returns AK_ERR_UNSUPPORTED for)."""


def load(path, defines=None):
    module, tree = load_module(path, {k: str(v) for k, v in (defines or {}).items()})
    spec = parse_spec(path, module, tree)
    spec.module = module
    return spec


def _call_dtype(spec, inputs, outputs):
    typed = [t for t, tensor in zip(spec.inputs + spec.outputs, list(inputs) + list(outputs)) if t.dtype == "T"]
    tensors = dict(zip([t.name for t in spec.inputs + spec.outputs], list(inputs) + list(outputs)))
    dtype = TORCH_DTYPES.get(tensors[typed[0].name].dtype) if typed else spec.dtypes[0]
    for t in spec.inputs + spec.outputs:
        want = dtype if t.dtype == "T" else t.dtype
        if TORCH_DTYPES.get(tensors[t.name].dtype) != want:
            raise Unsupported(f"{t.name} is {tensors[t.name].dtype}, the mapping wants {want}")
    if dtype not in spec.dtypes:
        raise Unsupported(f"dtype {dtype} is not among {spec.dtypes}")
    return dtype


def _aligned(launch, env):
    """What the launcher's aligned build assumes holds for this call: its pointers 16-byte
    aligned, its integers multiples of 16. A launch built only so takes no other call."""
    for arg in launch.args:
        if arg.name not in launch.aligned:
            continue
        value = arg.expr.evaluate(env)
        if arg.kind == "pointer":
            value = value.data_ptr()
        if value % 16:
            return False
    return True


def run(spec, inputs, outputs, scalars=()):
    """Launches every step of the mapping on the given tensors (in ABI order), like ak_launch."""
    if len(inputs) != len(spec.inputs) or len(outputs) != len(spec.outputs) or len(scalars) != len(spec.scalars):
        raise Unsupported("the call's counts differ from the mapping's")
    dtype = _call_dtype(spec, inputs, outputs)
    env = {"tensors": dict(zip([t.name for t in spec.inputs + spec.outputs], list(inputs) + list(outputs))),
           "scalars": dict(zip(spec.scalars, scalars))}
    for r in spec.requires:
        if not r.evaluate(env):
            raise Unsupported(f"require {r.text}")
    for t in spec.scratch:
        shape = [int(e.evaluate(env)) for e in t.shape]
        env["tensors"][t.name] = torch.empty(shape, dtype=DTYPE_OF[t.resolved_dtype(dtype)])
    for step in spec.steps:
        launch = next((l for l in step if dtype in l.dtypes and (l.when is None or l.when.evaluate(env))
                       and (l.unaligned or _aligned(l, env))), None)
        if launch is None:
            raise Unsupported("no variant of a step takes this call")
        args = [a.expr.evaluate(env) for a in launch.args]
        grid = tuple(int(g.evaluate(env)) for g in launch.grid)
        launch.kernel[grid](*args, **launch.constexprs, num_warps=launch.num_warps, num_stages=launch.num_stages)
    return launch
