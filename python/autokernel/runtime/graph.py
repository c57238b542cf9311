"""What the matchers need of a traced graph (a torch.fx graph of aten ops, from torch.export):
node metadata, the region of nodes between some inputs and an output, such a region as a
function of its own (to run it on a probe), and the values of the nodes that do not depend on the
model's inputs (weights, rotary tables, masks), computed on demand without running the model.
"""
import operator

import torch
import torch.fx as fx

aten = torch.ops.aten

# Nodes that only check metadata: they may read a region's inner values and are dropped with it.
_CHECKS = {aten._assert_tensor_metadata.default}
# A tensor's dtype changed, its values and shape kept: how exported graphs spell x.to(dtype).
CASTS = (aten.to.dtype, aten._to_copy.default, aten.to.dtype_layout)
if hasattr(aten, "_assert_scalar"):
    _CHECKS.add(aten._assert_scalar.default)


def val(node):
    """The example value (a fake tensor) torch.export recorded for a node, if any."""
    value = node.meta.get("val") if isinstance(node, fx.Node) else None
    return value if isinstance(value, torch.Tensor) else None


def shape(node):
    v = val(node)
    return tuple(v.shape) if v is not None else None


def dtype(node):
    v = val(node)
    return v.dtype if v is not None else None


def calls(node, *targets):
    return isinstance(node, fx.Node) and node.op == "call_function" and node.target in targets


def is_check(node):
    return node.op == "call_function" and node.target in _CHECKS and not node.users


class GraphInfo:
    """One graph's node order and its inputs; the region and value queries of the matchers."""

    def __init__(self, gm):
        self.gm = gm
        self.graph = gm.graph
        self.order = {n: i for i, n in enumerate(gm.graph.nodes)}
        self.placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self._constant = {}
        self._values = {}

    def region(self, sources, output):
        """The nodes on some path from one of `sources` to `output` (output included, sources
        not), or None when one of them is also used outside (then it cannot be replaced)."""
        sources = set(sources)
        first = min(self.order[s] for s in sources)
        depends, stack, seen = {}, [output], set()
        while stack:  # collect output's ancestors back to the first source
            node = stack.pop()
            if node in seen or node in sources:
                continue
            seen.add(node)
            stack.extend(n for n in node.all_input_nodes if self.order[n] > first or n in sources)
        for node in sorted(seen, key=self.order.get):
            depends[node] = any(n in sources or depends.get(n, False) for n in node.all_input_nodes)
        if not depends.get(output, False):
            return None
        region = {n for n, d in depends.items() if d}
        for node in region:
            if node is not output and any(u not in region and not is_check(u) for u in node.users):
                return None
        return region

    def externals(self, region, sources):
        """The region's inputs other than the sources, in graph order."""
        outside = {n for node in region for n in node.all_input_nodes if n not in region and n not in sources}
        return sorted(outside, key=self.order.get)

    def as_function(self, region, inputs, output):
        """The region as a module of its own: f(*values of inputs) -> value of output."""
        graph = fx.Graph()
        env = {node: graph.placeholder(f"input_{i}") for i, node in enumerate(inputs)}
        for node in sorted(region, key=self.order.get):
            env[node] = graph.node_copy(node, lambda n: env[n])
        graph.output(env[output])
        return fx.GraphModule(torch.nn.Module(), graph)

    def depends_on_inputs(self, node):
        """Whether the node's value changes with the model's inputs (not only weights and constants)."""
        return self.constant(node) is None

    def constant(self, node):
        """The value of a node computed from weights, buffers and constants alone; None when it
        depends on the model's inputs (or on randomness)."""
        if not isinstance(node, fx.Node):
            return node
        if node in self._constant:
            return self._constant[node]
        value = self._evaluate(node)
        self._constant[node] = value
        return value

    def _evaluate(self, node):
        if node.op == "get_attr":
            target = self.gm
            for part in node.target.split("."):
                target = getattr(target, part)
            return target
        if node.op != "call_function" or node.op == "placeholder":
            return None
        if node.target in (aten.dropout.default, aten.rand.default, aten.randn.default):
            return None
        missing = []

        def resolve(n):
            value = self.constant(n)
            if value is None:
                missing.append(n)
            return value

        args = fx.node.map_arg(node.args, resolve)
        kwargs = fx.node.map_arg(node.kwargs, resolve)
        if missing:
            return None
        try:
            with torch.no_grad():
                return node.target(*args, **kwargs)
        except Exception:  # an op that cannot run on its own here is simply not a constant
            return None


def getitem_source(node):
    """For x = getitem(split(t), i) (chunk, split, unbind), the split node and i."""
    if calls(node, operator.getitem) and isinstance(node.args[0], fx.Node):
        return node.args[0], node.args[1]
    return None, None
