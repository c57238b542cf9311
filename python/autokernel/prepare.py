"""`python3 -m autokernel prepare`: builds what verify would otherwise build first, the custom ops'
native kernels (runtime/native.py, once per PyTorch version, cached), so that `autokernel run`
can have it done while the model is profiled and its kernels optimized, not inside verify's
budget.
"""


def add_arguments(parser):
    parser.description = __doc__


def prepare(args, progress):
    from .runtime import native

    progress("custom ops in C++ ready" if native.load() is not None else
             "custom ops in Python (their native kernels could not be built)")
    return 0
