"""autokernel.apply on the CPU with the host backend's kernels (built by the engine): the applied
model gives eager's outputs, torch.compile(fullgraph=True) traces it with no graph break, it
trains with eager's gradients, and every call a kernel was not checked for — another shape, a
dtype, a non-contiguous input — runs PyTorch's op and says so.
"""
import logging
import unittest
from unittest import mock

import torch
from torch import nn

import hf_style
from support import ROOT, WithKernels, build, host_module, problems_of, relative_error, tensors

import autokernel
from autokernel.runtime import custom_ops, reference
from autokernel.runtime.kernel_table import TABLE, Kernel, host_arch
from autokernel.runtime.ops import OPS


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
        with torch.no_grad(), self.assertLogs("autokernel", logging.WARNING) as logged:
            got = tensors(self.model(*other))
        self.assertEqual(sum(TABLE.calls.values()), 0)
        for e, g in zip(expected, got, strict=True):
            self.assertTrue(torch.equal(e, g))
        # Said once, with what differs: the user's calls unlike the traced one get a kernel only in
        # a module that is one operator, where one was checked for the call's problem (none here).
        self.assertEqual(len(logged.output), 1, logged.output)
        self.assertIn("where the traced call had a [2, 16] int64 tensor", logged.output[0])
        # (16: the norms, MLPs and Linears whose operator and weights a registered kernel serves)
        self.assertIn("with our kernels in its 16 whole-module operators where checked", logged.output[0])
        with torch.no_grad(), self.assertNoLogs("autokernel", logging.WARNING):
            self.model(*other)
            self.model(*self.inputs)
        # Nor while torch.compile traces such a call: a warning there would break its graph.
        autokernel.apply(self.model, self.inputs)
        torch._dynamo.reset()
        with torch.no_grad(), self.assertNoLogs("autokernel", logging.WARNING):
            compiled = tensors(torch.compile(self.model, backend="aot_eager", fullgraph=True)(*other))
        torch._dynamo.reset()
        for e, g in zip(expected, compiled, strict=True):
            self.assertLess(relative_error(e, g), 1e-5)


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

    def test_projection_views_come_back_in_their_layout_from_the_kernel_and_from_pytorch(self):
        # q, k, v as the [B, H, S, D] views of [B, S, H, D] buffers (attention's bshd): the fake
        # implementation promises o in that layout, and so must whoever computes it.
        b, h, s, d = 2, 4, 16, 8
        q, k, v = (torch.randn(b, s, h, d).transpose(1, 2) for _ in range(3))
        expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        fake = OPS["flash_attention"].allocate([q.to("meta"), k.to("meta"), v.to("meta")])[0]
        self.assertEqual(fake.stride(), (s * h * d, d, h * d, 1))
        pytorch = custom_ops.op("flash_attention")(q, k, v, d ** -0.5, 1.0)  # no kernel for it
        self.assertEqual(pytorch.stride(), fake.stride())
        self.assertLess(relative_error(expected, pytorch), 1e-6)
        kernel = Kernel("host_flash_attention_views", "flash_attention", host_module("flash_attention"), host_arch(),
                        frozenset({(f"{b}x{h}x{s}x{d}:bshd=1,causal=1", "fp32")}))
        TABLE.add(kernel)
        try:
            with torch.no_grad():  # the second call from the native path's entry, where it is built
                calls = [custom_ops.op("flash_attention")(q, k, v, d ** -0.5, 1.0) for _ in range(2)]
        finally:
            TABLE.remove(kernel)
        self.assertEqual(TABLE.calls["host_flash_attention_views"], 2)
        for ours in calls:
            self.assertEqual(ours.stride(), fake.stride())
            self.assertLess(relative_error(expected, ours), 1e-5)

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

        loaded = SimpleNamespace(model=self.model, inputs=self.inputs, device=torch.device("cpu"), dtype=torch.float32)
        return Bench(loaded, Settings(warmup=1, iterations=2, budget_s=0), progress=lambda line: None)

    def test_pytorch_alone_runs_none_of_our_kernels(self):
        names = [k.name for k in self.kernels]
        m = self.bench().measure("eager", names)
        self.assertEqual(m.note, "")
        self.assertEqual(len(m.readings), len(m.paired_readings))
        self.assertGreater(sum(m.calls.values()), 0)  # ours ran in the applied calls
        self.assertNotIn("forward", self.model.__dict__)  # and the model is left as it was

    def test_a_kernel_right_only_on_its_first_calls_fails_the_first_timed_call(self):
        # In verify, a kernel runs in the user's process, where no judge watches it: every timed
        # call's output is compared with PyTorch alone's on the same inputs.
        rmsnorm = next(k for k in self.kernels if k.op == "rmsnorm")
        cheat = Kernel("idle_rmsnorm", "rmsnorm", host_module("rmsnorm", ROOT / "tests" / "kernels" /
                                                             "rmsnorm_idle_when_timed.cpp"), host_arch(),
                       rmsnorm.problems)
        TABLE.add(cheat)
        try:
            m = self.bench().measure("eager", [cheat.name])
        finally:
            TABLE.remove(cheat)
        self.assertIsNone(m.us)
        self.assertIn("timed call 1 with the kernels did not compute PyTorch alone's output on the same inputs: "
                      "output", m.note)
        # The idle kernel leaves its output as the allocator gave it: stale values, or NaN.
        self.assertRegex(m.note, "relative error|non-finite values where the expected output has none")

    def test_a_switch_that_does_not_take_is_an_error(self):
        import contextlib

        @contextlib.contextmanager
        def stuck(model):
            yield lambda applied=True: None

        with mock.patch("autokernel.runtime.apply.aside", stuck):
            m = self.bench().measure("eager", [k.name for k in self.kernels])
        self.assertIsNone(m.us)
        self.assertIn("PyTorch alone ran our kernels", m.note)

    def test_every_timed_call_computes_on_fresh_inputs_alike_on_both_sides(self):
        # The same inputs call after call would let a kernel that keeps its last answer read as fast.
        from types import SimpleNamespace

        from autokernel.decide import Bench
        from autokernel.verify import Settings

        drawn, seeds = {}, []  # id of a drawn set's first tensor -> its place in the pool; the seeds

        def draw(seed):
            inputs = tuple(self.model.make_inputs((2, 16), torch.device("cpu"), torch.Generator().manual_seed(seed)))
            drawn[id(inputs[0])] = len(drawn)
            seeds.append(seed)
            return inputs

        loaded = SimpleNamespace(model=self.model, inputs=self.inputs, device=torch.device("cpu"), draw=draw,
                                 dtype=torch.float32)
        bench = Bench(loaded, Settings(warmup=1, iterations=2, budget_s=0), progress=lambda line: None)
        seen = []
        hook = self.model.register_forward_pre_hook(lambda module, args: seen.append(drawn.get(id(args[0]), -1)))
        try:
            m = bench.measure("eager", [k.name for k in self.kernels])
        finally:
            hook.remove()
        self.assertEqual(m.note, "")
        self.assertEqual(len(drawn), 1 + 3 * 2)  # warmup and 3 rounds of 2 pairs: a set each
        # applied and PyTorch alone take each set in turn, one right after the other
        self.assertEqual([i for i in seen if i >= 0], [i for i in range(len(drawn)) for _ in ("ours", "alone")])
        self.assertEqual(seen[-1], -1)  # the outputs compared with eager's are the model's own inputs'
        self.assertLess(relative_error(tensors(m.output)[0], self.eager()[0]), 1e-5)
        # A later measurement, and another run's, draw from seeds none drew before: what a kernel
        # kept from one measurement is of no use in the next.
        bench.measure("eager", [k.name for k in self.kernels])
        Bench(loaded, Settings(warmup=1, iterations=2, budget_s=0), progress=lambda line: None).measure(
            "eager", [k.name for k in self.kernels])
        self.assertEqual(len(seeds), 3 * 7)
        self.assertEqual(len(set(seeds)), len(seeds))

    def test_on_a_gpu_the_kernels_each_call_ran_tell_the_switch(self):
        # A CUDA graph's replay calls none of our ops on the host; the GPU's kernel names decide.
        from autokernel import decide

        states = []
        runs = {True: ["nvjet_gemm", "ours_wgmma_gemm"], False: ["nvjet_gemm", "triton_silu"]}
        with mock.patch.object(decide, "_gpu_kernels_of_a_call", lambda device, forward: runs[states[-1]]):
            switch = lambda applied=True: states.append(applied)
            decide._check_switched(None, None, switch, ("k",))  # different: no error
            runs[False] = runs[True]
            with self.assertRaisesRegex(RuntimeError, "same 2 GPU kernels"):
                decide._check_switched(None, None, switch, ("k",))
            # The traced graph alone, no kernel applied: the same kernels on both sides are right
            # (in eager its measurement failed on the GPU before this was excepted).
            decide._check_switched(None, None, switch, ())
        self.assertEqual(states, [True, False, True, False])


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


if __name__ == "__main__":
    unittest.main()
