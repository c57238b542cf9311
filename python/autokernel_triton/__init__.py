"""The Triton backend's Python side, apart from the `autokernel` bridge package so that compiling a
kernel imports Triton only (no PyTorch: a kernel compile should not pay seconds for it):

    aot.py        the ahead-of-time compiler: a kernels/triton/<op>.py file -> cubins + a C++ launcher
    spec.py       a kernel file and its AK_LAUNCH mapping, loaded and checked
    expr.py       the mapping's expressions, evaluated in Python and written as C++
    launcher.py   the C++ ak_launch of a module
    interpret.py  a kernel file run through its mapping by Triton's interpreter (CPU tests)
"""
