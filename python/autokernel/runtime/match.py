"""What a matcher finds, and the tools every matcher shares.

A Match is one place where a traced forward computes one of our operators: the node whose value
the operator gives (output), the nodes that replacing it removes (region), the operator's problem
and dtype there, and how to emit the custom-op call that replaces the region. A composite
spelling (an RMSNorm written as pow/mean/rsqrt, a rotary embedding, a SwiGLU MLP) is taken only
after its region, run alone on a random probe, agrees with the operator's formula: names and
shapes are never trusted, so a look-alike is left alone.
"""
import operator
import os
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.fx as fx

from .abi import DTYPE_NAMES
from .custom_ops import direct as direct_op
from .graph import val
from .ops import OPS, swapped

aten = torch.ops.aten

# How close a region's output on the probe must be to the formula's, per dtype (relative L2):
# rounding differs between spellings, a different computation differs by order 1.
PROBE_TOLERANCE = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}


@dataclass
class Match:
    op: str
    label: str  # the spelling that was found, for the report
    output: fx.Node
    region: set
    shapes: list  # the kernel's input shapes, ABI order
    scalars: list
    dtype: torch.dtype
    emit: Callable = field(repr=False)  # (Emitter) -> the node that replaces output
    layout: frozenset = frozenset()  # layout parameters of the views emit passes (OpSpec.layouts)

    @property
    def problem(self):
        return OPS[self.op].problem(self.shapes, self.scalars, self.layout)

    @property
    def dtype_name(self):
        return DTYPE_NAMES[self.dtype]

    @property
    def key(self):
        return (self.op, self.problem, self.dtype_name)


class Emitter:
    """Inserts nodes into a graph module's graph just before the node being replaced."""

    def __init__(self, gm, before, replaced=None):
        self.gm = gm
        self.graph = gm.graph
        self.before = before
        # Nodes earlier replacements took out, and what stands for them now: a match's emitter
        # still names the nodes it saw (its input may be another match's output).
        self.replaced = replaced if replaced is not None else {}

    def _current(self, node):
        while node in self.replaced:
            node = self.replaced[node]
        return node

    def __call__(self, target, *args, **kwargs):
        args, kwargs = fx.node.map_arg((args, kwargs), self._current)
        with self.graph.inserting_before(self.before):
            node = self.graph.call_function(target, tuple(args), kwargs)
        node.meta["val"] = _meta_value(target, args, kwargs)
        return node

    def op(self, name, tensors, scalars=()):
        """The custom op's call; a list of its output nodes."""
        node = self(direct_op(name), *tensors, *[float(s) for s in scalars])
        if len(OPS[name].outputs) == 1:
            return [node]
        return [self(operator.getitem, node, i) for i in range(len(OPS[name].outputs))]

    # Each adapter is left out where the traced values show it changes nothing: in eager every
    # call in the graph costs its dispatch, and a forward pass has hundreds of them. A cat's result
    # is made contiguous even where the traced one is: a transformers model with its cache on writes
    # k and v into the cache by a cat onto an empty tensor, contiguous in eager, and Inductor drops
    # that cat (v reached attention transposed, and PyTorch ran it). On a tensor already contiguous
    # the call returns it as it is.
    def contiguous(self, node):
        current = self._current(node)
        v = val(current)
        if v is not None and v.is_contiguous() and not (current.op == "call_function"
                                                         and current.target is aten.cat.default):
            return node
        return self(aten.contiguous.default, node)

    def reshape(self, node, shape):
        v = val(self._current(node))
        return node if v is not None and tuple(v.shape) == tuple(shape) else self(aten.reshape.default, node, list(shape))

    def movedim(self, node, source, destination):
        v = val(self._current(node))
        if v is not None and source % v.dim() == destination % v.dim():
            return node
        return self(aten.movedim.int, node, source, destination)

    def rows(self, node, rows, width):
        """node viewed as [rows, width], contiguous (the layout the kernels are checked on)."""
        return self.contiguous(self.reshape(node, (rows, width)))

    def cast(self, node, dtype):
        return self(aten._to_copy.default, node, dtype=dtype)

    def constant(self, tensor, name):
        """A tensor computed once when the model was applied (a rotary table), held by the graph
        module as a buffer that is not saved with the model."""
        index = 0
        while hasattr(self.gm, f"{name}_{index}"):
            index += 1
        self.gm.register_buffer(f"{name}_{index}", tensor, persistent=False)
        with self.graph.inserting_before(self.before):
            node = self.graph.get_attr(f"{name}_{index}")
        node.meta["val"] = _as_meta(tensor)
        return node


def projection_views(nodes):
    """Whether attention's or rotary's inputs go to the kernel as the [B, H, S, D] views of a
    model's [B, S, H, D] projections that they are (problem param bshd), not copied. On unless
    AUTOKERNEL_VIEWS=0 (transformers' compact Llama on an H100: 2.27x eager against 1.98x with
    copies, 1.48x against 1.30x under torch.compile; docs/benchmarks.md, 2026-12-06)."""
    values = [val(n) for n in nodes]
    return (os.environ.get("AUTOKERNEL_VIEWS", "1") != "0" and all(v is not None for v in values)
            and swapped(values, 1))


def _as_meta(value):
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(tuple(value.shape), tuple(value.stride()), dtype=value.dtype, device="meta")
    return value


def _meta_value(target, args, kwargs):
    """What an emitted node computes, as meta tensors (shapes, strides, dtypes) from its inputs'
    traced values; None where an input's is unknown or the target does not run on meta tensors."""

    def value(node):
        v = node.meta.get("val")
        if v is None:
            raise LookupError(node)
        return torch.utils._pytree.tree_map(_as_meta, v)

    try:
        args, kwargs = fx.node.map_arg((args, kwargs), value)
        with torch.no_grad():
            return getattr(target, "custom_op", target)(*args, **kwargs)
    except Exception:  # unknown: the adapters after it stay
        return None


def probe(node, offset=0.0, generator_seed=0):
    """Random values of the node's shape, dtype and device."""
    v = val(node)
    generator = torch.Generator().manual_seed(generator_seed)
    x = torch.randn(tuple(v.shape), generator=generator, dtype=torch.float32) + offset
    return x.to(device=v.device, dtype=v.dtype)


def close(got, expected):
    """Relative L2 error within the tolerance of the coarser of the two dtypes."""
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
        return False
    tolerance = max(PROBE_TOLERANCE.get(got.dtype, 1e-4), PROBE_TOLERANCE.get(expected.dtype, 1e-4))
    got, expected = got.double(), expected.double()
    if not bool(torch.isfinite(got).all()):
        return False
    error = (got - expected).norm() / expected.norm().clamp_min(1e-30)
    return bool(error <= tolerance)


def run_region(info, region, sources, output, probes):
    """The region's output on the probes (for the sources) and the constant values of its other
    inputs; None when another input depends on the model's inputs or the region fails to run."""
    externals = info.externals(region, sources)
    values = [info.constant(e) for e in externals]
    if any(v is None for v in values):
        return None
    function = info.as_function(region, list(sources) + externals, output)
    try:
        with torch.no_grad():
            return function(*probes, *values)
    except Exception:  # a region that does not run alone is not taken
        return None


def agrees(info, region, sources, output, probes, expected):
    """Whether the region, run alone on the probes, computes `expected`."""
    got = run_region(info, region, sources, output, probes)
    return got is not None and close(got, expected)
