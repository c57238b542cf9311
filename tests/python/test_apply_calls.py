"""How an applied model calls our kernels, on the CPU with the host backend's kernels: eager
inference straight to the kernel table (with the native kernels, no call reaches Python), the
direct bindings of the rewritten graph's PyTorch ops, the graph without export's pytree wrapper,
and the nine custom ops' fake implementations and gradients (torch.library.opcheck).
"""
import os
import unittest
from unittest import mock

import torch
from torch import nn

import hf_style
from support import ROOT, Scratch, WithKernels, engine, relative_error

import autokernel
from autokernel.runtime import capture, custom_ops, reference, rewrite
from autokernel.runtime.abi import KernelModule
from autokernel.runtime.kernel_table import TABLE, Kernel, host_arch
from autokernel.runtime.ops import OPS


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


class Workspace(unittest.TestCase):
    """fused_mlp's signature gives its kernels a workspace (h): both callers in the bridge hand one
    over, the Python twin (KernelModule.launch) on a layout's first call and the native kernels on
    the later ones. tests/kernels/mlp_workspace.cpp refuses a call without it."""

    def test_a_kernel_that_needs_the_workspace_runs_every_call(self):
        with Scratch() as scratch:
            built = engine("bench", str(ROOT / "tests" / "kernels" / "mlp_workspace.cpp"), "--op", "fused_mlp",
                           "--shape", "4x16x24", "--dtype", "fp32", "--quick", "--json", "--max-time", "0.05",
                           "--results", str(scratch / "results.tsv"))
        self.assertEqual(built.get("status"), "PASS", built)
        kernel = Kernel("host_mlp_workspace", "fused_mlp", built["module"], host_arch(), frozenset({("4x16x24", "fp32")}))
        TABLE.add(kernel)
        try:
            TABLE.reset_counts()
            generator = torch.Generator().manual_seed(0)
            x, gate, up, down = (torch.randn(*shape, generator=generator) for shape in ((4, 16), (24, 16), (24, 16), (16, 24)))
            expected = reference.REFERENCES["fused_mlp"](x, gate, up, down)[0]
            for _ in range(3):
                torch.testing.assert_close(custom_ops.direct("fused_mlp")(x, gate, up, down), expected)
            self.assertFalse(TABLE.fallbacks, TABLE.fallbacks)
            self.assertEqual(TABLE.calls.get(kernel.name), 3)
            if TABLE.native is not None:  # the first call's layout went native for the other two
                self.assertEqual(TABLE.calls_in_python().get(kernel.name), 1)
            # A module loaded for its operator hands the workspace over by itself, as the benches
            # call it, without the kernel table.
            y = torch.empty_like(expected)
            self.assertEqual(KernelModule(built["module"], "fused_mlp").launch([x, gate, up, down], [y], []), 0)
            torch.testing.assert_close(y, expected)
        finally:
            TABLE.remove(kernel)


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
