"""Whole-module operators: where a submodule's forward is, as a whole, one of our operators (an
RMSNorm or LayerNorm module, a SwiGLU MLP, a Linear), the calls unlike the traced one reach our
kernels too.

apply() serves the call it traced; any other (model.generate()'s, with a cache, and each decode
step's, of one token) runs the model's own forward, which calls its submodules. A submodule whose
forward, as traced, is one matched operator and nothing else (its one input in, its own parameters,
the operator's value out) gets a forward of its own, an instance attribute like apply's
dispatcher: a call whose problem has a kernel checked for it on the call's device runs the custom
op, through the match's own replacement made free of the traced shape; any other call runs the
module's own forward, so that a call without a kernel computes exactly what eager does.

The trace shows one shape, and names are not trusted: a module is taken only once its own forward
and the replacement (PyTorch's reference in the kernel's place) agree on probes of the traced
shape, of one row per batch (a decode step's) and of one row. Operators written inline in a larger
forward (rotary and attention inside an attention module, a loss) have no module of their own:
PyTorch runs them on such calls.
"""
import math
import operator
import os
from dataclasses import dataclass, replace

import torch
import torch.fx as fx

from . import rewrite
from .capture import PLAIN_TENSORS
from .custom_ops import direct
from .graph import CASTS, GraphInfo, dtype, is_check, shape, val
from .kernel_table import TABLE, device_arch
from .match import close
from .ops import OPS
from .reference import REFERENCES

aten = torch.ops.aten
# What a module may do to its input or result around the operator, the value unchanged: casts
# (x.float() before an RMSNorm, .to(input_dtype) after it) and export's alias of a returned value.
_PASSING = (*CASTS, aten.alias.default, aten.clone.default, aten.contiguous.default)
# What a match's replacement does between the call's input and the op besides its reshapes (a
# Linear's bias is added to the op's result).
_ADAPTERS = (aten.contiguous.default, aten._to_copy.default, aten.add.Tensor, operator.getitem)
_MEMO_LIMIT = 256  # call layouts a patched module remembers (more are decided on each call)


@dataclass
class Site:
    """A submodule whose forward is one operator, and what a call of it needs to run the op."""

    path: str  # in the model
    module: torch.nn.Module
    op: str
    label: str
    graph: fx.GraphModule  # the module's input -> the match's replacement, for any leading shape
    width: int  # the input's last dim: the kernel's rows are its other dims
    shapes: list  # the kernel's other inputs (the module's parameters), ABI order
    scalars: list
    layout: frozenset
    dtype: torch.dtype  # the input's, as traced
    dtype_name: str  # the kernel's
    ndim: int
    device: torch.device  # the input's, as traced
    training: bool

    def __post_init__(self):
        self.arch = device_arch(self.device)  # once: reading it traces into a graph break

    def servable(self, allowed):
        """Whether a kernel registered now serves this module's operator on its weights at some
        number of rows (the problem's first dimension for every operator a module can be)."""
        problem = OPS[self.op].problem([(1, self.width)] + self.shapes, self.scalars, self.layout)
        return TABLE.serves_any_rows(self.op, problem, self.dtype_name, self.arch, allowed)

    def kernel(self, x):
        """The kernel checked for exactly this call's problem on its device's architecture, if any."""
        if (type(x) not in PLAIN_TENSORS or x.dim() != self.ndim or x.shape[-1] != self.width or x.numel() == 0
                or x.dtype != self.dtype or x.device != self.device or not x.is_contiguous()
                or self.module.training != self.training):
            return None
        rows = x.numel() // self.width
        problem = OPS[self.op].problem([(rows, self.width)] + self.shapes, self.scalars, self.layout)
        return TABLE.find(self.op, problem, self.dtype_name, self.arch)


class Forward:
    """A site's forward after apply: the custom op where a kernel was checked for the call's
    problem, else the module's own forward. Decided once per call layout (and again once the
    kernel table changes), so that in eager a call costs a dict lookup more than the one it makes;
    torch.compile traces the decision as Python on constants (no graph break) and guards on it."""

    def __init__(self, site, original, allowed):
        self.site, self.original, self.allowed = site, original, allowed
        self.memo, self.version = {}, TABLE.version

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], torch.Tensor):
            x = args[0]
            if torch.compiler.is_compiling():
                # Traced to a constant. Read through the memo, the decision was a guard on the
                # memo's keys, and the next call's new key recompiled the frame (generate()'s second
                # decode step, static cache, compiled).
                ours = self._serves(x)
            else:
                key = (x.shape, x.dtype, x.device, x.is_contiguous(), self.site.module.training)
                ours = self.memo.get(key) if self.version == TABLE.version else None
                if ours is None:
                    ours = self._decide(x, key)
            if ours:
                return self.site.graph(x)
        return self.original(*args, **kwargs)

    def _decide(self, x, key):
        if self.version != TABLE.version:
            self.memo.clear()
            self.version = TABLE.version
        ours = self._serves(x)
        if len(self.memo) < _MEMO_LIMIT:
            self.memo[key] = ours
        return ours

    def _serves(self, x):
        kernel = self.site.kernel(x)
        return kernel is not None and (self.allowed is None or kernel.name in self.allowed)


def install(sites, ops, allowed):
    """Patches each site's module (ops: the operators to use, None for all; allowed: the kernels'
    names, None for all) that a kernel registered now serves at some number of rows; the sites
    patched. A module that no kernel serves at any number of rows (an operator the run did not
    optimize, a Linear of weights no matmul kernel was checked on) keeps its own forward: a
    patched one costs about 1.3 us more per call on a CPU, on every call it serves none of."""
    patched = [s for s in sites if (ops is None or s.op in ops) and s.servable(allowed)]
    for s in patched:
        s.module.forward = Forward(s, s.module.forward, allowed)  # this instance only
    return patched


def find(capture, found):
    """The sites of one traced graph: each submodule whose every call in it is one match's whole."""
    info = GraphInfo(capture.graph)
    calls = _module_calls(capture.graph.graph)
    candidates = {}  # module call -> the matches within it, the operator that wins overlaps first
    for m in sorted(found, key=lambda m: rewrite.PRIORITY.index(m.op)):
        key = _innermost(m)
        if key in calls:
            candidates.setdefault(key, []).append(m)
    keys_of = {}
    for key, (path, _) in calls.items():
        if key in candidates:
            keys_of.setdefault(path, []).append(key)
    sites = []
    for path, keys in keys_of.items():
        module = capture.module.get_submodule(path)
        if len(keys) != sum(1 for key, (p, _) in calls.items() if p == path):
            continue  # called again in the graph, and not as an operator
        built = []
        for key in keys:  # the first candidate (by priority) that is the call's whole
            tried = (_site(capture, info, module, path, calls[key][1], m) for m in candidates[key])
            built.append(next(filter(None, tried), None))
        if all(built) and len({s.op for s in built}) == 1:  # called twice: the same operator both times
            sites.append(built[0])
    return sites


def _module_calls(graph):
    """Each module call in the graph (export's nn_module_stack key): its path and nodes."""
    calls = {}
    for node in graph.nodes:
        if node.op == "call_function" and not is_check(node):
            for key, (path, _) in node.meta.get("nn_module_stack", {}).items():
                calls.setdefault(key, (path, []))[1].append(node)
    return calls


def _innermost(m):
    """The innermost module call holding all the match's computing nodes (casts and aliases around
    them may lie outside: an RMSNorm's output passed on by its caller)."""
    stacks = [list(n.meta.get("nn_module_stack", {})) for n in m.region if n.target not in _PASSING]
    common = os.path.commonprefix(stacks) if stacks else []  # (of any sequences, element by element)
    return common[-1] if common else None


def _site(capture, info, module, path, nodes, m):
    """The site of `module` (at `path` in the traced one) whose call is `nodes`, if that call is the
    match `m` and nothing else, and its own forward computes the operator at other shapes too."""
    scope = set(nodes)
    outside = info.externals(scope, [])
    inputs = [n for n in outside if n.op != "get_attr"]
    prefix = f"{path}." if path else ""
    params = [n for n in outside if n.op == "get_attr"]
    if len(inputs) != 1 or val(inputs[0]) is None or any(not p.target.startswith(prefix) for p in params):
        return None
    x = inputs[0]
    # The module's result, and maybe its input as it was: x.to(float32) on a float32 x is x, which
    # export then gives the caller's later uses of x (a residual) from inside the module.
    outputs = [n for n in nodes if any(u not in scope and not is_check(u) for u in n.users) and not _same_as(n, x)]
    if len(outputs) != 1:
        return None
    out = outputs[0]
    passed = {out}  # the region past the module's output: casts and aliases of it alone
    for node in sorted(m.region - scope, key=info.order.get):
        if node.target not in _PASSING or node.args[0] not in passed or (shape(node), dtype(node)) != (
                shape(out), dtype(out)):
            return None
        passed.add(node)
    if m.output not in passed or not m.region & scope:
        return None
    traced = shape(x)
    if not traced or not traced[-1] or m.shapes[0] != (math.prod(traced) // traced[-1], traced[-1]):
        return None  # the kernel's first input is not the module's input as rows
    try:
        graph = _replacement(module, x, params, nodes, out, m, prefix, info)
    except Exception:  # a replacement that cannot be built alone is not taken
        graph = None
    if graph is None or not _agrees(module, graph, val(x)):
        return None
    return Site(".".join(p for p in (capture.path, path) if p), module, m.op, m.label, graph, traced[-1],
                list(m.shapes[1:]), list(m.scalars), m.layout, val(x).dtype, m.dtype_name, len(traced),
                val(x).device, capture.training)


def _same_as(node, x):
    """Whether the node is x passed on unchanged (its shape and dtype)."""
    while node is not x:
        if node.target not in _PASSING or (shape(node), dtype(node)) != (shape(x), dtype(x)):
            return False
        node = node.args[0]
    return True


def _replacement(module, x, params, nodes, out, m, prefix, info):
    """The module's call alone as a graph of its own (its parameters read from it), the match
    replaced in it as apply replaces it, and its reshapes made free of the traced leading shape;
    None where anything else is left of the module's call."""
    graph = fx.Graph()
    mapping = {x: graph.placeholder("x")}
    mapping[x].meta = dict(x.meta)
    for p in params:
        mapping[p] = graph.get_attr(p.target[len(prefix):])
        mapping[p].meta = dict(p.meta)
    for node in sorted(nodes, key=info.order.get):
        mapping[node] = graph.node_copy(node, mapping.get)
    graph.output(mapping[out])
    gm = fx.GraphModule(module, graph)
    rewrite.replace(gm, [replace(m, output=out, region=m.region & set(nodes))], mapping)
    if not _free_of_shape(gm.graph, set(mapping.values()), shape(x)):
        return None
    return rewrite.fast_calls(gm)


def _free_of_shape(graph, copied, traced):
    """Whether the replacement holds for any leading shape of the input: one op call, whose first
    input is the call's input (as rows) and whose others are the module's parameters; around it
    only the module's own casts and the replacement's adapters; its reshapes of the rows made the
    call's own (in place)."""
    ops = _direct_ops()
    x = next(n for n in graph.nodes if n.op == "placeholder")
    depends, calls = {x}, []
    for node in list(graph.nodes):
        if node.op in ("placeholder", "get_attr", "output") or is_check(node):
            continue
        if node.op != "call_function" or node.is_impure():
            return False  # a module that also updates a buffer
        if not any(a in depends for a in node.all_input_nodes):
            if node in copied and not _reads_parameters(node):
                return False  # a constant of the traced call (an arange of its length)
            continue
        depends.add(node)
        if node in copied:
            if node.target not in _PASSING or shape(node) != shape(node.args[0]):
                return False  # the module computes more than the operator
        elif node.target in ops:
            calls.append(node)
            if node.args[0] not in depends or any(a in depends for a in node.args[1:] if isinstance(a, fx.Node)):
                return False
        elif node.target is aten.reshape.default:
            if not _reshape_rows(graph, node, x, traced):
                return False
        elif node.target not in _ADAPTERS:
            return False
    return len(calls) == 1


def _reshape_rows(graph, node, x, traced):
    """A reshape to the traced input's rows, or back to its leading shape, made the call's."""
    target = tuple(node.args[1])
    if len(target) == len(traced) and target[:-1] == traced[:-1]:
        with graph.inserting_before(node):
            node.args = (node.args[0], graph.call_function(_leading_shape, (x, target[-1])))
    elif len(target) == 2 and target[1] == traced[-1] and math.prod(target) == math.prod(traced):
        node.args = (node.args[0], [-1, target[1]])
    else:
        return False
    return True


def _leading_shape(x, width):
    """x's shape with `width` last: the shape a row-wise result takes back."""
    return [*x.shape[:-1], width]


def _reads_parameters(node):
    return node.op == "get_attr" or any(_reads_parameters(n) for n in node.all_input_nodes)


def _direct_ops():
    return {direct(name): name for name in OPS}


def _reference(name):
    spec = OPS[name]

    def run(*args):
        count = len(spec.inputs)
        outputs = REFERENCES[name](*spec.as_rows(args[:count]), *args[count:])
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return run



def _agrees(module, graph, traced):
    """Whether the module's own forward and the replacement (PyTorch's reference for the op) agree
    on probes of the traced shape, of one row per batch and of one row."""
    reference, _ = rewrite.copy_graph(graph)
    ops = _direct_ops()
    for node in reference.graph.nodes:
        if node.op == "call_function" and node.target in ops:
            node.target = _reference(ops[node.target])
    reference.recompile()
    dims = tuple(traced.shape)
    shapes = {dims, dims[:-2] + (1, dims[-1]), (1,) * (len(dims) - 1) + dims[-1:]}
    for i, probe_shape in enumerate(sorted(shapes)):
        generator = torch.Generator(traced.device).manual_seed(i)  # on the device: a deep model has hundreds
        probe = (torch.randn(probe_shape, generator=generator, device=traced.device) + 0.5).to(traced.dtype)
        try:
            with torch.no_grad():
                expected, got = module.forward(probe), reference(probe)
        except Exception:  # a forward that does not run alone on the probe is not taken
            return False
        if not isinstance(expected, torch.Tensor) or got.dtype != expected.dtype or not close(got, expected):
            return False
    return True
