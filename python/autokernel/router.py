"""Compiled kernels plugged into a model. Each operator is a torch.library custom op,
autokernel::<op>, defined from the op table; its one implementation picks the kernel module
extracted for the call's problem and dtype, allocates the outputs and launches the module through
the C ABI. No glue per kernel: any module of the operator fits. A call no kernel was extracted
for stays with PyTorch (a kernel is tuned for its own problem; cuBLAS is a better default than a
matmul tuned for another shape), and is counted as such.
"""
import collections

import torch

from .abi import DTYPE_NAMES, KernelModule
from .ops import OPS
from .sites import Unsupported


class Refused(Unsupported):
    """The kernel returned non-zero (AK_ERR_UNSUPPORTED for a shape it does not take)."""


class Router:
    def __init__(self, kernels):
        """kernels: [{name, op, shape, dtype, module, use}] (modules.json of `autokernel verify`).
        Only those with use (default true) are loaded; each replaces exactly the calls of its own
        problem and dtype — the ones it was extracted from and optimized for."""
        self.kernels = []
        for k in kernels:
            if k["op"] not in OPS:
                raise ValueError(f"kernel {k['name']}: unknown operator {k['op']}")
            if k.get("use", True):
                self.kernels.append(dict(k, loaded=KernelModule(k["module"])))
        self._by_call = {(k["op"], k["shape"], k["dtype"]): k for k in self.kernels}
        self._ops = frozenset(k["op"] for k in self.kernels)
        self.calls = collections.Counter()  # kernel name -> calls it ran
        self.fallbacks = collections.Counter()  # (op, reason) -> calls torch ran instead

    def ops(self):
        return self._ops

    def pick(self, op, problem, dtype_name):
        return self._by_call.get((op, problem, dtype_name))

    def launch(self, op, inputs, scalars):
        spec = OPS[op]
        shapes = [tuple(t.shape) for t in inputs]
        problem, dtype_name = spec.problem(shapes, scalars), DTYPE_NAMES.get(inputs[0].dtype, "?")
        kernel = self.pick(op, problem, dtype_name)
        if kernel is None:
            raise Refused(f"no kernel for {problem} {dtype_name}")
        outputs = spec.allocate(inputs)
        code = kernel["loaded"].launch(inputs, outputs, scalars)
        if code != 0:
            raise Refused(f"{kernel['name']} returned {code}")
        self.calls[kernel["name"]] += 1
        return outputs

    def handle(self, call, run_in_torch):
        """The verify handler of plug.intercepted: our kernel, or torch when there is none."""
        if call.op not in self._ops:
            return run_in_torch()
        if self.pick(call.op, call.problem, call.dtype_name) is None:  # before any input is made
            self.fallbacks[(call.op, f"no kernel for {call.problem} {call.dtype_name}")] += 1
            return run_in_torch()
        try:
            inputs = call.inputs()
            outputs = _custom_op(call.op)(*inputs, *call.scalars)
        except Unsupported as refused:
            self.fallbacks[(call.op, str(refused))] += 1
            return run_in_torch()
        return call.finish(list(outputs) if isinstance(outputs, (tuple, list)) else [outputs])


_library = None
_active = []  # the router whose kernels the custom ops run (a stack: innermost wins)


def _custom_op(op):
    return getattr(torch.ops.autokernel, op)


def define_custom_ops():
    """Defines autokernel::<op> for the nine operators, once per process."""
    global _library
    if _library is not None:
        return
    library = torch.library.Library("autokernel", "DEF")
    for spec in OPS.values():
        library.define(spec.schema())
        library.impl(spec.name, _implementation(spec), "CPU")
        library.impl(spec.name, _implementation(spec), "CUDA")
        library.impl(spec.name, _meta(spec), "Meta")
    _library = library


def _implementation(spec):
    count = len(spec.inputs)

    def run(*args):
        if not _active:
            raise RuntimeError(f"autokernel::{spec.name} called with no kernels plugged in")
        outputs = _active[-1].launch(spec.name, list(args[:count]), list(args[count:]))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return run


def _meta(spec):
    count = len(spec.inputs)

    def shapes_only(*args):
        outputs = spec.allocate(list(args[:count]))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return shapes_only


class plugged_in:
    """Within: the custom ops run this router's kernels."""

    def __init__(self, router):
        define_custom_ops()
        self.router = router

    def __enter__(self):
        _active.append(self.router)
        return self.router

    def __exit__(self, *exc):
        _active.remove(self.router)
