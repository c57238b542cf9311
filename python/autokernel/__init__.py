"""autokernel's Python side: the bridge the `autokernel` command drives (profile, verify, export of
PyTorch models) and what a user's own script imports:

    import autokernel
    autokernel.apply(model, example_inputs, workspace="workspace")   # our kernels, where they win
    model = torch.compile(model)                                     # optional: traces through them

See README.md for the whole path (run, export, pip install, apply, torch.compile).
"""
import re

__version__ = "0.1.0"
MIN_TORCH = (2, 5)

try:
    import torch
except ImportError:
    raise ImportError("autokernel needs PyTorch (>= 2.5) in this Python environment: pip install torch") from None

if tuple(int(v) for v in re.findall(r"\d+", torch.__version__)[:2]) < MIN_TORCH:
    raise ImportError(f"autokernel needs PyTorch >= 2.5 (torch.export, torch.library.custom_op); "
                      f"this is {torch.__version__}")

_API = {"apply": ("runtime.apply", "apply"), "report": ("runtime.apply", "report"),
        "restore": ("runtime.apply", "restore"), "load_kernels": ("runtime.manifest", "load")}
__all__ = [*_API, "__version__"]


def __getattr__(name):
    # Loaded on first use: the package's other modules (the Triton builder) need none of it.
    if name not in _API:
        raise AttributeError(f"module 'autokernel' has no attribute {name!r}")
    import importlib

    module, attribute = _API[name]
    return getattr(importlib.import_module(f".{module}", __name__), attribute)
