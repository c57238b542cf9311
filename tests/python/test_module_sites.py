"""Whole-module operators (runtime/module_sites.py) on transformers' Llama, built small with random
weights: a call unlike the traced one (model.generate()'s, with a cache, one token a step) runs
the model's own forward, in which each RMSNorm module, SwiGLU MLP and Linear runs our kernel
where one was checked for the call's problem and its own forward where none was; a module that
only looks like an operator is left alone; restore() and aside() take the patches with the rest.
"""
import collections
import logging
import unittest
from unittest import mock

import torch
from torch import nn
from support import HAVE_TRANSFORMERS, host_module, relative_error, transformers_models

import autokernel
import test_apply_transformers as base
from autokernel.runtime.apply import aside
from autokernel.runtime.kernel_table import TABLE, Kernel, host_arch
from autokernel.runtime.module_sites import Forward


def with_cache():
    """transformers' Llama with its key/value cache on: generate()'s decode steps take one token."""
    config_class, model_class, settings, _ = transformers_models()["llama"]
    config = config_class(**{**settings, "use_cache": True})
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return model_class(config).eval()


def kernels_for_calls(model, *ids):
    """Host kernels checked for exactly the problems of the model's calls on each of `ids`."""
    problems = collections.defaultdict(set)
    for one in ids:
        for kernel in base.kernels_for_call(model, {"input_ids": one}):
            problems[kernel.op] |= kernel.problems
    return [Kernel(f"host_{op}", op, host_module(op), host_arch(), frozenset(p)) for op, p in problems.items()]


def patched(model):
    """The paths of the modules with a forward of their own (an instance attribute)."""
    return [path for path, module in model.named_modules() if "forward" in module.__dict__]


@unittest.skipUnless(HAVE_TRANSFORMERS, "transformers is not installed (python/requirements.txt installs it)")
class ModuleSites(base.AppliedModelCase):
    def register(self, model, *ids):
        self.kernels = kernels_for_calls(model, *ids)
        for kernel in self.kernels:
            TABLE.add(kernel)

    def generate(self, model):
        """generate()'s tokens, and each forward call's input length and the kernel calls it made."""
        steps = []

        def before(module, args, kwargs):
            steps.append([kwargs["input_ids"].shape[1], collections.Counter(TABLE.calls)])

        def after(module, args, kwargs, output):
            steps[-1][1] = TABLE.calls - steps[-1][1]

        handles = [model.register_forward_pre_hook(before, with_kwargs=True),
                   model.register_forward_hook(after, with_kwargs=True)]
        try:
            with torch.no_grad():
                tokens = model.generate(self.ids, max_new_tokens=4, do_sample=False)
        finally:
            for handle in handles:
                handle.remove()
        return tokens, steps

    def test_generate_runs_our_norms_and_mlps_on_every_decode_step_checked_for(self):
        model = self.model = with_cache()
        with torch.no_grad():
            expected = model.generate(self.ids, max_new_tokens=4, do_sample=False)
        self.register(model, self.ids, self.ids[:, :1])  # the prefill's problems and a decode step's
        autokernel.apply(model, (self.ids,))
        TABLE.reset_counts()
        tokens, steps = self.generate(model)
        self.assertTrue(torch.equal(expected, tokens), (expected, tokens))
        self.assertEqual([length for length, _ in steps], [16, 1, 1, 1])
        layers = model.config.num_hidden_layers
        for length, calls in steps:
            # Per call: every norm module, MLP, attention projection and the head; rotary and
            # attention are written inside the attention's forward: PyTorch's on such calls.
            self.assertEqual(dict(calls), {"host_rmsnorm": 2 * layers + 1, "host_fused_mlp": layers,
                                           "host_matmul": 4 * layers + 1}, length)
        self.assertEqual(dict(TABLE.fallbacks), {})

    def test_without_a_kernel_for_the_decode_steps_they_run_the_modules_own_forwards(self):
        model = self.model = with_cache()
        with torch.no_grad():
            expected = model.generate(self.ids, max_new_tokens=4, do_sample=False)
        self.register(model, self.ids)  # the prefill's problems only
        autokernel.apply(model, (self.ids,))
        TABLE.reset_counts()
        norm, mlp = model.model.norm, model.model.layers[0].mlp
        with mock.patch.object(norm.forward, "original", wraps=norm.forward.original) as norm_original, \
                mock.patch.object(mlp.forward, "original", wraps=mlp.forward.original) as mlp_original:
            tokens, steps = self.generate(model)
        self.assertTrue(torch.equal(expected, tokens), (expected, tokens))
        (_, prefill), *decode = steps
        self.assertEqual((prefill["host_rmsnorm"], prefill["host_fused_mlp"]), (5, 2))  # the traced length's
        self.assertEqual([sum(calls.values()) for _, calls in decode], [0, 0, 0])
        self.assertEqual((norm_original.call_count, mlp_original.call_count), (3, 3))  # the decode steps
        self.assertEqual(dict(TABLE.fallbacks), {})  # no custom op was called for a problem without a kernel
        x = torch.randn(2, 1, model.config.hidden_size)
        with torch.no_grad():
            self.assertTrue(torch.equal(norm(x), type(norm).forward(norm, x)))  # eager's, bit for bit
            self.assertTrue(torch.equal(mlp(x), type(mlp).forward(mlp, x)))

    def test_torch_compile_traces_a_call_unlike_the_traced_one_whole_with_our_kernels(self):
        model = self.model = base.build_model("llama")
        short = self.ids[:, :1].contiguous()
        with torch.no_grad():
            expected = model(short).logits
        self.register(model, self.ids, short)
        autokernel.apply(model, (self.ids,))
        TABLE.reset_counts()
        with torch.no_grad():  # before any eager call of this shape: the decision is traced too
            got = torch.compile(model, backend="aot_eager", fullgraph=True)(short).logits
        self.assertLess(relative_error(expected, got), 1e-5)
        self.assertEqual((TABLE.calls["host_rmsnorm"], TABLE.calls["host_fused_mlp"]), (5, 2))
        torch._dynamo.reset()
        explained = torch._dynamo.explain(model)(short)
        self.assertEqual((explained.graph_count, explained.graph_break_count), (1, 0),
                         [str(b.reason) for b in explained.break_reasons])

    def test_a_module_that_only_looks_like_an_operator_is_left_alone(self):
        from transformers.models.llama.modeling_llama import LlamaRMSNorm

        class ExtraTerm(LlamaRMSNorm):  # an RMSNorm and more
            def forward(self, x):
                return super().forward(x) + 0.5 * x

        class OtherForOneRow(LlamaRMSNorm):  # an RMSNorm, except on a decode step's shape
            def forward(self, x):
                y = super().forward(x)
                return 2 * y if x.shape[-2] == 1 else y

        class Counting(LlamaRMSNorm):  # an RMSNorm that also counts its calls in a buffer
            def __init__(self, size):
                super().__init__(size)
                self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

            def forward(self, x):
                self.calls += 1
                return super().forward(x)

        class Norms(nn.Module):
            def __init__(self, *norms):
                super().__init__()
                self.norms = nn.ModuleList(norms)

            def forward(self, x):
                return torch.stack([norm(x) for norm in self.norms])

        model = self.model = Norms(LlamaRMSNorm(64), ExtraTerm(64), OtherForOneRow(64), Counting(64)).eval()
        torch.manual_seed(0)
        for norm in model.norms:
            nn.init.normal_(norm.weight)
        x, one_row = torch.randn(2, 16, 64), torch.randn(2, 1, 64)
        with torch.no_grad():
            expected = model(one_row)
        model.norms[3].calls.zero_()
        self.kernels = [Kernel("host_rmsnorm", "rmsnorm", host_module("rmsnorm"), host_arch(),
                               frozenset({("32x64", "fp32"), ("2x64", "fp32")}))]
        TABLE.add(self.kernels[0])
        autokernel.apply(model, (x,))
        report = autokernel.report(model)
        self.assertEqual([s.op for s in report.sites], ["rmsnorm"] * 4)  # each holds one in the trace
        self.assertEqual(report.modules, ["norms.0"])
        self.assertEqual(patched(model), ["", "norms.0"])  # the model's dispatcher and the true RMSNorm
        TABLE.reset_counts()
        with torch.no_grad(), self.assertLogs("autokernel", logging.WARNING) as logged:
            got = model(one_row)
        self.assertLess(relative_error(expected, got), 1e-5)
        self.assertEqual(TABLE.calls["host_rmsnorm"], 1)
        self.assertEqual(int(model.norms[3].calls), 1)  # its own forward ran (and apply's probes did not)
        self.assertIn("with our kernels in its 1 whole-module operator where checked", logged.output[0])

    def test_a_module_no_registered_kernel_serves_at_any_rows_keeps_its_own_forward(self):
        # Every patched module costs a lookup on each call: only those a kernel could serve pay it.
        model = self.model = base.build_model("llama")
        norms = [path for path, module in model.named_modules() if type(module).__name__ == "LlamaRMSNorm"]
        self.kernels = [k for k in kernels_for_calls(model, self.ids) if k.op == "rmsnorm"]
        TABLE.add(self.kernels[0])
        autokernel.apply(model, (self.ids,))
        self.assertEqual(autokernel.report(model).modules, norms)  # no MLP or Linear kernel: not patched
        self.assertEqual(patched(model), ["", *norms])
        TABLE.remove(self.kernels[0])
        width = model.config.hidden_size
        self.kernels = [Kernel("host_rmsnorm", "rmsnorm", host_module("rmsnorm"), host_arch(),
                               frozenset({(f"2x{2 * width}", "fp32"), (f"2x{width}", "fp16")}))]
        TABLE.add(self.kernels[0])  # a norm kernel of another width, and one of another dtype
        autokernel.apply(model, (self.ids,))
        self.assertEqual((autokernel.report(model).modules, patched(model)), ([], []))
        TABLE.remove(self.kernels[0])
        self.kernels = [Kernel("host_rmsnorm", "rmsnorm", host_module("rmsnorm"), host_arch(),
                               frozenset({(f"7x{width}", "fp32")}))]
        TABLE.add(self.kernels[0])  # this width at rows no call of the model has: still servable
        autokernel.apply(model, (self.ids,))
        self.assertEqual(autokernel.report(model).modules, norms)

    def test_restore_and_aside_take_the_patches_with_the_rest(self):
        model = self.model = base.build_model("llama")
        self.register(model, self.ids)
        autokernel.apply(model, (self.ids,))
        report = autokernel.report(model)
        # 5 norms, 2 MLPs, 13 of the 15 Linears: no kernel has the down projections' weights (64 x
        # 128; the fused MLP kernel serves them in the trace), so they keep their own forward
        self.assertEqual(len(report.modules), 20)
        self.assertNotIn("model.layers.0.mlp.down_proj", report.modules)
        self.assertIn("calls unlike the traced one: 20 modules run our kernels where one was checked for the "
                      "call's problem: model.layers.*.input_layernorm (2)", str(report))
        forwards = {path: model.get_submodule(path).forward for path in patched(model)}
        self.assertEqual(len(forwards), 21)  # and the model's dispatcher
        autokernel.apply(model, (self.ids,), ops=["rmsnorm"])  # applied again: restored first
        self.assertEqual(len(patched(model)), 6)
        self.assertTrue(all(not isinstance(model.get_submodule(p).forward.original, Forward)
                            for p in patched(model) if p))
        autokernel.apply(model, (self.ids,), ops=["flash_attention"])  # an operator no module is
        self.assertEqual(patched(model), [""])
        with torch.no_grad(), self.assertLogs("autokernel", logging.WARNING) as logged:
            model(self.ids[:, :1])
        self.assertIn("own forward, without our kernels", logged.output[0])
        autokernel.apply(model, (self.ids,))
        forwards = {path: model.get_submodule(path).forward for path in patched(model)}
        with aside(model) as switch:
            switch(applied=False)
            self.assertEqual(patched(model), [])
            switch(applied=True)
            self.assertEqual({p: model.get_submodule(p).forward for p in patched(model)}, forwards)
        autokernel.restore(model)
        self.assertEqual(patched(model), [])
        self.assertIsNone(autokernel.report(model))


if __name__ == "__main__":
    unittest.main()
