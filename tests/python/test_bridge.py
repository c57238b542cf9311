"""The bridge's own pieces: its op table and ABI mirror agree with the engine (asked through the
CLI, $AK_CLI_PATH), module patterns are recognised by what they compute and not by their names,
converters refuse calls outside what an operator computes, and the profiler counts every op once.
"""
import ctypes
import json
import math
import os
import subprocess
import unittest

import torch
import torch.nn.functional as F
from torch import nn

from autokernel import abi, patterns, profile, sites
from autokernel.ops import OPS

CLI = os.environ.get("AK_CLI_PATH")

# Problems per operator: its standard one, and ones that exercise its parameters.
PROBLEMS = {
    "matmul": ["4096x4096x4096", "48x144x48"],
    "softmax": ["8192x8192", "192x24"],
    "layernorm": ["8192x8192"],
    "rmsnorm": ["8192x8192", "7x33"],
    "flash_attention": ["4x32x4096x128:causal=1", "2x8x64x32:causal=0", "2x8x64x32:causal=1,kv_heads=2"],
    "fused_mlp": ["4096x4096x11008"],
    "cross_entropy": ["8192x32768"],
    "rotary_embedding": ["4x32x4096x128", "2x4x24x12"],
    "reduce": ["16384x4096"],
}


def engine(*args):
    return json.loads(subprocess.run([CLI, *args], check=True, capture_output=True, text=True).stdout)


@unittest.skipUnless(CLI, "AK_CLI_PATH names the autokernel binary")
class AgreesWithTheEngine(unittest.TestCase):
    def test_every_operator_is_in_the_table(self):
        self.assertEqual({op["name"] for op in engine("ops", "--json")["ops"]}, set(OPS))

    def test_signatures_problems_and_outputs_match(self):
        for op, problems in PROBLEMS.items():
            for problem in problems:
                for dtype in ("fp16", "fp32"):
                    with self.subTest(op=op, problem=problem, dtype=dtype):
                        s = engine("ops", "--signature", op, "--shape", problem, "--dtype", dtype, "--json")
                        spec = OPS[op]
                        self.assertEqual(tuple(t["name"] for t in s["inputs"]), spec.inputs)
                        self.assertEqual(tuple(t["name"] for t in s["outputs"]), spec.outputs)
                        self.assertEqual(len(s["scalars"]), len(spec.scalars))
                        shapes = [tuple(t["shape"]) for t in s["inputs"]]
                        self.assertEqual(spec.problem(shapes, s["scalars"]), s["problem"])
                        inputs = [torch.empty(t["shape"], dtype=torch.int64 if t["dtype"] == "i64"
                                              else abi.TORCH_DTYPES[t["dtype"]], device="meta")
                                  for t in s["inputs"]]
                        outputs = spec.allocate(inputs)
                        self.assertEqual([list(t.shape) for t in outputs], [t["shape"] for t in s["outputs"]])
                        self.assertEqual([abi.DTYPE_NAMES[t.dtype] for t in outputs],
                                         [t["dtype"] for t in s["outputs"]])

    def test_abi_layout(self):
        layout = engine("ops", "--json")["abi"]
        self.assertEqual(abi.abi_version(), layout["version"])
        self.assertEqual(ctypes.sizeof(abi.AkCall), layout["sizeof_call"])
        self.assertEqual(ctypes.sizeof(abi.AkTensor), layout["sizeof_tensor"])


class LookAlike(nn.Module):
    """An RMSNorm by its parameters, but it computes something else."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(16))
        self.eps = 1e-6

    def forward(self, x):
        return x / (x.abs().mean(-1, keepdim=True) + self.eps) * self.weight


class GeluMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(16, 40, bias=False), nn.Linear(16, 40, bias=False)
        self.c = nn.Linear(40, 16, bias=False)

    def forward(self, x):
        return self.c(F.gelu(self.a(x)) * self.b(x))


class SwiGlu(GeluMlp):
    def forward(self, x):
        return self.c(self.b(x) * F.silu(self.a(x)))  # gate second: the order is found, not assumed


class WrongRotary(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cos", torch.rand(8, 4))
        self.register_buffer("sin", torch.rand(8, 4))

    def forward(self, x):
        return x * self.cos[: x.shape[2]].repeat(1, 2)


class Patterns(unittest.TestCase):
    def ops_of(self, model):
        return {site.name: site.op for site in patterns.detect(model)}

    def test_lookalikes_are_left_alone(self):
        model = nn.ModuleDict({"norm": LookAlike(), "layer_norm": nn.LayerNorm(16), "mlp": GeluMlp(),
                               "rope": WrongRotary()})
        self.assertEqual(self.ops_of(model), {})

    def test_the_real_ones_are_found(self):
        model = nn.ModuleDict({"mlp": SwiGlu()})
        self.assertEqual(self.ops_of(model), {"mlp": "fused_mlp"})
        site = patterns.detect(model)[0]
        x = torch.randn(2, 3, 16)
        call = site.convert((x,), {})
        self.assertEqual(call.problem, "6x16x40")
        # the kernel's inputs in ABI order: gate weight first, whichever child holds it
        gate, up, down = call.inputs()[1:]
        self.assertTrue(gate is model["mlp"].a.weight and up is model["mlp"].b.weight)


class Converters(unittest.TestCase):
    def test_calls_outside_an_operator_are_refused(self):
        x = torch.randn(4, 6)
        self.assertIsNone(sites.softmax_of(2)((x, 0), {}))
        self.assertIsNone(sites.softmax_of(2)((x, -1), {"dtype": torch.float64}))
        self.assertIsNone(sites.row_sum((x,), {"dim": -1, "keepdim": True}))
        self.assertIsNone(sites.row_sum((x,), {}))  # a full sum is not a row sum
        logits, targets = torch.randn(4, 10), torch.tensor([1, 2, 3, 4])
        self.assertIsNone(sites.cross_entropy((logits, targets), {"label_smoothing": 0.1}))
        q = torch.randn(1, 2, 8, 4)
        self.assertIsNone(sites.attention((q, q, q), {"attn_mask": torch.ones(8, 8, dtype=torch.bool)}))
        self.assertIsNone(sites.attention((q, q[:, :1], q[:, :1]), {}))  # grouped heads need enable_gqa

    def test_linear_reproduces_torch(self):
        x, w, b = torch.randn(2, 5, 8), torch.randn(3, 8), torch.randn(3)
        call = sites.linear((x, w, b), {})
        self.assertEqual(call.problem, "10x3x8")
        a, bt = call.inputs()
        self.assertTrue(torch.allclose(call.finish([a @ bt]), F.linear(x, w, b), atol=1e-6))
        self.assertIs(sites.transposed(w), bt)  # made once per weight
        with torch.no_grad():
            w.mul_(2)  # an in-place change (an optimizer step) makes a new one
        self.assertTrue(torch.equal(sites.transposed(w), 2 * bt))

    def test_every_spelling_of_a_2d_product_is_a_matmul(self):
        from autokernel.plug import intercepted

        seen = []
        a, w, bias = torch.randn(2, 3, 8), torch.randn(8, 5), torch.randn(5)
        with intercepted([], lambda call, run: seen.append(call.problem) or run()):
            a @ w, torch.matmul(a, w), a.matmul(w), torch.mm(a[0], w), torch.addmm(bias, a[0], w)
            a @ a.transpose(-1, -2)  # batched: not the ABI's matmul
        self.assertEqual(seen, ["6x5x8"] * 3 + ["3x5x8"] * 2)
        call = sites.addmm((bias, a[0], w), {})
        self.assertTrue(torch.allclose(call.finish([a[0] @ w]), torch.addmm(bias, a[0], w)))

    def test_attention_problem_names_causality_and_groups(self):
        q, kv = torch.randn(2, 8, 16, 4), torch.randn(2, 2, 16, 4)
        call = sites.attention((q, kv, kv), {"is_causal": True, "enable_gqa": True})
        self.assertEqual(call.problem, "2x8x16x4:causal=1,kv_heads=2")
        self.assertAlmostEqual(call.scalars[0], 1 / math.sqrt(4))

    def test_targets_checked_once_per_base_tensor(self):
        logits, targets = torch.randn(6, 5), torch.tensor([[1, 2, 3], [4, 0, 1]])
        first = sites.cross_entropy((logits, targets.reshape(-1)), {})
        first.inputs()  # checks, and remembers the base tensor
        self.assertIsNotNone(sites._checked_targets.get(targets, (5, 0, (6,), (1,))))
        with torch.no_grad():
            targets[0, 0] = -100  # an in-place change: checked again, and refused
        with self.assertRaises(sites.Unsupported):
            sites.cross_entropy((logits, targets.reshape(-1)), {}).inputs()

    def test_cross_entropy_with_ignored_targets_goes_back_to_torch(self):
        call = sites.cross_entropy((torch.randn(3, 5), torch.tensor([1, -100, 2])), {})
        with self.assertRaises(sites.Unsupported):
            call.inputs()


class Attribution(unittest.TestCase):
    def test_each_op_is_counted_once(self):
        x, w = torch.randn(64, 32), torch.randn(16, 32)

        def scope(call, run):
            with torch.autograd.profiler.record_function(profile._scope_name(call)):
                return run()

        from autokernel.plug import intercepted

        with intercepted([], scope), torch.profiler.profile() as prof:
            torch.softmax(F.linear(x, w), -1).sum()
        events = prof.events()
        entries = profile.attribute(events, 1, gpu=False)
        own = sum(e.self_cpu_time_total for e in events if not e.name.startswith(profile.SCOPE))
        self.assertAlmostEqual(sum(e["us"] for e in entries), own, places=3)
        ours = {(e["op"], e["problem"]) for e in entries if e["op"]}
        self.assertEqual(ours, {("matmul", "64x16x32"), ("softmax", "64x16")})


if __name__ == "__main__":
    unittest.main()
