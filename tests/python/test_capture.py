"""Tracing a model that does not trace whole: capture falls back to its submodules, the ones a
container (nn.ModuleList) holds among them, and apply plugs what those graphs hold, with eager's
outputs.
"""
import unittest

import torch
from torch import nn
from support import host_module, relative_error

import autokernel
from autokernel.runtime import capture, rewrite
from autokernel.runtime.kernel_table import TABLE, Kernel, host_arch


class Block(nn.Module):
    """An RMSNorm computed in float, then a projection, with the residual."""

    def __init__(self, width):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(width) + 0.5)
        self.proj = nn.Linear(width, width, bias=False)

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return x + self.proj((self.weight * h).to(x.dtype))


class Untraceable(nn.Module):
    """Blocks in a ModuleList (never called itself), then a branch on the data: export refuses the
    whole forward."""

    def __init__(self, width=32, depth=2):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        if x.sum() > 0:
            x = x * 2
        return x


class PartByPart(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.model = Untraceable().eval()
        self.x = torch.randn(4, 8, 32)
        self.kernels = []

    def tearDown(self):
        autokernel.restore(self.model)
        for kernel in self.kernels:
            TABLE.remove(kernel)

    def test_the_blocks_of_a_module_list_are_traced_each(self):
        captures, notes = capture.capture(self.model, (self.x,), {})
        self.assertEqual([c.path for c in captures], ["blocks.0", "blocks.1"])
        self.assertTrue(notes[0].startswith("not traced as a whole: Untraceable"), notes)
        for c in captures:
            found, _ = rewrite.find_all(c.graph)
            self.assertEqual(sorted(m.op for m in rewrite.choose(found)), ["matmul", "rmsnorm"], c.path)

    def test_apply_plugs_each_block_with_eagers_outputs(self):
        with torch.no_grad():
            expected = self.model(self.x)
        captures, _ = capture.capture(self.model, (self.x,), {})
        problems = {}
        for c in captures:
            found, _ = rewrite.find_all(c.graph)
            for m in rewrite.choose(found):
                problems.setdefault(m.op, set()).add((m.problem, m.dtype_name))
        self.kernels = [Kernel(f"host_{op}", op, host_module(op), host_arch(), frozenset(p))
                        for op, p in problems.items()]
        for kernel in self.kernels:
            TABLE.add(kernel)
        autokernel.apply(self.model, (self.x,))
        TABLE.reset_counts()
        with torch.no_grad():
            got = self.model(self.x)
        self.assertLess(relative_error(expected, got), 1e-5)
        self.assertEqual(dict(TABLE.calls), {"host_rmsnorm": 2, "host_matmul": 2})


if __name__ == "__main__":
    unittest.main()
