"""The nine operators as the bridge sees them: for each, the kernel's inputs, outputs and scalars in
ABI order (the C++ op's signature, src/ops/<op>.cpp), the problem dimensions read off the input
shapes, and the outputs a call allocates. One table; tests/python/test_bridge.py checks it against
the engine's own signatures (`autokernel ops --signature`), so the two cannot drift apart.
"""
import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch


@dataclass(frozen=True)
class OpSpec:
    name: str
    inputs: tuple
    outputs: tuple
    scalars: tuple
    # problem dimensions from the input shapes (ABI order), e.g. matmul (M, N, K)
    dims: Callable[[list], tuple]
    # output shapes from the dimensions
    output_shapes: Callable[[tuple], list]
    # problem parameters from the input shapes and scalars (only what differs from the op's default)
    params: Callable[[list, list], dict] = lambda shapes, scalars: {}
    # output dtypes; None: the dtype of the first input
    output_dtypes: Optional[tuple] = None
    # Layouts a kernel also takes, by the problem parameter that names each: (axis, inputs, outputs)
    # with those inputs given, and those outputs made, as views of contiguous buffers whose axes
    # `axis` and `axis` + 1 are swapped (matmul's B as a Linear's [N, K] weight: b_nk; attention's
    # and rotary's [B, H, S, D] as a model's [B, S, H, D] projections: bshd).
    layouts: dict = field(default_factory=dict)
    # The first input may come with more leading dimensions than the kernel's [rows, width]: a
    # contiguous one is taken as its rows (a view, the same memory) and the first output is
    # [rows, width]. An applied graph then passes a model's [batch, seq, width] activation itself,
    # not a reshape of it: under torch.compile, Inductor copied such a reshape of an unrealized
    # residual add into a buffer of its own and left the add to be recomputed, from the
    # embedding on, by every later layer (hf-llama's default mode: +1.7 ms with rmsnorm plugged).
    flat_rows: bool = False
    # The shape of the scratch every call hands the kernel (the signature's workspace, in the
    # first input's dtype; ak_call::workspace), from the dimensions; None: the op gives none.
    workspace: Optional[Callable[[tuple], tuple]] = None

    def as_rows(self, tensors):
        """`tensors` with the first as the kernel's rows, where flat_rows allows it."""
        x = tensors[0] if tensors else None
        if not self.flat_rows or x is None or x.dim() <= 2 or not x.is_contiguous():
            return list(tensors)
        return [x.view(-1, x.shape[-1])] + list(tensors[1:])

    def layout(self, tensors):
        """The layout parameters whose inputs all come as their swapped views."""
        return frozenset(name for name, (axis, inputs, _) in self.layouts.items()
                         if swapped([tensors[i] for i in inputs], axis))

    def swapped_inputs(self, layout):
        """The inputs (ABI indices) the layout parameters `layout` take as swapped views."""
        return frozenset(i for name in layout for i in self.layouts[name][1])

    def problem(self, shapes, scalars, layout=frozenset()):
        """The engine's problem string, e.g. '4096x4096x4096' or '4x32x4096x128:causal=1,kv_heads=8'
        ('...:b_nk=1' for matmul's B given transposed)."""
        text = "x".join(str(int(d)) for d in self.dims(shapes))
        params = dict(self.params(shapes, scalars))
        params.update({name: 1.0 for name in layout})
        if params:
            text += ":" + ",".join(f"{name}={value:g}" for name, value in sorted(params.items()))
        return text

    def allocate(self, inputs):
        """Empty outputs for a call on these inputs (same device; dtype per the op), each in the
        layout the inputs' layout gives it."""
        dims = self.dims([tuple(t.shape) for t in inputs])
        dtypes = self.output_dtypes or (inputs[0].dtype,) * len(self.outputs)
        axes = {i: self.layouts[name][0] for name in self.layout(inputs) for i in self.layouts[name][2]}
        return [
            _empty(shape, dtype, inputs[0].device, axes.get(i))
            for i, (shape, dtype) in enumerate(zip(self.output_shapes(dims), dtypes))
        ]

    def workspace_bytes(self, inputs):
        """The bytes of the workspace a call on these inputs gets (first input's dtype); 0: none."""
        if self.workspace is None:
            return 0
        return math.prod(self.workspace(self.dims([tuple(t.shape) for t in inputs]))) * inputs[0].element_size()

    def schema(self, name=None):
        """The torch.library schema of autokernel::<name> (or of another op of the same signature)."""
        args = [f"Tensor {n}" for n in self.inputs] + [f"float {n}" for n in self.scalars]
        returns = "Tensor" if len(self.outputs) == 1 else "(" + ", ".join(["Tensor"] * len(self.outputs)) + ")"
        return f"{name or self.name}({', '.join(args)}) -> {returns}"


def swapped(tensors, axis):
    """Whether every tensor is the view, with axes `axis` and `axis` + 1 exchanged, of a contiguous
    buffer, and one at least is not contiguous itself. A tensor that is both (one head, one
    position) goes either way; tensors that are all contiguous are taken as such."""
    return (all(t.dim() > axis + 1 and t.transpose(axis, axis + 1).is_contiguous() for t in tensors)
            and not all(t.is_contiguous() for t in tensors))


def _empty(shape, dtype, device, axis=None):
    """An empty tensor of `shape`, contiguous, or with `axis` and `axis` + 1 swapped in memory."""
    if axis is None:
        return torch.empty(shape, dtype=dtype, device=device)
    order = list(shape)
    order[axis], order[axis + 1] = order[axis + 1], order[axis]
    return torch.empty(order, dtype=dtype, device=device).transpose(axis, axis + 1)


def _rows(shapes):
    return tuple(shapes[0])


def _attention_params(shapes, scalars):
    params = {"causal": scalars[1]}
    if shapes[1][1] != shapes[0][1]:
        params["kv_heads"] = shapes[1][1]
    return params


OPS = {
    spec.name: spec
    for spec in [
        OpSpec("matmul", ("A", "B"), ("C",), (),
               dims=lambda s: (s[0][0], s[1][1], s[0][1]),
               output_shapes=lambda d: [(d[0], d[1])], layouts={"b_nk": (0, (1,), ())}),
        OpSpec("softmax", ("x",), ("y",), (), dims=_rows, output_shapes=lambda d: [d], flat_rows=True),
        OpSpec("layernorm", ("x", "weight", "bias"), ("y",), ("eps",), dims=_rows, output_shapes=lambda d: [d], flat_rows=True),
        OpSpec("rmsnorm", ("x", "weight"), ("y",), ("eps",), dims=_rows, output_shapes=lambda d: [d], flat_rows=True),
        OpSpec("flash_attention", ("q", "k", "v"), ("o",), ("scale", "causal"),
               dims=_rows, output_shapes=lambda d: [d], params=_attention_params,
               layouts={"bshd": (1, (0, 1, 2), (0,))}),
        OpSpec("fused_mlp", ("x", "w_gate", "w_up", "w_down"), ("y",), (),
               dims=lambda s: (s[0][0], s[0][1], s[1][0]),
               output_shapes=lambda d: [(d[0], d[1])], workspace=lambda d: (d[0], d[2])),
        OpSpec("cross_entropy", ("logits", "targets"), ("loss", "mean_loss"), (),
               dims=_rows, output_shapes=lambda d: [(d[0],), (1,)],
               output_dtypes=(torch.float32, torch.float32)),
        OpSpec("rotary_embedding", ("x", "cos", "sin"), ("y",), (), dims=_rows, output_shapes=lambda d: [d],
               layouts={"bshd": (1, (0,), (0,))}),
        OpSpec("reduce", ("x",), ("y",), (), dims=_rows, output_shapes=lambda d: [(d[0],)]),
    ]
}
