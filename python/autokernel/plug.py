"""Running a model with every call of one of our operators handed to a handler: the torch
functions through a TorchFunctionMode, the module patterns by replacing the forward of those
module instances. The profiler's handler opens a named scope around the call (so the profile
attributes the call's GPU time to the operator and its problem); verify's handler runs the
compiled kernel instead. Both see the same calls, from sites.py and patterns.py.
"""
import contextlib

from torch.overrides import TorchFunctionMode

from .sites import function_sites


class _Interceptor(TorchFunctionMode):
    def __init__(self, handler):
        super().__init__()
        self._handler = handler
        self._sites = function_sites()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        convert = self._sites.get(func)
        call = convert(args, kwargs) if convert is not None else None
        if call is None:
            return func(*args, **kwargs)
        return self._handler(call, lambda: func(*args, **kwargs))


def _patched_forward(site, handler):
    original = site.module.forward

    def forward(*args, **kwargs):
        call = site.convert(args, kwargs)
        if call is None:
            return original(*args, **kwargs)
        return handler(call, lambda: original(*args, **kwargs))

    return forward


@contextlib.contextmanager
def intercepted(module_sites, handler):
    """Within: handler(call, run_in_torch) answers every call of one of our operators."""
    patched = []
    try:
        for site in module_sites:
            forward = _patched_forward(site, handler)
            site.module.forward = forward  # an instance attribute: this module only
            patched.append(site.module)
        with _Interceptor(handler):
            yield
    finally:
        for module in patched:
            del module.forward
