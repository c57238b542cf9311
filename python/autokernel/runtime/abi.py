"""The kernel ABI (include/autokernel/abi.h) seen from Python: ctypes mirrors of ak_tensor and
ak_call, and a loaded kernel module whose ak_launch runs on torch tensors.

The same compiled module the harness checked is loaded here with ctypes: one kernel, one ABI, no
glue per kernel. ABI_VERSION is abi.h's AK_ABI_VERSION; the bridge's tests compare it, and the
struct sizes, with what the engine reports (`autokernel ops --json`), so the two cannot drift
apart. It is a constant rather than read from abi.h because an installed package has no header.
"""
import ctypes

import torch

from .ops import OPS

ABI_VERSION = 2
MAX_DIMS, MAX_INPUTS, MAX_OUTPUTS, MAX_SCALARS = 4, 8, 4, 8
AK_OK, AK_ERR_UNSUPPORTED, AK_ERR_LAUNCH = 0, 1, 2

DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.int32: 3, torch.int64: 4}
DTYPE_NAMES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
TORCH_DTYPES = {name: dtype for dtype, name in DTYPE_NAMES.items()}


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
        ("workspace", ctypes.c_void_p),
        ("workspace_bytes", ctypes.c_int64),
    ]


def _describe(tensor, slot):
    if tensor.dim() > MAX_DIMS:
        raise ValueError(f"a tensor of {tensor.dim()} dims does not fit the ABI's {MAX_DIMS}")
    if tensor.dtype not in DTYPE_CODES:
        raise ValueError(f"dtype {tensor.dtype} has no ABI code")
    slot.dtype = DTYPE_CODES[tensor.dtype]
    slot.ndim = tensor.dim()
    for i, (size, stride) in enumerate(zip(tensor.shape, tensor.stride())):
        slot.shape[i] = size
        slot.strides[i] = stride


def _layout(tensors):
    return tuple((t.dtype, tuple(t.shape), t.stride()) for t in tensors)


class KernelModule:
    """A compiled kernel module (.so) and its ak_launch entry point."""

    def __init__(self, path, op=None):
        """`op`: the operator the module implements, whose signature may give its calls a
        workspace (ops.OpSpec.workspace); None for a module of an operator that gives none."""
        self.path = str(path)
        self._spec = OPS[op] if op is not None else None
        self._library = ctypes.CDLL(self.path, mode=ctypes.RTLD_LOCAL)
        self._launch = self._library.ak_launch
        self._launch.argtypes = [ctypes.POINTER(AkCall)]
        self._launch.restype = ctypes.c_int
        # Optional: int ak_prepare(void), once before the first launch (abi.h), e.g. to load device
        # code, which must not happen inside a launch.
        try:
            self._prepare = self._library.ak_prepare
            self._prepare.argtypes, self._prepare.restype = [], ctypes.c_int
        except AttributeError:
            self._prepare = None
        # A call's shapes, strides and scalars repeat on every forward pass: the filled struct is
        # kept per layout and only the data pointers and the stream change (the hot path).
        self._calls = {}

    @property
    def entry_point(self):
        """ak_launch's address, for the native kernels (native.py) to call it without Python."""
        return ctypes.cast(self._launch, ctypes.c_void_p).value

    def _call_for(self, inputs, outputs, scalars):
        key = (_layout(inputs), _layout(outputs), tuple(scalars))
        call = self._calls.get(key)
        if call is not None:
            return call
        if len(inputs) > MAX_INPUTS or len(outputs) > MAX_OUTPUTS or len(scalars) > MAX_SCALARS:
            raise ValueError("more tensors or scalars than the ABI holds")
        call = AkCall()
        call.abi_version = ABI_VERSION
        call.n_inputs, call.n_outputs, call.n_scalars = len(inputs), len(outputs), len(scalars)
        for tensor, slot in zip(inputs, call.inputs):
            _describe(tensor, slot)
        for tensor, slot in zip(outputs, call.outputs):
            _describe(tensor, slot)
        for i, value in enumerate(scalars):
            call.scalars[i] = float(value)
        call.workspace_bytes = self._spec.workspace_bytes(inputs) if self._spec is not None else 0
        if len(self._calls) < 64:
            self._calls[key] = call
        return call

    def launch(self, inputs, outputs, scalars, call=None):
        """Runs the kernel on the current stream of the tensors' device; returns its code (0 = ok).
        `call`: the struct prepare() filled for this layout (else it is looked up). A call whose
        op gives a workspace (the struct's workspace_bytes) gets a fresh one from PyTorch's
        allocator: freed after the launch, it is reused only by work queued after the kernel's on
        the same stream, and under CUDA graph capture it comes from the graph's own pool."""
        if self._prepare is not None:
            code = self._prepare()
            if code != 0:
                return code
            self._prepare = None
        call = call or self._call_for(inputs, outputs, scalars)
        workspace = (torch.empty(call.workspace_bytes, dtype=torch.uint8, device=outputs[0].device)
                     if call.workspace_bytes > 0 else None)
        call.workspace = workspace.data_ptr() if workspace is not None else None
        for tensor, slot in zip(inputs, call.inputs):
            slot.data = tensor.data_ptr()
        for tensor, slot in zip(outputs, call.outputs):
            slot.data = tensor.data_ptr()
        device = outputs[0].device
        call.stream = _current_stream(device) if device.type == "cuda" else None
        code = self._launch(ctypes.byref(call))
        call.workspace = None  # the struct outlives this workspace (kept per layout, copied by the native kernels)
        return code

    def prepare(self, inputs, outputs, scalars):
        """The call struct of this layout, to pass to launch() on every call of the same layout."""
        return self._call_for(inputs, outputs, scalars)


def _current_stream(device):
    # The raw handle, without making a Stream object (what Inductor's generated code calls too).
    index = device.index if device.index is not None else torch.cuda.current_device()
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(index) if raw is not None else torch.cuda.current_stream(device).cuda_stream
