"""apply(model): changes a model once, before it runs or is compiled, so that every place its
forward computes one of our operators — for which a checked kernel exists — calls the custom op.

The forward is traced (capture.py), the operators are matched in the graph (rewrite.py) and
replaced by custom-op calls, and the module's forward becomes a small dispatcher: a call like the
traced one runs the rewritten graph (plain PyTorch code: eager runs it, torch.compile traces it
with fullgraph=True), any other call runs the module's own forward. Parameters are shared with
the model, so an applied model trains and its optimizer steps are seen. Within that forward, a
submodule whose forward is one of our operators as a whole (a norm, a SwiGLU MLP, a Linear) runs
our kernel where one was checked for the call's problem (module_sites.py).
"""
import collections
import contextlib
import dataclasses
import logging
import re
from dataclasses import dataclass, field

import torch
import torch.fx._pytree as fx_pytree
import torch.utils._pytree as pytree

from . import NAMESPACE, custom_ops, manifest, module_sites, rewrite
from .call_layout import CallLayout
from .capture import capture
from .kernel_table import TABLE, device_arch
from .graph import val

log = logging.getLogger(NAMESPACE)
_ATTRIBUTE = "_autokernel_applied"


@dataclass
class Site:
    path: str  # the traced module ("" for the whole model)
    op: str
    problem: str
    dtype: str
    label: str
    kernel: str  # the kernel that serves it, "" when none does (left to PyTorch)


@dataclass
class Report:
    sites: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    modules: list = field(default_factory=list)  # paths of the whole-module operators (module_sites)

    def plugged(self):
        return [s for s in self.sites if s.kernel]

    def __str__(self):
        lines = [f"{len(self.plugged())} of {len(self.sites)} operator sites run our kernels"]
        for s in self.sites:
            where = f"{s.path}: " if s.path else ""
            served = f"kernel {s.kernel}" if s.kernel else "no kernel: PyTorch"
            lines.append(f"  {where}{s.op} {s.problem} {s.dtype} ({s.label}) -> {served}")
        if self.modules:
            lines.append(f"calls unlike the traced one: {len(self.modules)} modules run our kernels where one was "
                         f"checked for the call's problem: {_grouped(self.modules)}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


def _grouped(paths):
    """'model.layers.*.mlp (32), model.norm': the paths, those that differ in layer numbers alone
    as one (a deep model has hundreds)."""
    groups = collections.Counter(re.sub(r"(?<=\.)\d+(?=\.|$)", "*", path) for path in paths)
    return ", ".join(f"{group} ({count})" if count > 1 else group for group, count in groups.items())


def _serving(m, allowed):
    value = val(m.output)
    device = value.device if value is not None else torch.device("cpu")
    kernel = TABLE.find(m.op, m.problem, m.dtype_name, device_arch(device))
    if kernel is None or (allowed is not None and kernel.name not in allowed):
        return None
    return kernel


class _Dispatch:
    """A module's forward after apply: the rewritten graph for the traced call, else the original."""

    def __init__(self, module, captures, original, operators=0):
        self.module, self.captures, self.original = module, captures, original
        self.operators = operators  # whole-module operators inside it, which serve such calls
        self.calls = [_FlatCall(c) for c in captures]
        self.layouts = [CallLayout(original, *c.traced_layout) for c in captures]
        self.warned = False

    def __call__(self, *args, **kwargs):
        training = self.module.training
        for c, call in zip(self.captures, self.calls):
            if c.accepts(args, kwargs, training):
                return call(args, kwargs)
        # the same call with its arguments by name where they were traced by position, or the reverse
        for c, call, layout in zip(self.captures, self.calls, self.layouts):
            arranged = layout.arrange(args, kwargs)
            if arranged is not None and c.accepts(*arranged, training):
                return call(*arranged)
        if not self.warned and not torch.compiler.is_compiling():
            self._warn(args, kwargs)
        return self.original(*args, **kwargs)

    def _warn(self, args, kwargs):
        """Once per module: its calls unlike the traced one run without our kernels, and why. (Not
        while torch.compile traces the call: a warning there would break its graph.)"""
        self.warned = True
        try:
            arranged = self.layouts[0].arrange(args, kwargs)
            why = self.captures[0].difference(*(arranged or (args, kwargs)), self.module.training)
        except Exception:  # describing the call must never fail the user's call
            why = "a call unlike the traced one"
        ours = (f"with our kernels in its {self.operators} whole-module operator{'s' * (self.operators > 1)} where "
                "checked for the call's problem" if self.operators else "without our kernels")
        log.warning("%s: %s was called with %s; calls like it run the module's own forward, %s (apply() traces "
                    "the model for the calls it is given)", NAMESPACE,
                    self.captures[0].path or type(self.module).__name__, why, ours)


class _FlatCall:
    """A capture's rewritten graph (apply's own copy) without export's pytree wrapper around it,
    whose specs torch.compile would guard on every call and whose flatten eager would run on every
    call: a call of plain tensors passes them as they are, another is flattened by the traced
    call's spec (`accepts` has checked it matches), and the outputs are rebuilt from theirs."""

    def __init__(self, capture):
        graph = capture.graph
        info = graph.graph._codegen.pytree_info
        self.in_spec, self.out_spec, self.one = info.in_spec, info.out_spec, info.out_spec.is_leaf()
        self.positional = capture.positional_tensors
        graph.graph._codegen = torch.fx.graph.CodeGen()
        graph.recompile()
        self.graph = graph

    def __call__(self, args, kwargs):
        flat = args if self.positional and not kwargs else fx_pytree.tree_flatten_spec((list(args), kwargs),
                                                                                      self.in_spec)
        out = self.graph(*flat)
        return out[0] if self.one else pytree.tree_unflatten(out, self.out_spec)


@dataclass
class Traced:
    """A model's forward traced once and its operators matched. apply(traced=...) rewrites copies
    of the graphs, so one tracing serves any number of kernel sets (verify tries many)."""

    captures: list
    found: list  # per capture: every match in its graph, which stays as traced
    notes: list
    sites: list = field(default_factory=list)  # the submodules whose forward is one operator


def trace(model, example_inputs, example_kwargs=None, progress=lambda line: None):
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    captures, notes = capture(model, tuple(example_inputs), dict(example_kwargs or {}), progress)
    found, sites = [], []
    for c in captures:
        matches, graph_notes = rewrite.find_all(c.graph)
        found.append(matches)
        notes.extend(f"{c.path or type(c.module).__name__}: {n}" for n in graph_notes)
        sites.extend(module_sites.find(c, matches))
    return Traced(captures, found, notes, sites)


def _rewrite(traced, ops, allowed, report, keep_traced=False):
    changed = []
    for c, found in zip(traced.captures, traced.found):
        chosen = rewrite.choose(found, lambda m: (ops is None or m.op in ops) and _serving(m, allowed))
        taken = set().union(*(m.region for m in chosen))
        # the places our kernels serve, and every other one found (PyTorch runs it), in graph order
        unserved = [m for m in rewrite.choose(found) if not m.region & taken]
        order = {n: i for i, n in enumerate(c.graph.graph.nodes)}
        served = {id(m) for m in chosen}
        for m in sorted(chosen + unserved, key=lambda m: order[m.output]):
            kernel = _serving(m, allowed).name if id(m) in served else ""
            report.sites.append(Site(c.path, m.op, m.problem, m.dtype_name, m.label, kernel))
        if not chosen and not keep_traced:
            continue
        graph, mapping = rewrite.copy_graph(c.graph)
        rewrite.replace(graph, chosen, mapping)
        changed.append(dataclasses.replace(c, graph=rewrite.fast_calls(graph)))
    return changed


def apply(model, example_inputs=(), example_kwargs=None, *, workspace=None, kernels=None, ops=None,
          traced=None, keep_traced=False, progress=lambda line: None):
    """Rewrites `model` in place to run our kernels and returns it; `autokernel.report(model)`
    says what was found and what runs where.

    example_inputs: the positional arguments of a call like the ones the model will run (a tensor
    or a tuple); the model is traced on them. workspace: a run's workspace or an export, whose
    kernels.json names the kernels (loaded unless already registered). kernels: names of the
    kernels to use (default: all registered). ops: operators to use (default: all nine). traced:
    trace(model, example_inputs) done before, for applying several kernel sets to one model.
    keep_traced: run the traced graphs even where no kernel serves (to time the tracing alone).
    """
    if traced is None and not example_inputs and not example_kwargs:
        raise ValueError("apply needs example inputs: the model is traced on a call like the ones it will run")
    custom_ops.define()
    if workspace is not None:
        manifest.load(workspace)
    restore(model)
    traced = traced or trace(model, example_inputs, example_kwargs, progress)
    report = Report(notes=list(traced.notes))
    allowed = set(kernels) if kernels is not None else None
    changed = _rewrite(traced, set(ops) if ops is not None else None, allowed, report, keep_traced)
    sites = module_sites.install(traced.sites, set(ops) if ops is not None else None, allowed)
    report.modules = [s.path or type(s.module).__name__ for s in sites]
    install(model, changed, report, sites)
    if keep_traced:
        pass  # a measurement of the traced graphs themselves: nothing to warn about
    elif not report.sites:
        log.warning("%s: no operator of ours found in %s; the model is unchanged", NAMESPACE, type(model).__name__)
    elif not changed:
        log.warning("%s: %d operator sites found in %s, none with a kernel checked for it; %s", NAMESPACE,
                    len(report.sites), type(model).__name__,
                    "the traced call runs PyTorch alone" if sites else "the model is unchanged")
    return model


def install(model, captures, report, sites=()):
    """Makes each captured module run its (rewritten) graph for the calls it was traced for; its
    other calls run its own forward, and so the whole-module operators patched inside it (`sites`,
    already installed: a captured module that is one wraps its patched forward)."""
    by_module = {}
    for c in captures:
        by_module.setdefault(c.module, []).append(c)
    patched = {s.module for s in sites}
    for module, module_captures in by_module.items():
        inside = sum(1 for m in module.modules() if m in patched)
        module.forward = _Dispatch(module, module_captures, module.forward, inside)  # this instance only
    changed = list(by_module) + [s.module for s in sites if s.module not in by_module]
    object.__setattr__(model, _ATTRIBUTE, (report, changed))


def report(model):
    """What apply() found in the model and which kernel serves each site (None if not applied)."""
    applied = getattr(model, _ATTRIBUTE, None)
    return applied[0] if applied else None


@contextlib.contextmanager
def aside(model):
    """Lets the caller switch an applied `model` between apply's changes and its own forward:
    `with aside(model) as switch: switch(applied=False) ... switch(applied=True)`. The very same
    objects go back each time, and torch.compile guards on them, so a model compiled in both
    states switches between its two compiled graphs without recompiling (verify times the two
    call by call). The model leaves the block applied."""
    applied = getattr(model, _ATTRIBUTE, None)
    forwards = {m: m.__dict__["forward"] for m in applied[1] if _changed(m)} if applied else {}

    def switch(applied_now):
        for module, dispatch in forwards.items():
            if applied_now:
                module.forward = dispatch
            elif module.__dict__.get("forward") is dispatch:
                del module.forward
        object.__setattr__(model, _ATTRIBUTE, applied if applied_now else None)

    try:
        yield lambda applied=True: switch(applied)
    finally:
        switch(True)


def restore(model):
    """Undoes apply(): every changed module runs its own forward again."""
    applied = getattr(model, _ATTRIBUTE, None)
    if not applied:
        return model
    for module in applied[1]:
        if _changed(module):
            del module.forward
    object.__setattr__(model, _ATTRIBUTE, None)
    return model


def _changed(module):
    """Whether the module's forward is apply's (a dispatcher, or a whole-module operator's, or the
    one wrapping the other): deleting the instance attribute gives it its own back."""
    return isinstance(module.__dict__.get("forward"), (_Dispatch, module_sites.Forward))
