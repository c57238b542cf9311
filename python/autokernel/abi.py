"""The kernel ABI (include/autokernel/abi.h) seen from Python: ctypes mirrors of ak_tensor and
ak_call, and a loaded kernel module whose ak_launch runs on torch tensors.

The same compiled module the harness checked is loaded here with ctypes: one kernel, one ABI, no
glue per kernel. The version constant is read from abi.h itself so the two cannot drift apart.
"""
import ctypes
import pathlib
import re

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX_DIMS, MAX_INPUTS, MAX_OUTPUTS, MAX_SCALARS = 4, 8, 4, 8

DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.int32: 3, torch.int64: 4}
DTYPE_NAMES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
TORCH_DTYPES = {name: dtype for dtype, name in DTYPE_NAMES.items()}


def abi_version(header=ROOT / "include" / "autokernel" / "abi.h"):
    match = re.search(r"#define\s+AK_ABI_VERSION\s+(\d+)", header.read_text())
    if not match:
        raise RuntimeError(f"no AK_ABI_VERSION in {header}")
    return int(match.group(1))


class AkTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_DIMS),
        ("strides", ctypes.c_int64 * MAX_DIMS),
    ]


class AkCall(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_int32),
        ("n_inputs", ctypes.c_int32),
        ("n_outputs", ctypes.c_int32),
        ("n_scalars", ctypes.c_int32),
        ("inputs", AkTensor * MAX_INPUTS),
        ("outputs", AkTensor * MAX_OUTPUTS),
        ("scalars", ctypes.c_double * MAX_SCALARS),
        ("stream", ctypes.c_void_p),
    ]


def _describe(tensor, slot):
    if tensor.dim() > MAX_DIMS:
        raise ValueError(f"a tensor of {tensor.dim()} dims does not fit the ABI's {MAX_DIMS}")
    if tensor.dtype not in DTYPE_CODES:
        raise ValueError(f"dtype {tensor.dtype} has no ABI code")
    slot.data = tensor.data_ptr()
    slot.dtype = DTYPE_CODES[tensor.dtype]
    slot.ndim = tensor.dim()
    for i, (size, stride) in enumerate(zip(tensor.shape, tensor.stride())):
        slot.shape[i] = size
        slot.strides[i] = stride


class KernelModule:
    """A compiled kernel module (.so) and its ak_launch entry point."""

    def __init__(self, path):
        self.path = str(path)
        self._library = ctypes.CDLL(self.path, mode=ctypes.RTLD_LOCAL)
        self._launch = self._library.ak_launch
        self._launch.argtypes = [ctypes.POINTER(AkCall)]
        self._launch.restype = ctypes.c_int
        self._version = abi_version()

    def launch(self, inputs, outputs, scalars):
        """Runs the kernel on the current stream of the tensors' device; returns its code (0 = ok)."""
        if len(inputs) > MAX_INPUTS or len(outputs) > MAX_OUTPUTS or len(scalars) > MAX_SCALARS:
            raise ValueError("more tensors or scalars than the ABI holds")
        call = AkCall()
        call.abi_version = self._version
        call.n_inputs, call.n_outputs, call.n_scalars = len(inputs), len(outputs), len(scalars)
        for tensor, slot in zip(inputs, call.inputs):
            _describe(tensor, slot)
        for tensor, slot in zip(outputs, call.outputs):
            _describe(tensor, slot)
        for i, value in enumerate(scalars):
            call.scalars[i] = float(value)
        device = outputs[0].device
        call.stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else None
        return self._launch(ctypes.byref(call))
