"""Operators a model reaches through one aten op: a 2-D product (linear, matmul, mm, addmm with a
2-D right-hand side: the ABI's matmul is unbatched; an einsum that contracts a tensor's last dim
with a matrix), a softmax over the last dim (also with a
float32 dtype cast back, as attention code writes it, and spelled out as exp / sum), and a sum
over the last dim.
"""
import math

import torch

from . import reference
from .graph import CASTS, calls, dtype, is_check, shape
from .match import Match, agrees, probe

aten = torch.ops.aten
FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def _last_dim(node, dim):
    return dim in (-1, len(shape(node)) - 1)


def _product(node, a, b, bias, label, transposed=False):
    """a[..., K] @ b[K, N] (+ bias[N]) as the ABI's matmul on a viewed as [M, K]; with
    `transposed`, b is held as [N, K] (a Linear's weight) and the kernel's B is its transposed
    view (problem param b_nk): no copy of the weight on each call."""
    if shape(a) is None or shape(b) is None or len(shape(b)) != 2 or len(shape(a)) < 2:
        return None
    k, n = shape(b)[::-1] if transposed else shape(b)
    if dtype(a) not in FLOATS or dtype(b) != dtype(a) or shape(a)[-1] != k:
        return None
    if bias is not None and (shape(bias) != (n,) or dtype(bias) != dtype(a)):
        return None
    m = math.prod(shape(a)) // k
    if m == 0:
        return None

    def emit(e):
        b_kn = e(aten.t.default, e.contiguous(b)) if transposed else e.contiguous(b)
        (c,) = e.op("matmul", [e.rows(a, m, k), b_kn])
        y = e.reshape(c, shape(a)[:-1] + (n,))
        return y if bias is None else e(aten.add.Tensor, y, bias)

    return Match("matmul", label, node, {node}, [(m, k), (k, n)], [], dtype(a), emit,
                 layout=frozenset({"b_nk"}) if transposed else frozenset())


def _matmul(node, info):
    if calls(node, aten.linear.default):
        bias = node.args[2] if len(node.args) > 2 else None
        return _product(node, node.args[0], node.args[1], bias, "linear", transposed=True)
    if calls(node, aten.matmul.default, aten.mm.default):
        return _product(node, node.args[0], node.args[1], None, node.target._opname)
    if calls(node, aten.addmm.default) and node.kwargs.get("beta", 1) == 1 and node.kwargs.get("alpha", 1) == 1:
        return _product(node, node.args[1], node.args[2], node.args[0], "addmm")
    return None


def _einsum(node, info):
    """einsum("...k,kn->...n", a, b) and einsum("...k,nk->...n", a, b) under any letters: a's last
    dim contracted with a matrix, a's other dims kept in order, the matrix's other dim last."""
    equation, operands = node.args[0], node.args[1]
    if not isinstance(equation, str) or len(operands) != 2:
        return None
    inputs, arrow, output = equation.replace(" ", "").partition("->")
    left, _, right = inputs.partition(",")
    if not arrow or "." in equation or len(right) != 2 or not left or len(set(left)) != len(left):
        return None
    contracted = left[-1]
    if contracted not in right or right[0] == right[1] or set(left[:-1]) & set(right):
        return None
    kept = right.replace(contracted, "")
    if output != left[:-1] + kept:
        return None
    return _product(node, operands[0], operands[1], None, "einsum", transposed=right[1] == contracted)


def _rowwise(op, node, x, output, region, label, out_shape):
    n = shape(x)[-1]
    rows = math.prod(shape(x)) // n

    def emit(e):
        (y,) = e.op(op, [e.rows(x, rows, n)])
        return e.reshape(y, out_shape)

    return Match(op, label, output, region, [(rows, n)], [], dtype(x), emit)


def _softmax(node, info):
    x, dim = node.args[0], node.args[1]
    if shape(x) is None or dtype(x) not in FLOATS or not shape(x) or not _last_dim(x, dim):
        return None
    if dtype(node) == dtype(x):
        return _rowwise("softmax", node, x, node, {node}, "softmax", shape(x))
    # softmax(x, dtype=float32).to(x.dtype): the cast back is part of the operator
    users = [u for u in node.users if not is_check(u)]
    if len(users) == 1 and calls(users[0], *CASTS) and dtype(users[0]) == dtype(x):
        return _rowwise("softmax", node, x, users[0], {node, users[0]}, "softmax in float32", shape(x))
    return None


def _spelled_softmax(exp, info):
    """exp(x - max) / exp(x - max).sum(-1, keepdim=True)."""
    shifted = exp.args[0]
    x = shifted.args[0] if calls(shifted, aten.sub.Tensor) else shifted
    if shape(x) is None or dtype(x) not in FLOATS or shape(x) != shape(exp):
        return None
    for output in (u for u in exp.users if calls(u, aten.div.Tensor) and shape(u) == shape(x)):
        region = info.region([x], output)
        x_probe = probe(x)
        if region is not None and agrees(info, region, [x], output, [x_probe], reference.softmax(x_probe)[0]):
            return _rowwise("softmax", exp, x, output, region, "softmax written out", shape(x))
    return None


def _sum(node, info):
    x, dims = node.args[0], node.args[1] if len(node.args) > 1 else None
    keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
    if shape(x) is None or dtype(x) not in FLOATS or not shape(x) or node.kwargs.get("dtype") is not None:
        return None
    if dims is None or len(dims) != 1 or not _last_dim(x, dims[0]) or dtype(node) != dtype(x):
        return None
    out_shape = shape(x)[:-1] + ((1,) if keepdim else ())
    return _rowwise("reduce", node, x, node, {node}, "sum over the last dim", out_shape)


def find(info):
    matches = []
    for node in info.graph.nodes:
        if calls(node, aten.linear.default, aten.matmul.default, aten.mm.default, aten.addmm.default):
            found = _matmul(node, info)
        elif calls(node, aten.einsum.default):
            found = _einsum(node, info)
        elif calls(node, aten.softmax.int, aten._softmax.default):
            found = _softmax(node, info)
        elif calls(node, aten.exp.default):
            found = _spelled_softmax(node, info)
        elif calls(node, aten.sum.dim_IntList):
            found = _sum(node, info)
        else:
            continue
        if found is not None:
            matches.append(found)
    return matches
