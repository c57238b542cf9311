"""A SwiGLU MLP, down(silu(gate(x)) * up(x)), wherever the model writes it (its own module, or
inline in a block's forward), with separate gate and up projections or one fused projection
split in two, and silu written as silu or x * sigmoid(x). The ABI's fused_mlp is SwiGLU; a GeGLU
MLP (gelu instead of silu, as Gemma writes it) is recognised and reported, and its three
projections stay matmuls.
"""
import math
import operator

import torch

from . import reference
from .graph import calls, dtype, shape
from .match import Match, agrees, probe

aten = torch.ops.aten
FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def _no_bias_linear(node):
    if calls(node, aten.linear.default) and (len(node.args) < 3 or node.args[2] is None):
        return node.args[0], node.args[1]
    return None


def _projection(node):
    """(x, weight, rows of the weight) for node = linear(x, W), or a half of a fused linear split
    by chunk, split or slice along the last dim (rows = the weight rows that half reads)."""
    plain = _no_bias_linear(node)
    if plain is not None:
        x, w = plain
        return x, w, None
    if calls(node, operator.getitem) and calls(node.args[0], aten.split.Tensor, aten.chunk.default):
        split, index = node.args[0], node.args[1]
        dim = split.args[2] if len(split.args) > 2 else 0
        fused = _no_bias_linear(split.args[0])
        if fused is None or dim not in (-1, len(shape(split.args[0])) - 1):
            return None
        width = shape(node)[-1]
        return fused[0], fused[1], (index * width, (index + 1) * width)
    if calls(node, aten.slice.Tensor) and node.args[1] in (-1, len(shape(node)) - 1):
        fused = _no_bias_linear(node.args[0])
        step = node.args[4] if len(node.args) > 4 else 1
        if fused is None or step != 1:
            return None
        start, end = node.args[2], min(node.args[3], shape(node.args[0])[-1])
        return fused[0], fused[1], (start, end)
    return None


def _gate_of(activation):
    """The tensor an activation gates: silu(g), gelu(g), or the g of g * sigmoid(g)."""
    if calls(activation, aten.silu.default, aten.gelu.default):
        return activation.args[0], activation
    return None, None


def _sigmoid_gates(node):
    """For s = sigmoid(g), the product g * s (SiLU spelled out), if there is one."""
    g = node.args[0]
    for user in node.users:
        if calls(user, aten.mul.Tensor) and set(user.args) == {g, node}:
            return g, user
    return None, None


def _mlp(gate, activation, info, notes):
    for product in activation.users:
        if not calls(product, aten.mul.Tensor) or activation not in product.args:
            continue
        up = product.args[1] if product.args[0] is activation else product.args[0]
        gate_proj, up_proj = _projection(gate), _projection(up)
        downs = [u for u in product.users if _no_bias_linear(u) and u.args[0] is product]
        if gate_proj is None or up_proj is None or len(downs) != 1 or gate_proj[0] is not up_proj[0]:
            continue
        if calls(activation, aten.gelu.default):
            notes.append(f"GeGLU MLP at {downs[0].name}: no operator of ours computes it (fused_mlp is SwiGLU)")
            return None
        return _swiglu(info, gate_proj, up_proj, downs[0])
    return None


def _swiglu(info, gate_proj, up_proj, down):
    x, w_down = gate_proj[0], down.args[1]
    if dtype(x) not in FLOATS or any(dtype(w) != dtype(x) for w in (gate_proj[1], up_proj[1], w_down)):
        return None
    d = shape(x)[-1]
    f = shape(down.args[0])[-1]
    if shape(w_down) != (d, f):
        return None
    rows = math.prod(shape(x)) // d
    region = info.region([x], down)
    if region is None:
        return None

    def weight_value(projection):
        w = info.constant(projection[1])
        return None if w is None else (w if projection[2] is None else w[projection[2][0]:projection[2][1]])

    weights = [weight_value(gate_proj), weight_value(up_proj), info.constant(w_down)]
    if any(w is None or tuple(w.shape) != s for w, s in zip(weights, [(f, d), (f, d), (d, f)])):
        return None
    x_probe = probe(x)
    expected = reference.fused_mlp(x_probe.reshape(rows, d), *weights)[0].reshape(shape(down))
    if not agrees(info, region, [x], down, [x_probe], expected):
        return None

    def emit(e):
        def weight(projection):
            w = projection[1]
            if projection[2] is not None:
                w = e(aten.slice.Tensor, w, 0, projection[2][0], projection[2][1])
            return e.contiguous(w)

        tensors = [e.rows(x, rows, d), weight(gate_proj), weight(up_proj), e.contiguous(w_down)]
        (y,) = e.op("fused_mlp", tensors)
        return e.reshape(y, shape(down))

    label = "SwiGLU MLP" + (" (fused gate and up projection)" if gate_proj[2] is not None else "")
    return Match("fused_mlp", label, down, region, [(rows, d), (f, d), (f, d), (d, f)], [], dtype(x), emit)


def find(info, notes):
    matches = []
    for node in info.graph.nodes:
        if calls(node, aten.silu.default, aten.gelu.default):
            gate, activation = _gate_of(node)
        elif calls(node, aten.sigmoid.default):
            gate, activation = _sigmoid_gates(node)
        else:
            continue
        if activation is not None:
            found = _mlp(gate, activation, info, notes)
            if found is not None:
                matches.append(found)
    return matches
