"""autokernel.apply on the CPU with the host backend's kernels (built by the engine): the applied
model gives eager's outputs, torch.compile(fullgraph=True) traces it with no graph break, it
trains with eager's gradients, and every call a kernel was not checked for — another shape, a
dtype, a non-contiguous input — runs PyTorch's op and says so.
"""
import logging
import os
import unittest
from unittest import mock

import torch
from torch import nn

import hf_style
from support import build, host_module, relative_error, tensors

import autokernel
from autokernel.runtime import capture, custom_ops, reference, rewrite
from autokernel.runtime.kernel_table import TABLE, Kernel, host_arch
from autokernel.runtime.ops import OPS


def problems_of(model, inputs):
    """{op: {(problem, dtype)}} of the operators found in the model."""
    captures, _ = capture.capture(model, inputs, {})
    found, _ = rewrite.find_all(captures[0].graph)
    problems = {}
    for m in rewrite.choose(found):
        problems.setdefault(m.op, set()).add((m.problem, m.dtype_name))
    return problems


class WithKernels(unittest.TestCase):
    """Host kernels registered as checked for exactly the problems of the test model."""

    @classmethod
    def setUpClass(cls):
        model, inputs = build(hf_style.LlamaStyle)
        cls.kernels = [Kernel(f"host_{op}", op, host_module(op), host_arch(), frozenset(problems))
                       for op, problems in problems_of(model, inputs).items()]

    def setUp(self):
        self.model, self.inputs = build(hf_style.LlamaStyle)
        for kernel in self.kernels:
            TABLE.add(kernel)
        TABLE.reset_counts()

    def tearDown(self):
        autokernel.restore(self.model)
        for kernel in self.kernels:
            TABLE.remove(kernel)

    def eager(self):
        with torch.no_grad():
            return tensors(self.model(*self.inputs))


class Apply(WithKernels):
    def test_outputs_match_eager_and_every_kernel_runs(self):
        expected = self.eager()
        autokernel.apply(self.model, self.inputs)
        report = autokernel.report(self.model)
        self.assertEqual(len(report.plugged()), len(report.sites))
        self.assertEqual({s.op for s in report.sites},
                         {"rmsnorm", "rotary_embedding", "flash_attention", "fused_mlp", "cross_entropy", "matmul"})
        got = self.eager()
        for e, g in zip(expected, got, strict=True):
            self.assertLess(relative_error(e, g), 1e-5)
        self.assertEqual(set(TABLE.calls), {k.name for k in self.kernels})
        self.assertEqual(dict(TABLE.fallbacks), {})

    def test_torch_compile_traces_it_whole(self):
        expected = self.eager()
        autokernel.apply(self.model, self.inputs)
        explained = torch._dynamo.explain(self.model)(*self.inputs)
        self.assertEqual((explained.graph_count, explained.graph_break_count), (1, 0))
        ops = {str(n.target) for g in explained.graphs for n in g.graph.nodes if n.op == "call_function"}
        self.assertTrue(any("autokernel.rmsnorm" in op for op in ops), ops)
        torch._dynamo.reset()
        compiled = torch.compile(self.model, backend="aot_eager", fullgraph=True)
        with torch.no_grad():
            got = tensors(compiled(*self.inputs))
        for e, g in zip(expected, got, strict=True):
            self.assertLess(relative_error(e, g), 1e-5)
        self.assertGreater(TABLE.calls["host_fused_mlp"], 0)

    def test_training_gradients_match_eager(self):
        reference_model, _ = build(hf_style.LlamaStyle)
        reference_model.train()
        self.model.train()
        autokernel.apply(self.model, self.inputs)
        for model in (reference_model, self.model):
            loss, _ = model(*self.inputs)
            loss.backward()
        self.assertGreater(TABLE.calls["host_rmsnorm"], 0)  # the kernels ran forward in training mode
        for (name, p), q in zip(reference_model.named_parameters(), self.model.parameters(), strict=True):
            self.assertLess(relative_error(p.grad, q.grad), 1e-4, name)

    def test_a_call_unlike_the_traced_one_runs_the_models_own_forward(self):
        autokernel.apply(self.model, self.inputs)
        other = self.model.make_inputs((3, 8), torch.device("cpu"), torch.Generator().manual_seed(1))
        autokernel.restore(self.model)
        with torch.no_grad():
            expected = tensors(self.model(*other))
        autokernel.apply(self.model, self.inputs)
        TABLE.reset_counts()
        with torch.no_grad():
            got = tensors(self.model(*other))
        self.assertEqual(sum(TABLE.calls.values()), 0)
        for e, g in zip(expected, got, strict=True):
            self.assertTrue(torch.equal(e, g))


class Inductor(unittest.TestCase):
    """Inductor (torch.compile's default backend) compiles through a custom op: its fake
    implementation stands in at compile time, the kernel runs at run time."""

    def test_default_mode_compiles_with_the_kernel_inside(self):
        model = nn.Sequential(hf_style.LlamaRMSNorm(32), nn.Linear(32, 8, bias=False)).eval()
        x = torch.randn(4, 32)
        with torch.no_grad():
            expected = model(x)
        (problem,) = problems_of(model, (x,))["rmsnorm"]
        kernel = Kernel("host_rmsnorm_inductor", "rmsnorm", host_module("rmsnorm"), host_arch(), frozenset({problem}))
        TABLE.add(kernel)
        try:
            autokernel.apply(model, (x,), ops=["rmsnorm"])
            torch._dynamo.reset()
            TABLE.reset_counts()
            with torch.no_grad():
                got = torch.compile(model, fullgraph=True)(x)
            self.assertLess(relative_error(expected, got), 1e-5)
            self.assertEqual(TABLE.calls["host_rmsnorm_inductor"], 1)
        finally:
            autokernel.restore(model)
            TABLE.remove(kernel)


class CompiledResidual(WithKernels):
    def test_under_compile_the_residual_stream_is_computed_once(self):
        """The norm takes the model's [batch, seq, width] activation itself (ops.py, flat_rows). Given
        a reshape of it, Inductor copied the reshape of the unrealized residual add into a buffer of
        its own and every later layer recomputed the add from the embedding on."""
        import re

        from torch._inductor.utils import run_and_get_code

        expected = self.eager()
        autokernel.apply(self.model, self.inputs, ops=["rmsnorm"])
        torch._dynamo.reset()
        TABLE.reset_counts()
        with torch.no_grad():
            got, (code, *_) = run_and_get_code(torch.compile(self.model, fullgraph=True), *self.inputs)
        self.assertLess(relative_error(expected[0], tensors(got)[0]), 1e-5)
        self.assertGreater(sum(TABLE.calls.values()), 2)
        # Kernels Inductor generated that gather from the embedding: the first norm's input and the
        # first residual add. Before, the input of every later norm too.
        gathers = set(re.findall(r"(cpp_fused\w*embedding\w*)\(", code))
        self.assertGreater(len(gathers), 0, code)
        self.assertLessEqual(len(gathers), 2, gathers)


class Environment(unittest.TestCase):
    """Kernels built with another CUDA or PyTorch are refused with the reason (manifest.py)."""

    def test_mismatches_are_named(self):
        from unittest import mock

        from autokernel.runtime import manifest

        this = torch.__version__
        self.assertIsNone(manifest.environment_mismatch({"backend": "host", "torch": this}))
        self.assertIn("built for PyTorch 1.13", manifest.environment_mismatch({"backend": "host", "torch": "1.13.1"}))
        self.assertIn("kernel ABI 99", manifest.environment_mismatch({"abi_version": 99}))
        with mock.patch("torch.cuda.is_available", return_value=True), mock.patch("torch.version.cuda", "12.8"):
            self.assertIn("built with CUDA 13.0, this PyTorch uses CUDA 12.8",
                          manifest.environment_mismatch({"backend": "cuda", "cuda": "13.0", "torch": this}))
            self.assertIsNone(manifest.environment_mismatch({"backend": "cuda", "cuda": "12.4", "torch": this}))


class Fallbacks(WithKernels):
    def rmsnorm_problem(self):
        return next(iter(next(k for k in self.kernels if k.op == "rmsnorm").problems))

    def test_a_problem_no_kernel_was_checked_for_runs_pytorch(self):
        x, w = torch.randn(3, 40), torch.randn(40)
        got = custom_ops.op("rmsnorm")(x, w, 1e-6)
        self.assertTrue(torch.equal(got, reference.rmsnorm(x, w, 1e-6)[0]))
        self.assertEqual(sum(TABLE.calls.values()), 0)
        (reason,) = [r for op, r in TABLE.fallbacks if op == "rmsnorm"]
        self.assertIn("no kernel checked for 3x40 fp32", reason)

    def test_non_contiguous_and_unchecked_dtypes_run_pytorch_and_warn(self):
        problem, _ = self.rmsnorm_problem()
        rows, width = map(int, problem.split("x"))
        x = torch.randn(width, rows).t()  # the checked shape, but transposed in memory
        w = torch.randn(width)
        with self.assertLogs("autokernel", logging.WARNING) as logged:
            got = custom_ops.op("rmsnorm")(x, w, 1e-6)
            mixed = custom_ops.op("rmsnorm")(x.contiguous(), w.half(), 1e-6)
        self.assertLess(relative_error(reference.rmsnorm(x, w, 1e-6)[0], got), 1e-6)
        self.assertLess(relative_error(reference.rmsnorm(x, w.half(), 1e-6)[0], mixed), 1e-3)
        self.assertEqual(sum(TABLE.calls.values()), 0)
        text = "\n".join(logged.output)
        self.assertIn("non-contiguous", text)
        self.assertIn("different dtypes", text)
        with torch.no_grad():  # in the checked layout and dtype, the kernel runs
            custom_ops.op("rmsnorm")(x.contiguous(), w, 1e-6)
        self.assertEqual(TABLE.calls["host_rmsnorm"], 1)

    def test_a_half_call_of_a_float_kernel_runs_pytorch(self):
        problem, _ = self.rmsnorm_problem()
        rows, width = map(int, problem.split("x"))
        x, w = torch.randn(rows, width).half(), torch.randn(width).half()
        custom_ops.op("rmsnorm")(x, w, 1e-6)
        self.assertEqual(sum(TABLE.calls.values()), 0)
        self.assertTrue(any(f"{problem} fp16" in r for _, r in TABLE.fallbacks))


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 4, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))


class PairedTiming(WithKernels):
    """verify times ours and PyTorch alone call by call, switching the applied model between the
    two; a switch that does not take would compare ours with ours, and is an error instead."""

    def bench(self):
        from types import SimpleNamespace

        from autokernel.decide import Bench
        from autokernel.verify import Settings

        loaded = SimpleNamespace(model=self.model, inputs=self.inputs, device=torch.device("cpu"))
        return Bench(loaded, Settings(warmup=1, iterations=2, budget_s=0), progress=lambda line: None)

    def test_pytorch_alone_runs_none_of_our_kernels(self):
        names = [k.name for k in self.kernels]
        m = self.bench().measure("eager", names)
        self.assertEqual(m.note, "")
        self.assertEqual(len(m.readings), len(m.paired_readings))
        self.assertGreater(sum(m.calls.values()), 0)  # ours ran in the applied calls
        self.assertNotIn("forward", self.model.__dict__)  # and the model is left as it was

    def test_a_switch_that_does_not_take_is_an_error(self):
        import contextlib

        @contextlib.contextmanager
        def stuck(model):
            yield lambda applied=True: None

        with mock.patch("autokernel.runtime.apply.aside", stuck):
            m = self.bench().measure("eager", [k.name for k in self.kernels])
        self.assertIsNone(m.us)
        self.assertIn("PyTorch alone ran our kernels", m.note)


class BadInput(unittest.TestCase):
    def test_a_model_without_our_operators_is_left_unchanged(self):
        model, x = Plain(), torch.randn(2, 4, 9)
        with self.assertLogs("autokernel", logging.WARNING) as logged:
            autokernel.apply(model, (x,))
        self.assertIn("no operator of ours found in Plain", logged.output[0])
        self.assertNotIn("forward", model.__dict__)
        self.assertEqual(autokernel.report(model).sites, [])

    def test_apply_without_example_inputs_is_one_line(self):
        with self.assertRaisesRegex(ValueError, "apply needs example inputs"):
            autokernel.apply(Plain())


class Defaults(nn.Module):
    """Calls a direct binding could get wrong: defaults of the aten schema the binding reads
    differently (a cross entropy's mean), keywords, and ops whose torch.* name is a Python wrapper
    with another signature (einsum, and broadcast_tensors inside mse_loss)."""

    def forward(self, logits, targets, x):
        flat = logits.reshape(-1, logits.size(-1))
        return (nn.functional.cross_entropy(flat, targets.reshape(-1)),
                nn.functional.nll_loss(flat.log_softmax(-1), targets.reshape(-1)),
                nn.functional.mse_loss(x, x.flip(0)), x.sum(-1, keepdim=True), x.softmax(-1),
                torch.div(x, 3, rounding_mode="floor"), torch.einsum("ij,kj->ik", x, x))


class Recorded(torch.utils._python_dispatch.TorchDispatchMode):
    """The names of the ops that reach the dispatcher."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


class EagerCalls(WithKernels):
    def test_inference_runs_the_kernels_without_python(self):
        expected = self.eager()
        autokernel.apply(self.model, self.inputs)
        self.eager()  # the first call of each layout is Python's (it tells the native kernels which kernel)
        before = TABLE.calls_in_python()
        with Recorded() as recorded:
            got = self.eager()
        if TABLE.native is not None:  # C++ kernels behind the dispatcher: no call reaches Python
            self.assertIn("autokernel.rmsnorm.default", recorded.names)
            self.assertFalse([n for n in recorded.names if "_python" in n], recorded.names)
            self.assertEqual(TABLE.calls_in_python(), before)
        else:  # Python kernels: eager inference runs the table without the custom op's dispatch
            self.assertFalse([n for n in recorded.names if n.startswith("autokernel")], recorded.names)
        self.assertEqual(set(TABLE.calls), {k.name for k in self.kernels})
        for e, g in zip(expected, got, strict=True):
            self.assertLess(relative_error(e, g), 1e-5)
        # autograd still sees every op: a forward that needs gradients takes the custom op (with the
        # native kernels, its Python twin, which holds the backward)
        TABLE.reset_counts()
        with Recorded() as recorded:
            self.model(*self.inputs)
        twin = "autokernel._rmsnorm_python.default" if TABLE.native is not None else "autokernel.rmsnorm.default"
        self.assertIn(twin, recorded.names)
        self.assertEqual(set(TABLE.calls), {k.name for k in self.kernels})

    def test_native_kernels_are_built_unless_asked_not_to(self):
        custom_ops.define()
        wanted = os.environ.get("AUTOKERNEL_NATIVE", "1") != "0"
        self.assertEqual(TABLE.native is not None, wanted)

    def test_a_jit_trace_records_the_custom_op(self):
        x, w = torch.randn(4, 8), torch.randn(8)
        traced = torch.jit.trace(lambda x, w: custom_ops.direct("rmsnorm")(x, w, 1e-6), (x, w))
        self.assertIn("autokernel::rmsnorm", str(traced.graph))
        torch.testing.assert_close(traced(x, w), reference.REFERENCES["rmsnorm"](x, w, 1e-6)[0])

    def test_no_adapter_that_changes_nothing_is_emitted(self):
        autokernel.apply(self.model, self.inputs)
        graph = self.model.forward.captures[0].graph.graph
        ours = {n for n in graph.nodes if hasattr(n.target, "custom_op")}
        self.assertTrue(ours)

        def identity(node):
            x = node.args[0].meta.get("val")
            if node.target is torch.movedim:
                return node.args[1] % x.dim() == node.args[2] % x.dim()
            if node.target is torch.reshape:
                return tuple(x.shape) == tuple(node.args[1])
            return x.is_contiguous()

        adapters = [n for n in graph.nodes if n.op == "call_function"
                    and n.target in (torch.reshape, torch.movedim, torch.Tensor.contiguous)
                    and (n.args[0] in ours or any(user in ours for user in n.users))]
        self.assertTrue(adapters)  # the rotary's layout and the norms' rows are still adapted
        for node in adapters:
            self.assertFalse(identity(node), f"{node.format_node()} changes nothing")


class FastCalls(unittest.TestCase):
    def test_direct_bindings_give_the_traced_ops_results(self):
        inputs = (torch.randn(2, 8, 32), torch.randint(0, 32, (2, 8)), torch.randn(4, 16))
        graph = capture.trace(Defaults(), inputs, {}).graph
        fast = rewrite.fast_calls(rewrite.copy_graph(graph)[0])
        targets = [n.target for n in fast.graph.nodes if n.op == "call_function"]
        self.assertIn(torch._C._nn.cross_entropy_loss, targets)
        for expected, got in zip(Defaults()(*inputs), fast(*inputs), strict=True):
            self.assertEqual(got.shape, expected.shape)
            torch.testing.assert_close(got, expected)


    def test_ops_whose_binding_code_cannot_name_or_call_stay_as_traced(self):
        # Hugging Face's masks trace to both: torch.__and__ is no name FX's code can write, and
        # Tensor.to takes no layout argument.
        aten = torch.ops.aten

        class Masks(nn.Module):
            def forward(self, a, b):
                return aten.__and__.Tensor(a, b), aten.to.dtype_layout(a > 0, dtype=torch.float64,
                                                                       layout=torch.strided, device=a.device)

        inputs = (torch.tensor([1, 2, 3]), torch.tensor([3, 2, 1]))
        fast = rewrite.fast_calls(rewrite.copy_graph(capture.trace(Masks(), inputs, {}).graph)[0])
        targets = [n.target for n in fast.graph.nodes if n.op == "call_function"]
        self.assertIn(aten.__and__.Tensor, targets)
        self.assertIn(aten.to.dtype_layout, targets)
        for expected, got in zip(Masks()(*inputs), fast(*inputs), strict=True):
            torch.testing.assert_close(got, expected)


def counting_flattens():
    """Counts pytree flattening by a spec (export's wrapper's first step; nested specs recurse)."""
    return mock.patch.object(torch.fx._pytree, "tree_flatten_spec", wraps=torch.fx._pytree.tree_flatten_spec)


class DirectCalls(unittest.TestCase):
    """The rewritten graph runs without export's pytree wrapper (whose specs torch.compile would
    guard on every call): a call of plain tensors passes them as they are, with one output or
    several; a call with keywords is flattened by the traced call's spec."""

    class TwoOutputs(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm, self.proj = hf_style.LlamaRMSNorm(32), nn.Linear(32, 8, bias=False)

        def forward(self, x):
            y = self.proj(self.norm(x))
            return y, y.sum()

    class Keywords(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = hf_style.LlamaRMSNorm(32)

        def forward(self, x, *, scale):
            return self.norm(x) * scale

    def applied(self, model, x):
        with torch.no_grad():
            expected = model(x)
        autokernel.apply(model, (x,), kernels=[], keep_traced=True)
        return expected

    def test_one_tensor_in_and_out_skips_the_pytree_wrapper(self):
        model = nn.Sequential(hf_style.LlamaRMSNorm(32), nn.Linear(32, 8, bias=False)).eval()
        x = torch.randn(4, 32)
        expected = self.applied(model, x)
        with counting_flattens() as flatten, torch.no_grad():
            got = model(x)
        self.assertEqual(flatten.call_count, 0)
        self.assertTrue(torch.equal(got, expected))
        torch._dynamo.reset()
        with torch.no_grad():
            compiled = torch.compile(model, fullgraph=True)(x)
        self.assertLess(relative_error(expected, compiled), 1e-5)

    def test_several_outputs_come_back_in_the_models_structure(self):
        model = self.TwoOutputs().eval()
        x = torch.randn(4, 32)
        expected = self.applied(model, x)
        with counting_flattens() as flatten, torch.no_grad():
            got = model(x)
        self.assertEqual(flatten.call_count, 0)
        self.assertIsInstance(got, tuple)
        for e, g in zip(expected, got, strict=True):
            self.assertTrue(torch.equal(e, g))

    def test_a_call_with_keywords_is_flattened_by_the_traced_spec(self):
        model = self.Keywords().eval()
        x, scale = torch.randn(4, 32), torch.randn(32)
        with torch.no_grad():
            expected = model(x, scale=scale)
        autokernel.apply(model, (x,), {"scale": scale}, kernels=[], keep_traced=True)
        with counting_flattens() as flatten, torch.no_grad():
            got = model(x, scale=scale)
        self.assertGreater(flatten.call_count, 0)  # the traced graph ran, not the model's own forward
        self.assertTrue(torch.equal(got, expected))


class CustomOps(unittest.TestCase):
    def test_fake_implementations_and_autograd_registrations(self):
        samples = {
            "matmul": (torch.randn(5, 3), torch.randn(3, 4)),
            "softmax": (torch.randn(4, 6),),
            "layernorm": (torch.randn(4, 6), torch.randn(6), torch.randn(6), 1e-5),
            "rmsnorm": (torch.randn(4, 6), torch.randn(6), 1e-6),
            "flash_attention": (torch.randn(1, 4, 5, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), 0.3, 1.0),
            "fused_mlp": (torch.randn(3, 4), torch.randn(6, 4), torch.randn(6, 4), torch.randn(4, 6)),
            "cross_entropy": (torch.randn(4, 7), torch.tensor([0, 6, 2, 3])),
            "rotary_embedding": (torch.randn(1, 2, 5, 8), torch.randn(5, 4), torch.randn(5, 4)),
            "reduce": (torch.randn(4, 6),),
        }
        self.assertEqual(set(samples), set(OPS))
        for op, args in samples.items():
            with self.subTest(op):
                args = tuple(a.requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                             for a in args)
                results = torch.library.opcheck(custom_ops.op(op), args)
                self.assertTrue(all(r == "SUCCESS" for r in results.values()), results)
                outputs = custom_ops.op(op)(*args)
                first = outputs[0] if isinstance(outputs, tuple) else outputs
                # A weighted sum: the gradient of softmax's plain sum is zero, and two roundings of
                # zero are not comparable by relative error.
                weights = torch.randn(first.shape, generator=torch.Generator().manual_seed(5))
                grads = torch.autograd.grad((first * weights).sum(), [a for a in args if isinstance(a, torch.Tensor)
                                                                      and a.requires_grad])
                expected = reference.REFERENCES[op](*args)[0]
                expected_grads = torch.autograd.grad((expected * weights).sum(),
                                                     [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad])
                for g, e in zip(grads, expected_grads, strict=True):
                    self.assertLess(relative_error(e, g), 1e-5)

    def test_a_norm_takes_leading_dimensions_as_rows(self):
        """flat_rows: a contiguous [2, 4, 6] input is the kernel's 8 rows (its output [8, 6]), its
        gradient comes back in the input's shape; a non-contiguous one runs as it is."""
        x = torch.randn(2, 4, 6, requires_grad=True)
        weight = torch.randn(6, requires_grad=True)
        y = custom_ops.op("rmsnorm")(x, weight, 1e-6)
        self.assertEqual(tuple(y.shape), (8, 6))
        expected = reference.REFERENCES["rmsnorm"](x.reshape(8, 6), weight, 1e-6)[0]
        self.assertLess(relative_error(expected, y), 1e-6)
        (gx,) = torch.autograd.grad((y * y).sum(), [x])
        self.assertEqual(gx.shape, x.shape)
        (ex,) = torch.autograd.grad((expected * expected).sum(), [x])
        self.assertLess(relative_error(ex, gx), 1e-5)
        strided = torch.randn(4, 2, 6).transpose(0, 1)
        self.assertEqual(tuple(custom_ops.op("rmsnorm")(strided, weight.detach(), 1e-6).shape), (2, 4, 6))
        results = torch.library.opcheck(custom_ops.op("rmsnorm"), (x, weight, 1e-6))
        self.assertTrue(all(r == "SUCCESS" for r in results.values()), results)


if __name__ == "__main__":
    unittest.main()
