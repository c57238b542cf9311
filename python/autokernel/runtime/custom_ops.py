"""The nine operators as torch.library custom ops, <namespace>::<op> (autokernel::rmsnorm...),
defined once per process from the op table (ops.py) with:

- an implementation that runs the kernel checked for the call's problem, dtype and architecture
  (kernel_table.py), or PyTorch's own op for any other call;
- a fake implementation (output shapes and dtypes only), so torch.compile and torch.export trace
  through a call without running it: no graph break;
- a backward in PyTorch ops (backward.py), so an applied model trains.

An applied model's graph calls them through `direct(name)`: in eager inference that runs the
kernel table straight away, without the dispatcher's trip through Python (a custom op implemented
in Python costs three to four times an aten op's call, which on a launch-bound forward pass ate
what fusing saved); under torch.compile, export or autograd it is the custom op itself.
"""
import torch

from . import NAMESPACE, native
from .backward import BACKWARDS
from .capture import PLAIN_TENSORS
from .kernel_table import TABLE
from .ops import OPS
from .reference import REFERENCES

_library = None


def _single_or_tuple(outputs):
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _kernel_or_reference(spec, count, reference, args):
    args = spec.as_rows(args[:count]) + list(args[count:])
    outputs = TABLE.run(spec, args[:count], args[count:])
    if outputs is None:
        outputs = reference(*args)
        if spec.layout(args[:count]):  # in the layout the fake implementation promised
            made = spec.allocate(args[:count])
            for target, output in zip(made, outputs):
                target.copy_(output)
            outputs = made
    return _single_or_tuple(outputs)


def _implementation(spec):
    count, reference = len(spec.inputs), REFERENCES[spec.name]

    def run(*args):
        return _kernel_or_reference(spec, count, reference, args)

    return run


def _fake(spec):
    count = len(spec.inputs)

    def shapes_only(*args):
        return _single_or_tuple(spec.allocate(spec.as_rows(args[:count])))

    return shapes_only


def _setup_context(spec):
    count = len(spec.inputs)

    def setup(ctx, inputs, output):
        outputs = list(output) if isinstance(output, tuple) else [output]
        ctx.scalars = list(inputs[count:])
        ctx.counts = (count, len(outputs))
        ctx.first_shape = inputs[0].shape  # its gradient's, where the kernel took it as rows
        ctx.save_for_backward(*spec.as_rows(inputs[:count]), *outputs)

    return setup


def _backward(spec):
    formula = BACKWARDS[spec.name]

    def backward(ctx, *grads):
        saved = ctx.saved_tensors
        count, _ = ctx.counts
        tensors, outputs = list(saved[:count]), list(saved[count:])
        input_grads = list(formula(tensors, ctx.scalars, outputs, list(grads)))
        if input_grads[0] is not None:
            input_grads[0] = input_grads[0].reshape(ctx.first_shape)
        # No gradient for an input that does not want one (targets, a frozen weight).
        needs = ctx.needs_input_grad
        input_grads = [g if needs[i] else None for i, g in enumerate(input_grads)]
        return tuple(input_grads) + (None,) * len(ctx.scalars)

    return backward


def _tags(spec):
    """An op that takes views (OpSpec.layouts) makes its outputs' layout from its inputs' (the fake
    implementation as the kernel): Inductor must hand it its inputs in the strides it traced, or
    the outputs' layout would differ from the one the graph was compiled for."""
    exact = getattr(torch._C.Tag, "needs_exact_strides", None)
    return (exact,) if spec.layouts and exact is not None else ()


def _define_in_python(library, spec, name):
    """<namespace>::<name> with spec's schema, implemented in Python (with its backward)."""
    qualified = f"{NAMESPACE}::{name}"
    library.define(spec.schema(name), tags=_tags(spec))
    for key in ("CPU", "CUDA"):
        library.impl(name, _implementation(spec), key)
    torch.library.register_fake(qualified, _fake(spec), lib=library)
    torch.library.register_autograd(qualified, _backward(spec), setup_context=_setup_context(spec), lib=library)


def twin_name(name):
    return f"_{name}_python"


def define():
    """Defines <namespace>::<op> for the nine operators, once per process."""
    global _library
    if _library is not None:
        return
    library = torch.library.Library(NAMESPACE, "DEF")
    compiled = native.load()
    for spec in OPS.values():
        if compiled is None:
            _define_in_python(library, spec, spec.name)
            continue
        _define_in_python(library, spec, twin_name(spec.name))
        library.define(spec.schema(), tags=_tags(spec))
        torch.library.register_fake(f"{NAMESPACE}::{spec.name}", _fake(spec), lib=library)
        compiled.install(spec.name, twin_name(spec.name), len(spec.inputs), len(spec.scalars))
    TABLE.attach_native(compiled)
    _library = library


def _native_direct(custom):
    raw = custom._op  # the dispatcher's entry, without OpOverload's Python frame

    def call(*args):
        if torch.compiler.is_compiling():  # torch.compile traces the OpOverload
            return custom(*args)
        return raw(*args)

    return call


def _direct(spec, custom):
    if TABLE.native is not None:
        return _native_direct(custom)
    count, reference = len(spec.inputs), REFERENCES[spec.name]

    def call(*args):
        # A tracer's tensors (fake, functional, proxies) and anything autograd must see take the
        # custom op; torch.compile reads is_compiling() as a constant and traces only that branch.
        if torch.compiler.is_compiling() or torch.jit.is_tracing():  # a trace must record the op
            return custom(*args)
        tensors = args[:count]
        if any(type(t) not in PLAIN_TENSORS for t in tensors):
            return custom(*args)
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            return custom(*args)
        return _kernel_or_reference(spec, count, reference, args)

    return call


_direct_calls = {}


def direct(name):
    """What an applied graph calls for operator `name`: the same results as op(name), at the least
    cost per call that eager inference allows (see the module's docstring)."""
    call = _direct_calls.get(name)
    if call is None:
        call = _direct(OPS[name], op(name))
        call.__name__ = call.__qualname__ = f"autokernel_{name}"
        call.custom_op = op(name)  # what tracers and meta propagation call instead
        _direct_calls[name] = call
    return call


def op(name):
    """The OpOverload of one operator, e.g. op("rmsnorm")(x, weight, 1e-6)."""
    define()
    return getattr(getattr(torch.ops, NAMESPACE), name).default
