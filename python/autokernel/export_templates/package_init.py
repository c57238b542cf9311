"""{{DESCRIPTION}}.

    import torch, this_package
    this_package.apply(model, example_inputs)   # the model calls our kernels where they were checked
    model = torch.compile(model)                # optional: compiles through them, no graph breaks

A kernel runs only on the problems (shape, dtype) and the architecture it was checked for
(kernels.json); every other call runs PyTorch's own op. On another GPU architecture, another CUDA
major version or another PyTorch than the one the package was built with, no kernel is loaded and
one line says so: the model runs on PyTorch's ops. Made by `autokernel export`.
"""
try:
    import torch  # noqa: F401
except ImportError:
    raise ImportError(f"{__name__} needs PyTorch in this Python environment: pip install torch") from None

import pathlib as _pathlib

from .runtime import custom_ops as _custom_ops
from .runtime import manifest as _manifest
from .runtime.apply import apply as _apply
from .runtime.apply import report, restore
from .runtime.ops import OPS as _OPS

KERNELS_JSON = _pathlib.Path(__file__).resolve().parent / "kernels.json"
_custom_ops.define()
# The kernels that run on this machine; the manifest's entries; why none, when none can.
KERNELS, ENTRIES, NOT_LOADED = _manifest.load(KERNELS_JSON)

__all__ = ["apply", "report", "restore", "KERNELS", "ENTRIES", "NOT_LOADED", *_OPS]


def apply(model, example_inputs=(), example_kwargs=None, *, kernels=None, ops=None):
    """Rewrites `model` in place so that our kernels run where the problems they were checked for
    occur (the model is traced on example_inputs); returns it. report(model) says what runs where."""
    return _apply(model, example_inputs, example_kwargs, kernels=kernels, ops=ops)


def __getattr__(name):
    # The operators themselves, in the kernel ABI's layout: this_package.rmsnorm(x, weight, eps)...
    if name in _OPS:
        return _custom_ops.op(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
