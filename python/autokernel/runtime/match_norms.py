"""RMSNorm and LayerNorm: aten.rms_norm and aten.layer_norm calls (F.rms_norm, nn.LayerNorm), and
the spelled-out forms models write — x * rsqrt(mean(x^2) + eps) * w in float and cast back (the
Llama, Qwen2 and Mistral spelling), the (1 + w) of Gemma, (x - mean) / sqrt(var + eps) * w + b.

A spelled-out norm is found from the square root of its reduction (rsqrt, sqrt, pow -0.5): its
input x is the tensor the reduction reads, its output the furthest node after the root that the
operator's formula reproduces on a probe.
"""
import math

import torch

from . import reference
from .graph import calls, dtype, shape, val
from .match import Match, agrees, probe

aten = torch.ops.aten

_ROOTS = (aten.rsqrt.default, aten.sqrt.default, aten.reciprocal.default)
_REDUCTIONS = (aten.mean.dim, aten.var.correction, aten.sum.dim_IntList)
reference_dtypes = (torch.float32, torch.float16, torch.bfloat16)
_VIEWS_AND_CASTS = (aten.to.dtype, aten._to_copy.default, aten.to.dtype_layout, aten.pow.Tensor_Scalar,
                    aten.mul.Tensor, aten.sub.Tensor, aten.square.default)


def _emit_norm(op, x, params, eps, out_dtype, n=None):
    """Replacement: x as [M, N] rows (N the last dim, or the product of the normalized trailing
    dims), the per-column parameters flat and in x's dtype, the op, x's shape."""
    n = shape(x)[-1] if n is None else n
    rows = math.prod(shape(x)) // n
    x_dtype, device = dtype(x), val(x).device

    def emit(e):
        # Over the last dimension the op takes x as it is (ops.py, flat_rows): no reshape for
        # Inductor to copy an unrealized residual add into.
        tensors = [e.contiguous(x) if n == shape(x)[-1] else e.rows(x, rows, n)]
        for param, fill in params:
            if param is None:
                param = e(aten.full.default, [n], fill, dtype=x_dtype, device=device)
            else:
                if shape(param) != (n,):
                    param = e.reshape(param, (n,))
                if dtype(param) != x_dtype:
                    param = e.cast(param, x_dtype)
            tensors.append(e.contiguous(param))
        (y,) = e.op(op, tensors, [eps])
        y = e.reshape(y, shape(x))
        return y if out_dtype == x_dtype else e.cast(y, out_dtype)

    return emit


def _single(node, info):
    """aten.rms_norm / aten.layer_norm over the last dim, or over several trailing dims (one row of
    their product, the parameters flattened alike: nn.LayerNorm((C, H, W)))."""
    x = node.args[0]
    normalized = tuple(node.args[1])
    if shape(x) is None or dtype(x) not in reference_dtypes or not 1 <= len(normalized) <= len(shape(x)):
        return None
    n = math.prod(normalized)
    if tuple(shape(x)[-len(normalized):]) != normalized or math.prod(shape(x)) == 0:
        return None
    rows = math.prod(shape(x)) // n
    if node.target == aten.rms_norm.default:
        weight = node.args[2] if len(node.args) > 2 else node.kwargs.get("weight")
        eps = node.args[3] if len(node.args) > 3 else node.kwargs.get("eps")
        eps = torch.finfo(dtype(x)).eps if eps is None else eps
        params = [(weight, 1.0)]
        op, shapes = "rmsnorm", [(rows, n), (n,)]
    else:
        weight, bias = (node.args[i] if len(node.args) > i else None for i in (2, 3))
        eps = node.args[4] if len(node.args) > 4 else 1e-5
        params = [(weight, 1.0), (bias, 0.0)]
        op, shapes = "layernorm", [(rows, n), (n,), (n,)]
    if any(p is not None and shape(p) != normalized for p, _ in params):
        return None
    return Match(op, f"aten.{node.target._opname}", node, {node}, shapes, [float(eps)], dtype(x),
                 _emit_norm(op, x, params, float(eps), dtype(node), n))


def _reduction_above(root):
    """The last-dim reduction under a square root: rsqrt(mean(x^2) + eps) and its kin."""
    node = root.args[0]
    for _ in range(3):
        if calls(node, *_REDUCTIONS):
            dims = node.args[1] if len(node.args) > 1 else None
            width = shape(node.args[0])
            if width and dims is not None and list(dims) in ([-1], [len(width) - 1]):
                return node
            return None
        if not calls(node, aten.add.Tensor, aten.add.Scalar, aten.div.Tensor, aten.mul.Tensor):
            return None
        node = node.args[0]
    return None


def _input_candidates(reduction):
    """Tensors the reduction reads, from the furthest back: x, x.float(), x^2..."""
    found, node = [], reduction.args[0]
    for _ in range(5):
        if not hasattr(node, "args") or shape(node) != shape(reduction.args[0]):
            break
        found.append(node)
        if not calls(node, *_VIEWS_AND_CASTS):
            break
        node = node.args[0]
    return found[::-1]


def _output_candidates(info, root, width_shape, limit=8):
    """Nodes a few steps after the root with the input's shape, the furthest first."""
    frontier, seen = [root], set()
    for _ in range(6):
        frontier = [u for n in frontier for u in n.users if u.op == "call_function"]
        seen.update(n for n in frontier if shape(n) == width_shape)
    return sorted(seen, key=info.order.get, reverse=True)[:limit]


def _epsilon(region, externals, info):
    for node in sorted(region, key=info.order.get):
        if calls(node, aten.add.Tensor, aten.add.Scalar):
            for arg in node.args[1:]:
                if isinstance(arg, float) and 0 < arg < 0.1:
                    return arg
    for node in externals:
        value = info.constant(node)
        if isinstance(value, torch.Tensor) and value.dim() == 0 and 0 < float(value) < 0.1:
            return float(value)
    return 0.0


def _spelled(root, info):
    reduction = _reduction_above(root)
    if reduction is None:
        return None
    for x in _input_candidates(reduction):
        if dtype(x) not in reference_dtypes:
            continue
        n = shape(x)[-1]
        rows = math.prod(shape(x)) // n
        for output in _output_candidates(info, root, shape(x)):
            region = info.region([x], output)
            if region is None or root not in region:
                continue
            found = _check(info, region, x, output, rows, n)
            if found is not None:
                return found
    return None


def _check(info, region, x, output, rows, n):
    externals = info.externals(region, [x])
    params = [e for e in externals if shape(e) == (n,)]
    eps = _epsilon(region, externals, info)
    x_probe = probe(x, offset=3.0)  # off zero mean: a LayerNorm cannot pass for an RMSNorm
    values = {p: info.constant(p) for p in params}
    if any(v is None for v in values.values()) or len(params) > 2:
        return None
    ones = torch.ones(n, device=x_probe.device)

    def value(param, fill):
        return values[param].float() if param is not None else ones * fill

    xf = x_probe.float()
    candidates = []
    if len(params) <= 1:
        weight = params[0] if params else None
        expected = reference.rmsnorm(xf, value(weight, 1.0), eps)[0]
        candidates.append(("rmsnorm", [(weight, 1.0)], expected))
    orders = [params + [None] * (2 - len(params))]
    if len(params) == 2:
        orders.append(params[::-1])
    for weight, bias in orders:
        expected = reference.layernorm(xf, value(weight, 1.0), value(bias, 0.0), eps)[0]
        candidates.append(("layernorm", [(weight, 1.0), (bias, 0.0)], expected))
    for op, op_params, expected in candidates:
        if agrees(info, region, [x], output, [x_probe], expected.to(dtype(output))):
            shapes = [(rows, n)] + [(n,)] * len(op_params)
            return Match(op, f"{op} written out", output, region, shapes, [eps], dtype(x),
                         _emit_norm(op, x, op_params, eps, dtype(output)))
    return None


def find(info):
    matches = []
    for node in info.graph.nodes:
        if calls(node, aten.rms_norm.default, aten.layer_norm.default):
            found = _single(node, info)
        elif calls(node, *_ROOTS) or (calls(node, aten.pow.Tensor_Scalar) and node.args[1] == -0.5):
            found = _spelled(node, info)
        else:
            continue
        if found is not None:
            matches.append(found)
    return matches
