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
    def __init__(self, handler, sites):
        super().__init__()
        self._handler = handler
        self._sites = sites

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
def intercepted(module_sites, handler, ops=None):
    """Within: handler(call, run_in_torch) answers every call of one of our operators (of those in
    `ops`, when given). A TorchFunctionMode costs Python on every torch call, so it is entered only
    when some intercepted function can reach the handler."""
    patched = []
    functions = function_sites(ops)
    try:
        for site in module_sites:
            if ops is not None and site.op not in ops:
                continue
            site.module.forward = _patched_forward(site, handler)  # an instance attribute: this module only
            patched.append(site.module)
        with _Interceptor(handler, functions) if functions else contextlib.nullcontext():
            yield
    finally:
        for module in patched:
            del module.forward
