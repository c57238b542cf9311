"""bench/generate_time.py --compile: generate() compiled as transformers compiles it (a static cache,
CompileConfig in generation_config), on transformers' Llama built small, host kernels registered
for its prefill's and decode steps' problems, the applied state switched with aside() between
calls as the bench does. On a CPU (transformers compiles there when told: _compile_all_devices).
"""
import importlib.util
import pathlib
import subprocess
import sys
import unittest

import torch
from support import CLI, HAVE_TRANSFORMERS

import autokernel
import test_apply_transformers as base
from autokernel.runtime.apply import aside
from autokernel.runtime.kernel_table import TABLE

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "generate_time.py"


def bench():
    spec = importlib.util.spec_from_file_location("generate_time", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Refusals(unittest.TestCase):
    def test_reduce_overhead_needs_cuda(self):
        run = subprocess.run([sys.executable, str(BENCH), "--model", "none.py:M", "--workspace", "none",
                              "--device", "cpu", "--compile", "reduce-overhead"], capture_output=True, text=True)
        self.assertEqual(run.returncode, 2)
        self.assertEqual(len(run.stderr.strip().splitlines()), 1, run.stderr)
        self.assertIn("reduce-overhead needs CUDA", run.stderr)


@unittest.skipUnless(CLI, "AK_CLI_PATH names the autokernel binary")
@unittest.skipUnless(HAVE_TRANSFORMERS, "transformers is not installed (python/requirements.txt installs it)")
class CompiledGenerate(base.AppliedModelCase):
    NEW = 4

    def setUp(self):
        super().setUp()
        from test_module_sites import kernels_for_calls, with_cache

        self.gt = bench()
        model = self.model = with_cache()
        model.generation_config.pad_token_id = 0
        self.gt.compile_static(model, "default", self.ids.shape[1] + self.NEW, torch.device("cpu"))
        self.expected = self.gt.generate(model, self.ids, self.NEW)  # PyTorch alone, compiled
        self.kernels = kernels_for_calls(model, self.ids, self.ids[:, :1])
        for kernel in self.kernels:
            TABLE.add(kernel)
        autokernel.apply(model, (self.ids,))
        torch._dynamo.reset()

    def generate(self, switch, applied):
        """generate()'s tokens in one state, and the frames Dynamo compiled during it."""
        switch(applied)
        before = self.gt.dynamo_counts()["frames"]
        tokens = self.gt.generate(self.model, self.ids, self.NEW)
        return tokens, self.gt.dynamo_counts()["frames"] - before

    def test_each_state_compiles_its_forward_and_runs_our_kernels_in_it(self):
        with aside(self.model) as switch:
            TABLE.reset_counts()
            ours, compiled_ours = self.generate(switch, True)
            calls = sum(TABLE.calls.values())
            eager, compiled_eager = self.generate(switch, False)
        self.assertTrue(torch.equal(ours, self.expected))
        self.assertTrue(torch.equal(eager, self.expected))
        self.assertGreater(calls, 0)
        self.assertGreater(compiled_ours, 0)
        self.assertGreater(compiled_eager, 0)
        # One frame each: a module site's decision is traced as a constant, not read from its memo,
        # whose new key at the second decode step recompiled the applied state's frame.
        self.assertEqual(compiled_ours, compiled_eager)
        self.assertEqual(self.gt.dynamo_counts()["breaks"], 0)

    # generate() passes a new StaticCache every call: keyed by its identity in apply's dispatcher
    # (before capture's Capture.accepts compared the layout first), each compiled generate()
    # recompiled until Dynamo's limit and then ran uncompiled.
    def test_switching_between_calls_recompiles_nothing(self):
        with aside(self.model) as switch:
            for applied in (True, False):
                self.generate(switch, applied)  # each state compiles on its first call
            later = [self.generate(switch, applied)[1] for _ in range(3) for applied in (True, False)]
        self.assertEqual(later, [0] * 6)


if __name__ == "__main__":
    unittest.main()
