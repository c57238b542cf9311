"""Attention through scaled_dot_product_attention, with and without grouped-query attention:
SDPA's own enable_gqa, or key/value heads repeated beforehand (repeat_kv's expand + reshape,
repeat_interleave) — then the kernel reads the shared heads in place and the copies go.

A mask is taken only when it does not depend on the model's inputs (a padding mask would change
from call to call) and is the causal triangle (causal) or allows everything (not causal).
"""
import math

import torch

from .graph import calls, dtype, shape
from .match import Match, close, probe, projection_views, run_region

aten = torch.ops.aten
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
_MOVES = (aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.expand.default,
          aten.unsqueeze.default, aten.clone.default, aten.contiguous.default, aten.slice.Tensor,
          aten.repeat_interleave.self_int, aten.alias.default)
_SDPA_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
_SDPA_DEFAULTS = {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None, "enable_gqa": False}


def _arguments(node):
    values = dict(_SDPA_DEFAULTS)
    values.update(zip(_SDPA_ARGS, node.args))
    values.update(node.kwargs)
    return values


def _mask_causality(info, mask, s):
    """1.0 for a causal triangle, 0.0 for a mask that allows everything, None for anything else."""
    if info.depends_on_inputs(mask):
        return None
    value = info.constant(mask)
    if not isinstance(value, torch.Tensor) or value.dim() < 2 or tuple(value.shape[-2:]) != (s, s):
        return None
    allowed = value if value.dtype == torch.bool else value == 0
    if value.dtype != torch.bool and not bool(((value == 0) | (value < -1e4)).all()):
        return None  # an additive bias, not a mask
    allowed = allowed.reshape(-1, s, s)
    causal = torch.ones(s, s, dtype=torch.bool, device=allowed.device).tril()
    if bool((allowed == causal).all()):
        return 1.0
    if bool(allowed.all()):
        return 0.0
    return None


def _shared_heads(info, node, heads):
    """For a key or value whose heads are copies (repeat_kv), the tensor holding the shared ones."""
    b, h, s, d = shape(node)
    current = node
    for _ in range(6):
        if not calls(current, *_MOVES):
            return None
        current = current.args[0]
        current_shape = shape(current)
        if current_shape is None:
            return None
        if len(current_shape) == 4 and current_shape[0] == b and current_shape[2:] == (s, d):
            kv = current_shape[1]
            if kv < h and h % kv == 0:
                return current
    return None


def _repeats(info, source, repeated, heads):
    """Whether `repeated` is `source` with each head repeated heads/kv times, checked on a probe."""
    region = info.region([source], repeated)
    if region is None:
        return None
    x = probe(source)
    got = run_region(info, region, [source], repeated, [x])
    expected = x.repeat_interleave(heads // shape(source)[1], dim=1)
    return region if got is not None and close(got, expected) else None


def _sdpa(node, info):
    a = _arguments(node)
    q, k, v = a["query"], a["key"], a["value"]
    if any(shape(t) is None or len(shape(t)) != 4 or dtype(t) not in FLOATS for t in (q, k, v)):
        return None
    if len({dtype(q), dtype(k), dtype(v)}) != 1 or a["dropout_p"] or shape(k) != shape(v):
        return None
    b, h, s, d = shape(q)
    if shape(k)[0] != b or shape(k)[2:] != (s, d) or h % shape(k)[1]:
        return None
    causal = 1.0 if a["is_causal"] else 0.0
    if a["attn_mask"] is not None:
        causal = _mask_causality(info, a["attn_mask"], s)
        if causal is None:
            return None
    scale = 1.0 / math.sqrt(d) if a["scale"] is None else float(a["scale"])
    region, label = {node}, "sdpa"
    if shape(k)[1] != h and not a["enable_gqa"]:
        return None
    if shape(k)[1] != h:
        label = "sdpa with enable_gqa"
    else:
        k0, v0 = _shared_heads(info, k, h), _shared_heads(info, v, h)
        if k0 is not None and v0 is not None and shape(k0) == shape(v0):
            k_region, v_region = _repeats(info, k0, k, h), _repeats(info, v0, v, h)
            if k_region is not None and v_region is not None:
                whole = info.region([q, k0, v0], node)
                if whole is not None:
                    region, label, k, v = whole, "sdpa with repeated key/value heads", k0, v0

    # A model's [B, S, H, D] projections seen as [B, H, S, D] go to the kernel as they are (bshd),
    # its output made in the same layout, whose transpose back is then free; any other layout is
    # made contiguous.
    views = projection_views([q, k, v])

    def emit(e):
        tensors = [q, k, v] if views else [e.contiguous(q), e.contiguous(k), e.contiguous(v)]
        (o,) = e.op("flash_attention", tensors, [scale, causal])
        return o

    return Match("flash_attention", label, node, region, [shape(q), shape(k), shape(v)], [scale, causal],
                 dtype(q), emit, frozenset({"bshd"}) if views else frozenset())


def find(info):
    found = (_sdpa(n, info) for n in info.graph.nodes if calls(n, aten.scaled_dot_product_attention.default))
    return [m for m in found if m is not None]
