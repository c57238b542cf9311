"""Operators a model writes out as a module rather than calling one torch function: an RMSNorm
written as pow/mean/rsqrt, a SwiGLU MLP (gate, up and down projections around silu * mul), a
rotary embedding (rotate_half with cos/sin tables). A module is taken for one of them only if it
has the operator's parameters AND computes the operator's formula on a probe input — names are
never trusted, so a look-alike module is left alone.
"""
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .sites import Call, rowwise

# How close the module's output must be to the formula's on the probe, per dtype
PROBE_TOLERANCE = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}


@dataclass
class ModuleSite:
    name: str  # the module's qualified name in the model
    module: nn.Module
    op: str
    convert: Callable  # (module's forward args, kwargs) -> Call or None


def _close(got, expected):
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
        return False
    error = (got.float() - expected.float()).norm() / expected.float().norm().clamp_min(1e-30)
    return bool(error <= PROBE_TOLERANCE.get(expected.dtype, 1e-4))


def _probe(module, *args):
    try:
        with torch.no_grad():
            return type(module).forward(module, *args)
    except Exception:  # a module that does not take this input is simply not the pattern
        return None


def _single_tensor(args, kwargs):
    return args[0] if len(args) == 1 and not kwargs and isinstance(args[0], torch.Tensor) else None


def _rmsnorm(module):
    weight, eps = getattr(module, "weight", None), getattr(module, "eps", None)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 1 or getattr(module, "bias", None) is not None:
        return None
    eps = torch.finfo(weight.dtype).eps if eps is None else eps
    if not isinstance(eps, float):
        return None
    # an offset, so a LayerNorm (which takes the mean out) cannot pass for an RMSNorm
    x = torch.randn(4, weight.shape[0], device=weight.device).add_(3.0).to(weight.dtype)
    xf = x.float()
    expected = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
    if not _close(_probe(module, x), expected):
        return None

    def convert(args, kwargs):
        x = _single_tensor(args, kwargs)
        return None if x is None else rowwise("rmsnorm", x, (weight,), (eps,))

    return convert


def _swiglu(module):
    linears = [m for m in module.children() if isinstance(m, nn.Linear)]
    if len(linears) != 3 or any(m.bias is not None for m in linears):
        return None
    down = [m for m in linears if m.weight.shape[0] < m.weight.shape[1]]
    if len(down) != 1:
        return None
    down = down[0]
    d, f = down.weight.shape
    ups = [m for m in linears if m is not down and m.weight.shape == (f, d)]
    if len(ups) != 2:
        return None
    x = torch.randn(3, d, device=down.weight.device).to(down.weight.dtype)
    got = _probe(module, x)
    for gate, up in (ups, ups[::-1]):
        with torch.no_grad():
            expected = down(F.silu(gate(x)) * up(x))
        if _close(got, expected):
            break
    else:
        return None

    def convert(args, kwargs):
        x = _single_tensor(args, kwargs)
        if x is None or x.dtype != down.weight.dtype or x.dim() == 0 or x.shape[-1] != d:
            return None
        m = x.numel() // d
        weights = (gate.weight, up.weight, down.weight)
        return Call("fused_mlp", [(m, d), (f, d), (f, d), (d, f)], [], x.dtype,
                    lambda: [x.reshape(m, d).contiguous()] + [w.contiguous() for w in weights],
                    lambda out: out[0].reshape(x.shape))

    return convert


def _rotate_half(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def _rotary(module):
    cos, sin = getattr(module, "cos", None), getattr(module, "sin", None)
    if not all(isinstance(t, torch.Tensor) and t.dim() == 2 for t in (cos, sin)) or cos.shape != sin.shape:
        return None
    positions, half = cos.shape
    s = min(positions, 8)
    x = torch.randn(1, 2, s, 2 * half, device=cos.device).to(cos.dtype)
    if not _close(_probe(module, x), _rotate_half(x, cos[:s], sin[:s])):
        return None

    def convert(args, kwargs):
        x = _single_tensor(args, kwargs)
        if x is None or x.dim() != 4 or x.shape[-1] != 2 * half or x.shape[2] > positions:
            return None
        s = x.shape[2]
        return Call("rotary_embedding", [tuple(x.shape), (s, half), (s, half)], [], x.dtype,
                    lambda: [x.contiguous()] + [t[:s].to(x.dtype).contiguous() for t in (cos, sin)],
                    lambda out: out[0])

    return convert


DETECTORS = {"rmsnorm": _rmsnorm, "fused_mlp": _swiglu, "rotary_embedding": _rotary}


def detect(model):
    """The model's modules that compute one of our operators, outermost first."""
    sites = []
    for name, module in model.named_modules():
        for op, detector in DETECTORS.items():
            convert = detector(module)
            if convert is not None:
                sites.append(ModuleSite(name, module, op, convert))
                break
    return sites
