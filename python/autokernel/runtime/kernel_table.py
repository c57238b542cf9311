"""The kernels a process may run, and the rule that keeps each one to what it was checked for.

A kernel is registered with the problems (shape and dtype) the harness checked it on and the
architecture it was built for. A call of a custom op runs a kernel only when one was checked for
exactly that call's problem and dtype on this device's architecture, and only on contiguous
inputs of one dtype (the layout the harness checked); any other call runs PyTorch's own op
(reference.py) and is counted, with its reason logged once.

With the native kernels (native.py), each kernel that runs a call here is handed to them with the
call struct it filled, and the later calls of that layout never reach this table: they are
counted in C++, in a counter of the kernel's kept here.
"""
import collections
import ctypes
import functools
import logging
import pathlib
import platform
from dataclasses import dataclass, field
from typing import Optional

import torch

from . import NAMESPACE
from .abi import DTYPE_NAMES, KernelModule

log = logging.getLogger(NAMESPACE)


@functools.lru_cache(maxsize=None)
def host_arch():
    """What a host module is built for (-march=native): this CPU's model, as the engine names it."""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return "host:" + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "host:" + (platform.processor() or platform.machine() or "unknown CPU")


@functools.lru_cache(maxsize=None)
def cuda_arch(index):
    """The engine's name for a GPU's architecture (src/runtime/cuda/device_info.cpp): sm_90a on
    an H100, whose arch-specific instructions a plain sm_90 build could not use."""
    major, minor = torch.cuda.get_device_capability(index)
    return f"sm_{major}{minor}" + ("a" if minor == 0 and major in (9, 10) else "")


def device_arch(device):
    if device.type == "cuda":
        return cuda_arch(device.index if device.index is not None else torch.cuda.current_device())
    return host_arch()


@dataclass
class Kernel:
    name: str
    op: str
    module: str  # path of the compiled module
    arch: str  # what it was built for: "sm_90a", "host:<CPU model>"
    problems: frozenset  # {(problem, dtype)} it was checked for
    loaded: Optional[KernelModule] = field(default=None, repr=False)

    def launcher(self):
        if self.loaded is None:  # lazily: a CUDA module loads only where it runs
            self.loaded = KernelModule(self.module, self.op)
        return self.loaded


class KernelTable:
    def __init__(self):
        self._kernels = {}  # (op, problem, dtype, arch) -> Kernel
        # (op, every input's shape, dtype and device, scalars) -> (Kernel, output shapes and dtypes,
        # the prepared call struct) or (None, why PyTorch runs it, None)
        self._memo = {}
        self._calls = collections.Counter()  # kernel name -> calls it ran here
        self._native_calls = {}  # kernel name -> ctypes.c_int64 the C++ kernels count in (never freed)
        self.fallbacks = collections.Counter()  # (op, reason) -> calls PyTorch ran instead
        self._logged = set()
        self.native = None
        # Counts the changes of the kernels registered: what others decided from the table (a
        # whole-module operator's kernel per call shape, module_sites.py) is stale once it moves.
        self.version = 0

    def attach_native(self, native):
        self.native = native

    @property
    def calls(self):
        """Kernel name -> the calls it ran, here and in C++."""
        counted = collections.Counter(self._calls)
        for name, counter in self._native_calls.items():
            if counter.value:
                counted[name] += counter.value
        return counted

    def calls_in_python(self):
        """Kernel name -> the calls it ran here (without the native kernels' own)."""
        return dict(self._calls)

    def _changed(self):
        self._memo.clear()
        self.version += 1
        if self.native is not None:
            self.native.clear()

    def add(self, kernel):
        for problem, dtype in kernel.problems:
            key = (kernel.op, problem, dtype, kernel.arch)
            previous = self._kernels.get(key)
            if previous is not None and previous.module != kernel.module:
                log.info("%s: %s %s %s now served by %s (was %s)", NAMESPACE, kernel.op, problem, dtype,
                         kernel.name, previous.name)
            self._kernels[key] = kernel
        self._changed()

    def remove(self, kernel):
        self._kernels = {k: v for k, v in self._kernels.items() if v is not kernel}
        self._changed()

    def find(self, op, problem, dtype, arch):
        return self._kernels.get((op, problem, dtype, arch))

    def has(self, op, problem, dtype):
        return any(key[:3] == (op, problem, dtype) for key in self._kernels)

    def serves_any_rows(self, op, problem, dtype, arch, allowed=None):
        """Whether a kernel is registered for `op` on `problem` with any first dimension (its rows:
        M for matmul and fused_mlp), this dtype and architecture (allowed: the names it may have)."""
        tail = problem.partition("x")[2]
        return any(key[0] == op and key[2:] == (dtype, arch) and key[1].partition("x")[2] == tail
                   and (allowed is None or kernel.name in allowed) for key, kernel in self._kernels.items())

    def reset_counts(self):
        self._calls.clear()
        for counter in self._native_calls.values():
            counter.value = 0
        self.fallbacks.clear()

    def _resolve(self, spec, tensors, scalars):
        first = tensors[0]
        floating = [t for t in tensors if t.is_floating_point()]
        if any(t.dtype != first.dtype for t in floating) or any(t.device != first.device for t in tensors[1:]):
            return None, "inputs of different dtypes or devices (kernels are checked on one dtype)"
        dtype = DTYPE_NAMES.get(first.dtype)
        if dtype is None:
            return None, f"dtype {first.dtype} is not one a kernel takes"
        layout = spec.layout(tensors)
        problem = spec.problem([tuple(t.shape) for t in tensors], scalars, layout)
        kernel = self.find(spec.name, problem, dtype, device_arch(first.device))
        if kernel is None:
            reason = f"no kernel checked for {problem} {dtype} on {device_arch(first.device)}"
            return None, reason
        # The layout a kernel was checked on: contiguous, or the swapped views its problem names.
        swapped = spec.swapped_inputs(layout)
        if not all(t.is_contiguous() or i in swapped for i, t in enumerate(tensors)):
            return None, "a non-contiguous input (kernels are checked on contiguous ones)"
        return kernel, [(tuple(o.shape), o.stride(), o.dtype) for o in spec.allocate([t.to("meta") for t in tensors])]

    def run(self, spec, tensors, scalars):
        """The kernel's outputs for this call, or None when PyTorch must run it (counted)."""
        key = (spec.name, tuple(scalars), *[(t.shape, t.stride(), t.dtype, t.device) for t in tensors])
        entry = self._memo.get(key)
        if entry is None:
            entry = self._memo[key] = self._resolve(spec, tensors, scalars) + (None,)
        kernel, detail, call = entry
        if kernel is None:
            return self._fallback(spec.name, detail, unexpected=not detail.startswith("no kernel"))
        device = tensors[0].device
        outputs = [torch.empty_strided(shape, stride, dtype=dtype, device=device) for shape, stride, dtype in detail]
        if call is None:  # inputs of this shape and layout: one struct
            call = kernel.launcher().prepare(tensors, outputs, scalars)
            self._memo[key] = (kernel, detail, call)
        code = kernel.launcher().launch(tensors, outputs, scalars, call)
        if code != 0:
            return self._fallback(spec.name, f"{kernel.name} returned {code}", unexpected=True)
        self._calls[kernel.name] += 1
        if self.native is not None:  # the C++ kernel that called here (if one did) keeps this layout
            counter = self._native_calls.setdefault(kernel.name, ctypes.c_int64(0))
            self.native.remember(kernel.launcher().entry_point, call, counter)
        return outputs

    def _fallback(self, op, reason, unexpected=False):
        """Counts the call and logs its reason once: a warning for a call that a rewritten model
        should not make (a layout or dtype we did not check), info for a problem without a kernel."""
        self.fallbacks[(op, reason)] += 1
        if (op, reason) not in self._logged:
            self._logged.add((op, reason))
            (log.warning if unexpected else log.info)("%s::%s runs PyTorch's op: %s", NAMESPACE, op, reason)
        return None


TABLE = KernelTable()
