"""Tracing a model's forward pass into a graph of aten ops (torch.export, non-strict: the model's
Python runs as it is, so any module or function structure traces). A model that does not trace
whole (data-dependent control flow, an unsupported construct) is traced part by part: each child
module with the inputs it received, recursively, and what still does not trace runs as it is.

A transformers model returns its key/value cache (a `DynamicCache`, whenever the configuration's
use_cache is on: the default) in its output, which export cannot flatten unless the cache type is a
registered pytree; transformers' own registration for export is made first, so such a model traces
whole, the cache rebuilt from the graph's outputs.

A graph is specialised to its example call: the shapes and dtypes of its tensors, its other
arguments and the module's training flag. `Capture.accepts` says whether a call is one the graph
was traced for; any other call runs the module's own forward.
"""
import contextlib
import sys
import warnings
from dataclasses import dataclass, field

import torch
from torch.utils import _pytree as pytree


# Tensors as eager code has them: a tracer's (fake, functional, proxies) are other types.
PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def _leaf_key(leaf):
    if isinstance(leaf, torch.Tensor):
        return ("tensor", tuple(leaf.shape), leaf.dtype, leaf.device)
    return ("value", leaf if isinstance(leaf, (int, float, bool, str, type(None))) else id(leaf))


def _flatten(args, kwargs):
    return pytree.tree_flatten((tuple(args), dict(kwargs)))


def _keys(leaves):
    return tuple(_leaf_key(leaf) for leaf in leaves)


def signature(args, kwargs):
    leaves, spec = _flatten(args, kwargs)
    return spec, _keys(leaves)


@dataclass
class Capture:
    path: str  # the module's qualified name in the model ("" for the whole model)
    module: torch.nn.Module
    graph: torch.fx.GraphModule
    training: bool
    spec: object = field(repr=False)
    leaves: tuple = field(repr=False)
    # Whether the traced call was tensors passed by position alone (then its leaves are those)
    positional_tensors: bool = field(init=False, repr=False)
    # How many arguments the traced call passed by position, and the names of the others
    traced_layout: tuple = field(init=False, repr=False)

    def __post_init__(self):
        args, kwargs = self.spec.unflatten(list(self.leaves))
        self.positional_tensors = (not kwargs and len(args) == len(self.leaves)
                                   and all(leaf[0] == "tensor" for leaf in self.leaves))
        self.traced_layout = (len(args), list(kwargs))

    def accepts(self, args, kwargs, training):
        if training != self.training:
            return False
        if not kwargs and self.positional_tensors:  # the common call, without pytree's cost
            return len(args) == len(self.leaves) and all(
                type(a) in PLAIN_TENSORS and (tuple(a.shape), a.dtype, a.device) == leaf[1:]
                for a, leaf in zip(args, self.leaves))
        # The layout first: a leaf that is no tensor or plain value is keyed by its identity, and
        # under torch.compile that key is a guard on the object. generate() passes a new
        # StaticCache every call, which the traced call never had: keyed before the layout
        # refused it, every compiled generate() recompiled until Dynamo's limit.
        leaves, spec = _flatten(args, kwargs)
        return spec == self.spec and _keys(leaves) == self.leaves

    def difference(self, args, kwargs, training):
        """How a call `accepts` refused differs from the traced one, in a few words."""
        mode = {True: "training", False: "eval"}
        if training != self.training:
            return f"the module in {mode[training]} mode, traced in {mode[self.training]} mode"
        spec, leaves = signature(args, kwargs)
        if spec != self.spec:
            return "other arguments than the traced call's (" + _arguments(spec) + " where it had " + \
                _arguments(self.spec) + ")"
        for i, (got, traced) in enumerate(zip(leaves, self.leaves)):
            if got != traced:
                return f"argument {i}: {_describe(got)} where the traced call had {_describe(traced)}"
        return "a call unlike the traced one"


def _arguments(spec):
    """'2 positional, attention_mask, labels' of a call's pytree spec ((args, kwargs))."""
    try:
        args, kwargs = spec.children_specs
        return ", ".join([f"{args.num_children} positional"] + [str(name) for name in kwargs.context or []])
    except (AttributeError, TypeError, ValueError):  # a pytree spec of another shape or version
        return str(spec)


def _describe(leaf):
    if leaf[0] == "tensor":
        _, shape, dtype, device = leaf
        return f"a {list(shape)} {str(dtype).removeprefix('torch.')} tensor on {device}"
    return f"the value {leaf[1]!r}"


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def trace(module, args, kwargs, path=""):
    """The module's forward on these inputs as a graph module (parameters shared, not copied)."""
    with _quiet():
        exported = torch.export.export(module, tuple(args), dict(kwargs), strict=False)
        graph = exported.module()
    spec, leaves = signature(args, kwargs)
    return Capture(path, module, graph, module.training, spec, leaves)


def _first_inputs(model, args, kwargs):
    """Every submodule's inputs at its first call in one forward pass."""
    seen, handles = {}, []

    def hook(module, module_args, module_kwargs):
        seen.setdefault(module, (module_args, module_kwargs))

    for module in model.modules():
        if module is not model:
            handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def register_transformers_caches():
    """transformers' caches as pytrees (its registration for torch.export, kept: the rewritten
    graph's outputs are rebuilt into a cache on every call). Only where the user's code has
    imported transformers."""
    if "transformers" not in sys.modules:
        return
    try:
        from transformers.integrations.executorch import register_dynamic_cache_export_support
    except ImportError:  # a transformers without it: such a model is traced part by part
        return
    register_dynamic_cache_export_support()


def capture(model, args, kwargs, progress=lambda line: None):
    """Graphs covering as much of the model as traces, and a note for each part that does not."""
    register_transformers_caches()
    try:
        return [trace(model, args, kwargs)], []
    except Exception as e:  # the whole model does not trace: try its parts
        first_failure = f"{type(model).__name__}: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:160]}"
    progress(f"the whole model does not trace ({first_failure}); tracing its submodules")
    inputs = _first_inputs(model, args, kwargs)
    captures, notes = [], [f"not traced as a whole: {first_failure}"]

    def visit(module, prefix):
        for name, child in module.named_children():
            path = f"{prefix}.{name}" if prefix else name
            if child not in inputs:  # not called itself (a ModuleList): its children may be
                visit(child, path)
                continue
            child_args, child_kwargs = inputs[child]
            try:
                captures.append(trace(child, child_args, child_kwargs, path))
            except Exception as e:
                if not any(True for _ in child.children()):
                    notes.append(f"{path} ({type(child).__name__}) runs as written: {type(e).__name__}")
                visit(child, path)

    visit(model, "")
    return captures, notes
