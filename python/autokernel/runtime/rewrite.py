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


def _bound(target):
    if not isinstance(target, torch._ops.OpOverload) or target.namespace != "aten":
        return None
    name = target._schema.name.split("::", 1)[1]
    return next((f for f in (getattr(b, name, None) for b in _BINDINGS) if f is not None), None)


def fast_calls(gm):
    """Calls aten ops through their direct Python bindings and drops export's metadata checks:
    what eager runs of a traced graph are made of (torch.compile traces either the same)."""
    for node in list(gm.graph.nodes):
        if is_check(node):
            gm.graph.erase_node(node)
        elif node.op == "call_function":
            node.target = _bound(node.target) or node.target
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
