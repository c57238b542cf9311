"""Where a model reaches one of our operators through a torch function: F.linear is a matmul,
F.scaled_dot_product_attention a flash_attention, and so on. Each converter reads one call's
arguments and returns a Call (the operator, its problem, and how to make the kernel's inputs and
turn its outputs back into what the torch function returns), or None when the call is outside
what the operator computes (a mask, dropout, a dim other than the last...), so torch runs it.

The profiler and verify share these converters: what is profiled is exactly what is plugged in.
Module patterns (a SwiGLU MLP, an RMSNorm written out, a rotary embedding) are in patterns.py.
"""
import functools
import math
import weakref
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

from .abi import DTYPE_NAMES
from .ops import OPS


class Unsupported(Exception):
    """A call the operator cannot take after all (found only when its inputs are made): torch runs it."""


@dataclass
class Call:
    op: str
    shapes: list  # the kernel's input shapes, ABI order
    scalars: list
    dtype: torch.dtype
    inputs: Callable[[], list]  # the kernel's input tensors; made only when a kernel runs
    finish: Callable[[list], object]  # the kernel's outputs -> what the torch function returns

    @property
    def problem(self):
        return OPS[self.op].problem(self.shapes, self.scalars)

    @property
    def dtype_name(self):
        return DTYPE_NAMES[self.dtype]


def argument(args, kwargs, index, name, default=None):
    if index < len(args):
        return args[index]
    return kwargs.get(name, default)


def _floating(*tensors):
    return all(isinstance(t, torch.Tensor) and t.dtype in DTYPE_NAMES for t in tensors) and (
        len({t.dtype for t in tensors}) == 1 and len({t.device for t in tensors}) == 1
    )


def _rows_of(x):
    """x viewed as [rows, last dim] for the row-wise operators; None for a scalar or empty tensor."""
    if x.dim() == 0 or x.numel() == 0:
        return None
    return x.numel() // x.shape[-1], x.shape[-1]


def _last_dim(x, dim):
    return dim is not None and not isinstance(dim, (list, tuple)) and dim in (-1, x.dim() - 1)


class PerTensor:
    """Values derived from a tensor, kept while it lives and is not changed in place (an optimizer
    step bumps its version). Keyed by identity: a WeakKeyDictionary would compare tensors with ==."""

    def __init__(self):
        self._entries = {}

    def get(self, tensor, extra=()):
        entry = self._entries.get(id(tensor))
        if entry is not None and entry[0]() is tensor and entry[1] == (tensor._version, extra):
            return entry[2]
        return None

    def put(self, tensor, value, extra=()):
        key = id(tensor)
        self._entries[key] = (weakref.ref(tensor, lambda _: self._entries.pop(key, None)),
                              (tensor._version, extra), value)
        return value


# The weight of a Linear is [N, K]; the matmul kernel takes B[K, N]: made once per weight.
_transposed = PerTensor()


def transposed(weight):
    cached = _transposed.get(weight)
    return cached if cached is not None else _transposed.put(weight, weight.t().contiguous())


def linear(args, kwargs):
    x, weight = argument(args, kwargs, 0, "input"), argument(args, kwargs, 1, "weight")
    bias = argument(args, kwargs, 2, "bias")
    if not _floating(x, weight) or weight.dim() != 2:
        return None
    call = _product(x, weight.t(), bias)
    if call is not None:  # the weight's transposed copy is made once, not on every call
        m, k = call.shapes[0]
        call.inputs = lambda: [x.reshape(m, k).contiguous(), transposed(weight)]
    return call


def _product(a, b, bias=None):
    """a[..., K] @ b[K, N] (+ bias): the unbatched matmul the ABI holds; None for anything else."""
    if not _floating(a, b) or b.dim() != 2 or a.dim() == 0 or a.shape[-1] != b.shape[0]:
        return None
    k, n = b.shape
    m = a.numel() // k
    if m == 0:
        return None

    def finish(outputs):
        y = outputs[0].reshape(*a.shape[:-1], n)
        return y if bias is None else y + bias

    return Call("matmul", [(m, k), (k, n)], [], a.dtype, lambda: [a.reshape(m, k).contiguous(), b.contiguous()], finish)


def matmul(args, kwargs):
    """torch.matmul, Tensor.__matmul__ and torch.mm with a 2-D right-hand side."""
    return _product(argument(args, kwargs, 0, "input"), argument(args, kwargs, 1, "other",
                                                                 kwargs.get("mat2")))


def addmm(args, kwargs):
    bias, a, b = (argument(args, kwargs, i, name) for i, name in enumerate(("input", "mat1", "mat2")))
    if kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1 or not isinstance(bias, torch.Tensor):
        return None
    return _product(a, b, bias)


def attention(args, kwargs):
    q, k, v = (argument(args, kwargs, i, name) for i, name in enumerate(("query", "key", "value")))
    mask = argument(args, kwargs, 3, "attn_mask")
    dropout = argument(args, kwargs, 4, "dropout_p", 0.0)
    causal = bool(argument(args, kwargs, 5, "is_causal", False))
    scale = kwargs.get("scale")
    gqa = bool(kwargs.get("enable_gqa", False))
    if not _floating(q, k, v) or q.dim() != 4 or k.shape != v.shape or mask is not None or dropout:
        return None
    b, h, s, d = q.shape
    if k.dim() != 4 or k.shape[0] != b or k.shape[2] != s or k.shape[3] != d or h % k.shape[1]:
        return None
    if k.shape[1] != h and not gqa:
        return None
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    return Call("flash_attention", [tuple(q.shape), tuple(k.shape), tuple(v.shape)],
                [scale, 1.0 if causal else 0.0], q.dtype,
                lambda: [q.contiguous(), k.contiguous(), v.contiguous()], lambda out: out[0])


def rowwise(op, x, extra=(), scalars=()):
    """A row-wise operator over the last dim of x (with per-column extras such as a weight)."""
    if not _floating(x, *extra):
        return None
    rows = _rows_of(x)
    if rows is None or any(t.shape != (rows[1],) for t in extra):
        return None
    shapes = [rows] + [tuple(t.shape) for t in extra]
    return Call(op, shapes, list(scalars), x.dtype,
                lambda: [x.reshape(rows).contiguous()] + [t.contiguous() for t in extra],
                lambda out: out[0].reshape(x.shape))


def softmax_of(dtype_index):
    """torch.softmax(x, dim, dtype) and Tensor.softmax put dtype third; F.softmax puts it fourth."""

    def convert(args, kwargs):
        x, dim = argument(args, kwargs, 0, "input"), argument(args, kwargs, 1, "dim")
        dtype = argument(args, kwargs, dtype_index, "dtype")
        if not isinstance(x, torch.Tensor) or not _last_dim(x, dim) or dtype not in (None, x.dtype):
            return None
        return rowwise("softmax", x)

    return convert


def layer_norm(args, kwargs):
    x, shape = argument(args, kwargs, 0, "input"), argument(args, kwargs, 1, "normalized_shape")
    weight, bias = argument(args, kwargs, 2, "weight"), argument(args, kwargs, 3, "bias")
    eps = argument(args, kwargs, 4, "eps", 1e-5)
    if weight is None or bias is None or len(tuple(shape)) != 1:
        return None
    return rowwise("layernorm", x, (weight, bias), (eps,))


def rms_norm(args, kwargs):
    x, shape = argument(args, kwargs, 0, "input"), argument(args, kwargs, 1, "normalized_shape")
    weight, eps = argument(args, kwargs, 2, "weight"), argument(args, kwargs, 3, "eps")
    if weight is None or len(tuple(shape)) != 1 or not isinstance(x, torch.Tensor):
        return None
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    return rowwise("rmsnorm", x, (weight,), (eps,))


def cross_entropy(args, kwargs):
    logits, targets = argument(args, kwargs, 0, "input"), argument(args, kwargs, 1, "target")
    weight = argument(args, kwargs, 2, "weight")
    ignore_index = argument(args, kwargs, 4, "ignore_index", -100)
    reduction = argument(args, kwargs, 6, "reduction", "mean")
    smoothing = argument(args, kwargs, 7, "label_smoothing", 0.0)
    if not _floating(logits) or logits.dim() != 2 or not isinstance(targets, torch.Tensor):
        return None
    if targets.dtype != torch.int64 or targets.shape != logits.shape[:1] or weight is not None or smoothing:
        return None
    if reduction not in ("mean", "sum", "none") or argument(args, kwargs, 3, "size_average") is not None:
        return None
    if argument(args, kwargs, 5, "reduce") is not None or ignore_index in range(logits.shape[1]):
        return None

    def finish(out):
        loss, mean = out
        value = {"none": loss, "mean": mean[0], "sum": loss.sum()}[reduction]
        return value.to(logits.dtype)

    def inputs():
        # torch skips ignore_index (-100) targets; the kernel would read outside the row
        if not _targets_in_range(targets, logits.shape[1]):
            raise Unsupported("a target outside [0, V)")
        return [logits.contiguous(), targets.contiguous()]

    return Call("cross_entropy", [tuple(logits.shape), tuple(targets.shape)], [], logits.dtype, inputs, finish)


# Targets found in range. Checking needs the values on the host (a synchronization), which a CUDA
# graph capture forbids: a capture takes the answer of the run before it, and targets never
# checked go back to torch there.
_checked_targets = PerTensor()


def _targets_in_range(targets, classes):
    # A model reshapes its targets on every call: a new view each time, of the same base tensor.
    base = targets if targets._base is None else targets._base
    view = (classes, targets.storage_offset(), tuple(targets.shape), targets.stride())
    if _checked_targets.get(base, view):
        return True
    if targets.is_cuda and torch.cuda.is_current_stream_capturing():
        return False
    ok = bool(((targets >= 0) & (targets < classes)).all())
    if ok:
        _checked_targets.put(base, True, view)
    return ok


def row_sum(args, kwargs):
    x, dim = argument(args, kwargs, 0, "input"), argument(args, kwargs, 1, "dim")
    keepdim, dtype = argument(args, kwargs, 2, "keepdim", False), kwargs.get("dtype")
    if isinstance(dim, (list, tuple)) and len(dim) == 1:
        dim = dim[0]
    if not isinstance(x, torch.Tensor) or keepdim or dtype is not None or not _last_dim(x, dim):
        return None
    call = rowwise("reduce", x)
    if call is not None:
        call.finish = lambda out: out[0].reshape(x.shape[:-1])
    return call


@functools.lru_cache(maxsize=None)  # verify enters the interception on every timed forward pass
def function_sites(ops=None):
    """The torch functions we intercept (those this torch has), each with its converter; only
    those of the operators in `ops` when given."""
    sites = {
        F.linear: ("matmul", linear),
        torch.matmul: ("matmul", matmul),
        torch.Tensor.matmul: ("matmul", matmul),
        torch.Tensor.__matmul__: ("matmul", matmul),
        torch.mm: ("matmul", matmul),
        torch.addmm: ("matmul", addmm),
        F.softmax: ("softmax", softmax_of(3)),
        torch.softmax: ("softmax", softmax_of(2)),
        torch.Tensor.softmax: ("softmax", softmax_of(2)),
        F.layer_norm: ("layernorm", layer_norm),
        F.cross_entropy: ("cross_entropy", cross_entropy),
        torch.sum: ("reduce", row_sum),
        torch.Tensor.sum: ("reduce", row_sum),
    }
    if hasattr(F, "scaled_dot_product_attention"):
        sites[F.scaled_dot_product_attention] = ("flash_attention", attention)
    if hasattr(F, "rms_norm"):
        sites[F.rms_norm] = ("rmsnorm", rms_norm)
    return {func: convert for func, (op, convert) in sites.items() if ops is None or op in ops}
