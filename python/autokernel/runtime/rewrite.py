"""Finding every operator in a traced graph, and changing the graph once:

- replace(gm, matches): each match's region becomes a call of its custom op (what apply() runs);
- scope(gm, matches): each match's region stays as the model wrote it, inside a profiler scope
  named after its operator, problem and dtype (what `autokernel profile` runs, so the profile
  attributes the model's own time, not ours).
"""
import copy

import torch
import torch.fx as fx

from . import match_attention, match_loss, match_mlp, match_norms, match_rotary, match_simple
from .graph import GraphInfo, is_check
from .match import Emitter

# Matchers in the order their matches win when regions overlap: a SwiGLU MLP holds three matmuls,
# a spelled-out cross entropy holds a log-softmax.
MATCHERS = (match_mlp, match_attention, match_rotary, match_norms, match_loss, match_simple)
PRIORITY = ("fused_mlp", "flash_attention", "rotary_embedding", "rmsnorm", "layernorm", "cross_entropy",
            "softmax", "reduce", "matmul")

SCOPE = "ak::"


def find_all(gm):
    """Every match in a graph, overlapping ones included, and notes on what was recognised but
    has no operator of ours (e.g. a GeGLU MLP)."""
    info = GraphInfo(gm)
    found, notes = [], []
    for matcher in MATCHERS:
        found.extend(matcher.find(info, notes) if matcher is match_mlp else matcher.find(info))
    return found, notes


def choose(found, wanted=None):
    """The matches to act on: those `wanted` accepts, without overlaps (the higher priority wins),
    in graph order."""
    if wanted is not None:
        found = [m for m in found if wanted(m)]
    if not found:
        return []
    order = {n: i for i, n in enumerate(found[0].output.graph.nodes)}
    chosen, taken = [], set()
    for m in sorted(found, key=lambda m: (PRIORITY.index(m.op), order[m.output])):
        if m.region & taken:
            continue
        chosen.append(m)
        taken |= m.region
    return sorted(chosen, key=lambda m: order[m.output])


def _drop_checks(graph, region):
    for node in region:
        for user in list(node.users):
            if is_check(user):
                graph.erase_node(user)


def _dead_code(graph):
    """Removes nodes nothing uses any more (a weight's transpose that fed a replaced matmul)."""
    changed = True
    while changed:
        changed = False
        for node in reversed(list(graph.nodes)):
            if node.op == "call_function" and not node.users and not node.is_impure():
                graph.erase_node(node)
                changed = True


def copy_graph(gm):
    """A graph module whose graph is a copy of gm's (parameters and buffers shared), and the map
    from gm's nodes to the copy's: matches found once in a pristine graph are applied to copies."""
    graph = fx.Graph()
    mapping = {}
    graph.output(graph.graph_copy(gm.graph, mapping))
    graph._codegen = copy.deepcopy(gm.graph._codegen)  # the call's pytree in and out
    return fx.GraphModule(gm, graph), mapping


def replace(gm, matches, mapping=None):
    """Each match's region becomes its custom op's call. The matches were found in gm's graph, or,
    with `mapping` (from copy_graph), in the graph gm's was copied from."""
    graph = gm.graph
    mapping = mapping or {}
    order = {n: i for i, n in enumerate(graph.nodes)}
    replaced = dict(mapping)  # what the emitters' nodes stand for in this graph
    for m in matches:
        output = mapping.get(m.output, m.output)
        new = m.emit(Emitter(gm, output, replaced))
        output.replace_all_uses_with(new)
        replaced[m.output] = new
        region = {mapping.get(n, n) for n in m.region}
        _drop_checks(graph, region)
        for node in sorted(region, key=order.get, reverse=True):
            graph.erase_node(node)
    _dead_code(graph)
    graph.lint()
    gm.recompile()
    return gm


# Where PyTorch binds an aten op to Python directly: calling torch.mul rather than the OpOverload
# aten.mul.Tensor skips the boxed dispatch, 1 to 6 µs a call, which on a traced graph of thousands
# of ops is milliseconds of an eager forward pass. Same schema, same arguments, same op.
_BINDINGS = (torch._C._nn, torch._C._VariableFunctions,
             getattr(torch._C, "TensorBase", None) or getattr(torch._C, "_TensorBase"))


def _named_as_itself(function):
    """Whether the name FX writes for `function` in a graph's code names that function: torch.einsum
    and torch.broadcast_tensors are Python wrappers with other signatures than the bindings of the
    same name (a traced einsum called through torch.einsum passes its operands as one list)."""
    obj = None
    for part in fx.node._get_qualified_name(function).split("."):
        obj = torch if obj is None and part == "torch" else getattr(obj, part, None)
    return obj is function


def _bound(target):
    if not isinstance(target, torch._ops.OpOverload) or target.namespace != "aten":
        return None
    name = target._schema.name.split("::", 1)[1]
    if name.startswith("__"):  # torch.__and__ and the like: FX's code cannot name them
        return None
    if target is torch.ops.aten.to.dtype_layout:  # Tensor.to takes no layout argument
        return None
    for binding in _BINDINGS:
        function = getattr(binding, name, None)
        if function is not None:
            return function if _named_as_itself(function) else None
    return None


# Schema types whose defaults are written the same in Python; an enum's (MemoryFormat, ScalarType)
# is an int in the schema and stays the binding's own.
_PLAIN_TYPES = ("int", "SymInt", "float", "bool", "str", "List[int]", "List[SymInt]", "List[float]", "List[bool]")


def _explicit_arguments(node, schema):
    """The node's arguments with the defaults of the aten schema written out. A binding's own
    defaults may differ from the schema's: torch._C._nn.cross_entropy_loss(x, t) reduces with
    'none' where aten.cross_entropy_loss.default(x, t) takes the mean."""
    args, kwargs = list(node.args), dict(node.kwargs)
    for index, argument in enumerate(schema.arguments):
        if index < len(args) or argument.name in kwargs:
            continue
        if not argument.has_default_value():
            return None  # an argument missing from the call: leave the node as it was traced
        if argument.default_value is None or str(getattr(argument, "real_type", "?")) not in _PLAIN_TYPES:
            continue
        if argument.kwarg_only or index > len(args):  # after one given by name: by name too
            kwargs[argument.name] = argument.default_value
        else:
            args.append(argument.default_value)
    return tuple(args), kwargs


def fast_calls(gm):
    """Calls aten ops through their direct Python bindings and drops export's metadata checks:
    what eager runs of a traced graph are made of (torch.compile traces either the same)."""
    for node in list(gm.graph.nodes):
        if is_check(node) or (node.op == "call_module" and node.target == "_guards_fn" and not node.users):
            gm.graph.erase_node(node)  # export's guards: Capture.accepts checks every call first
        elif node.op == "call_function" and (bound := _bound(node.target)) is not None:
            explicit = _explicit_arguments(node, node.target._schema)
            if explicit is not None:
                node.args, node.kwargs = explicit
                node.target = bound
    _dead_code(gm.graph)  # what only the checks used (tables a replaced rotary computed from)
    gm.recompile()
    return gm


def scope_name(m):
    return f"{SCOPE}{m.op}::{m.problem}::{m.dtype_name}"


def scope(gm, matches):
    graph = gm.graph
    order = {n: i for i, n in enumerate(graph.nodes)}
    enter = torch.ops.profiler._record_function_enter_new.default
    leave = torch.ops.profiler._record_function_exit._RecordFunction
    for m in matches:
        _drop_checks(graph, m.region)
        region = sorted(m.region, key=order.get)
        for node in region[:-1]:  # contiguous, so that nothing else runs inside the scope
            m.output.prepend(node)
        with graph.inserting_before(region[0]):
            handle = graph.call_function(enter, (scope_name(m), None))
        with graph.inserting_after(m.output):
            graph.call_function(leave, (handle,))
    graph.lint()
    gm.recompile()
    return gm
