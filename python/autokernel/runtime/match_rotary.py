"""Rotary position embeddings in both conventions, however they are written:

- rotate-half (Llama, Qwen2, Mistral, GPT-NeoX, Gemma): channels i and i + D/2 rotate together,
  written as x * cos + rotate_half(x) * sin, or as cat(x1 * c - x2 * s, x2 * c + x1 * s);
- interleaved pairs (GPT-J, the original LLaMA): channels 2i and 2i + 1, written with complex
  numbers (view_as_complex(x) * freqs_cis) or with strided slices and stack;

and on a slice of the head (GPT-NeoX's partial rotary). A candidate region is found from where
the two halves meet (a cat or stack along the last dim, or view_as_complex). Rotary is linear in
x, so the region itself gives its tables: fed x with ones in the first channel of each pair and
zeros in the second, it returns cos and sin. The tables must depend on the position alone (one
axis of x) and not on the model's inputs; then the region must reproduce the operator on a random
probe. The tables are computed once, at apply time, and kept beside the graph.
"""
import math

import torch

from .graph import calls, dtype, shape
from .match import Match, close, probe, projection_views, run_region

aten = torch.ops.aten
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
_HALVES = (aten.slice.Tensor, aten.split.Tensor, aten.chunk.default, aten.narrow.default)
_TOWARD_X = (aten.reshape.default, aten.view.default, aten._to_copy.default, aten.to.dtype,
             aten.to.dtype_layout, aten.unflatten.int, aten._unsafe_view.default)


def _first_channels(x_shape, dtype_, device, interleaved):
    """Ones in the first channel of every rotated pair, zeros in the second."""
    x = torch.zeros(x_shape, dtype=dtype_, device=device)
    half = x_shape[-1] // 2
    if interleaved:
        x[..., 0::2] = 1
    else:
        x[..., :half] = 1
    return x


def _pairs(y, interleaved):
    half = y.shape[-1] // 2
    return (y[..., 0::2], y[..., 1::2]) if interleaved else (y[..., :half], y[..., half:])


def _position_axis(cos, sin):
    """The one axis (not the last) along which the tables vary; None if they vary along more."""
    varying = [a for a in range(cos.dim() - 1)
               if not (torch.equal(cos, cos.narrow(a, 0, 1).expand_as(cos))
                       and torch.equal(sin, sin.narrow(a, 0, 1).expand_as(sin)))]
    if len(varying) > 1:
        return None
    return varying[0] if varying else max(cos.dim() - 2, 0)


def _tables(cos, sin, axis):
    """[S, D/2] tables from ones broadcast over every axis but the positions."""
    index = [0] * (cos.dim() - 1)
    index[axis] = slice(None)
    return cos[tuple(index)], sin[tuple(index)]


def _rotate(x, cos, sin, axis, interleaved):
    """The operator with [S, D/2] tables along `axis` of x, in float32."""
    view = [1] * (x.dim() - 1) + [cos.shape[-1]]
    view[axis] = cos.shape[0]
    c, s = cos.float().reshape(view), sin.float().reshape(view)
    a, b = _pairs(x.float(), interleaved)
    first, second = a * c - b * s, b * c + a * s
    if interleaved:
        return torch.stack((first, second), -1).flatten(-2)
    return torch.cat((first, second), -1)


def _try(info, x, output, region, interleaved):
    x_shape, x_dtype = shape(x), dtype(x)
    device = probe(x).device
    got = run_region(info, region, [x], output, [_first_channels(x_shape, x_dtype, device, interleaved)])
    if got is None or tuple(got.shape) != x_shape:
        return None
    cos, sin = _pairs(got, interleaved)
    axis = _position_axis(cos, sin)
    if axis is None:
        return None
    cos, sin = _tables(cos, sin, axis)
    x_probe = probe(x)
    expected = _rotate(x_probe, cos, sin, axis, interleaved).to(dtype(output))
    if not close(run_region(info, region, [x], output, [x_probe]), expected):
        return None
    return axis, cos.to(x_dtype).contiguous(), sin.to(x_dtype).contiguous()


def _kernel_layout(x_shape, axis):
    """x with the positions moved next to the last axis and the rest as [B, H]."""
    moved = [d for i, d in enumerate(x_shape[:-1]) if i != axis]
    batch = moved[:-1] if len(moved) > 1 else [1]
    heads = moved[-1] if moved else 1
    return (math.prod(batch), heads, x_shape[axis], x_shape[-1])


def _emit(x, output, axis, cos, sin, interleaved):
    """(emit, the kernel's input shape, its layout parameters): a model's [B, S, H, D] projection
    seen as [B, H, S, D] goes to the kernel as it is (bshd), the output in the same layout."""
    x_shape = shape(x)
    layout = _kernel_layout(x_shape, axis)
    moved_shape = [d for i, d in enumerate(x_shape[:-1]) if i != axis] + [x_shape[axis], x_shape[-1]]
    half = x_shape[-1] // 2
    views = not interleaved and len(x_shape) == 4 and axis == 2 and projection_views([x])

    def emit(e):
        t = x
        if interleaved:  # channel pairs (2i, 2i+1) -> halves (i, i + D/2): the kernel's convention
            evens = e(aten.slice.Tensor, t, -1, 0, x_shape[-1], 2)
            odds = e(aten.slice.Tensor, t, -1, 1, x_shape[-1], 2)
            t = e(aten.cat.default, [evens, odds], -1)
        t = e.movedim(t, axis, -2)
        tables = [e.constant(cos, "autokernel_rotary_cos"), e.constant(sin, "autokernel_rotary_sin")]
        (y,) = e.op("rotary_embedding", [t if views else e.contiguous(e.reshape(t, layout))] + tables)
        y = e.movedim(e.reshape(y, moved_shape), -2, axis)
        if interleaved:
            first = e(aten.slice.Tensor, y, -1, 0, half)
            second = e(aten.slice.Tensor, y, -1, half, x_shape[-1])
            y = e(aten.flatten.using_ints, e(aten.stack.default, [first, second], -1), -2)
        return y if dtype(output) == dtype(x) else e.cast(y, dtype(output))

    return emit, layout, frozenset({"bshd"}) if views else frozenset()


def _candidates_x(anchor, width):
    """Tensors of last dim `width` whose halves or pairs meet at the anchor, nearest first."""
    found, frontier = [], list(anchor.all_input_nodes)
    for _ in range(5):
        next_frontier = []
        for node in frontier:
            if calls(node, *_HALVES, *_TOWARD_X) or calls(node, aten.view_as_complex.default):
                source = node.args[0]
                if shape(source) and shape(source)[-1] == width and source not in found:
                    found.append(source)
            next_frontier.extend(node.all_input_nodes)
        frontier = next_frontier
    return found


def _candidates_output(info, anchor, x_shape, limit=6):
    frontier, seen = [anchor], {anchor} if shape(anchor) == x_shape else set()
    for _ in range(4):
        frontier = [u for n in frontier for u in n.users if u.op == "call_function"]
        seen.update(n for n in frontier if shape(n) == x_shape)
    return sorted(seen, key=info.order.get, reverse=True)[:limit]


def _at(anchor, info, width, conventions, furthest_first=False):
    candidates = _candidates_x(anchor, width)
    for x in candidates[::-1] if furthest_first else candidates:
        if dtype(x) not in FLOATS or len(shape(x)) < 2 or shape(x)[-1] % 2:
            continue
        for output in _candidates_output(info, anchor, shape(x)):
            region = info.region([x], output)
            # rotate_half alone is a rotation by a constant quarter turn: not worth a kernel, and
            # not the operator (which multiplies by its tables)
            if region is None or anchor not in region or not any(calls(n, aten.mul.Tensor) for n in region):
                continue
            for interleaved in conventions:
                found = _try(info, x, output, region, interleaved)
                if found is None:
                    continue
                axis, cos, sin = found
                emit, layout, views = _emit(x, output, axis, cos, sin, interleaved)
                label = "rotary (" + ("interleaved pairs" if interleaved else "rotate-half") + ")"
                shapes = [layout, tuple(cos.shape), tuple(sin.shape)]
                return Match("rotary_embedding", label, output, region, shapes, [], dtype(x), emit, views)
    return None


def find(info):
    matches, taken = [], set()
    for node in info.graph.nodes:
        if node in taken:
            continue
        if calls(node, aten.cat.default, aten.stack.default) and len(node.args[0]) == 2:
            parts = node.args[0]
            dim = node.args[1] if len(node.args) > 1 else 0
            if any(shape(p) is None for p in parts) or shape(parts[0]) != shape(parts[1]):
                continue
            interleaved = calls(node, aten.stack.default)  # pairs stacked on a new last axis
            if dim not in (-1, len(shape(parts[0])) - (0 if interleaved else 1)):
                continue
            found = _at(node, info, 2 * shape(parts[0])[-1], (interleaved,))
        elif calls(node, aten.view_as_complex.default):
            # the cast to float before view_as_complex belongs to the operator: start before it
            found = _at(node, info, 2 * shape(node)[-1], (True,), furthest_first=True)
        else:
            continue
        if found is not None and not found.region & taken:
            matches.append(found)
            taken |= found.region
    return matches
