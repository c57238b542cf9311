"""autokernel.apply on transformers' own model classes (Llama, Qwen2, Qwen3, Mistral, Phi-3, Gemma,
GPT-NeoX, GPT-2, BERT), built from small configurations with random weights, nothing fetched: as a user runs them, with
labels (the loss is the model's cross entropy). With the host backend's kernels registered for
exactly the problems each model has, every operator found is plugged, the logits and the loss
are eager's, torch.compile(fullgraph=True) traces the applied model with no graph break and
computes the same, and training gives eager's gradients.
"""
import os
import unittest
import warnings
from unittest import mock

import torch
from torch.utils import _pytree as pytree
from support import HAVE_TRANSFORMERS, host_module, relative_error, transformers_models

import autokernel
from autokernel import outputs
from autokernel.runtime import capture, rewrite
from autokernel.runtime.kernel_table import TABLE, Kernel, host_arch

# The operators whose calls are counted (support.transformers_models says how many sites each
# class has; an operator it does not list has none).
COUNTED = ("rmsnorm", "layernorm", "rotary_embedding", "flash_attention", "cross_entropy", "fused_mlp")


def build_model(name, seed=0):
    config_class, model_class, settings, _ = transformers_models()[name]
    config = config_class(**settings)
    config._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    return model_class(config).eval()


def _applied_graphs(model):
    """The rewritten graphs apply installed in the model's modules (their forwards' dispatch)."""
    graphs = [c.graph for m in model.modules() for c in getattr(m.__dict__.get("forward"), "captures", [])]
    assert graphs, "apply installed no graph"
    return graphs


def kernels_for(model, ids):
    """Host kernels registered as checked for exactly this model's problems."""
    return kernels_for_call(model, {"input_ids": ids, "labels": ids})


def kernels_for_call(model, kwargs):
    """Host kernels checked for exactly the problems of the model's call with `kwargs`."""
    captures, _ = capture.capture(model, (), kwargs)
    found, _ = rewrite.find_all(captures[0].graph)
    problems = {}
    for m in rewrite.choose(found):
        problems.setdefault(m.op, set()).add((m.problem, m.dtype_name))
    return [Kernel(f"host_{op}", op, host_module(op), host_arch(), frozenset(p)) for op, p in problems.items()]


class AppliedModelCase(unittest.TestCase):
    """A test that applies kernels to self.model: token ids to call it on, and after it the model
    restored, the kernels it registered (self.kernels) removed, dynamo's caches reset."""

    def setUp(self):
        warnings.simplefilter("ignore")
        self.ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0))
        self.kernels = []
        self.model = None
        torch._dynamo.reset()

    def tearDown(self):
        if self.model is not None:
            autokernel.restore(self.model)
        for kernel in self.kernels:
            TABLE.remove(kernel)
        torch._dynamo.reset()


@unittest.skipUnless(HAVE_TRANSFORMERS, "transformers is not installed (python/requirements.txt installs it)")
class TransformersClasses(AppliedModelCase):

    def applied(self, name, training=False):
        """The model applied with its kernels (traced in training mode or not), and eager's output
        before apply."""
        model = self.model = build_model(name).train(training)
        with torch.no_grad():
            expected = model(self.ids, labels=self.ids)
        self.kernels = kernels_for(model, self.ids)
        for kernel in self.kernels:
            TABLE.add(kernel)
        TABLE.reset_counts()
        autokernel.apply(model, (self.ids,), {"labels": self.ids})
        return model, expected

    def assert_same(self, expected, got, tolerance=1e-5):
        self.assertLess(relative_error(expected.logits, got.logits), tolerance)
        self.assertLess(relative_error(expected.loss, got.loss), tolerance)

    def test_every_operator_runs_ours_with_eagers_outputs_eager_and_compiled(self):
        for name, (*_, sites) in transformers_models().items():
            with self.subTest(name):
                model, expected = self.applied(name)
                report = autokernel.report(model)
                self.assertEqual(len(report.plugged()), len(report.sites))
                with torch.no_grad():
                    got = model(self.ids, labels=self.ids)
                self.assert_same(expected, got)
                calls = dict(TABLE.calls)
                for op in COUNTED:
                    self.assertEqual(calls.get(f"host_{op}", 0), sites.get(op, 0), (op, calls))
                self.assertEqual(dict(TABLE.fallbacks), {})

                explained = torch._dynamo.explain(model)(self.ids, labels=self.ids)
                self.assertEqual((explained.graph_count, explained.graph_break_count), (1, 0),
                                 [str(b.reason) for b in explained.break_reasons])
                torch._dynamo.reset()
                TABLE.reset_counts()
                compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
                with torch.no_grad():
                    self.assert_same(expected, compiled(self.ids, labels=self.ids))
                self.assertEqual(TABLE.calls["host_flash_attention"], 2)  # ours, inside the compiled graph
                autokernel.restore(model)
                for kernel in self.kernels:
                    TABLE.remove(kernel)
                self.kernels, self.model = [], None
                torch._dynamo.reset()

    def test_attention_and_rotary_take_the_projections_as_they_are_eager_and_under_inductor(self):
        # transformers' Llama hands SDPA q, k and v as transposed views of their Linears' [B, S, H, D]
        # outputs: rotary and attention take them so (bshd), copying none, and attention's output
        # comes in that layout, whose transpose back is free. Inductor must give the ops the strides
        # the graph was traced with, or their outputs' layout would not be the one compiled for.
        with mock.patch.dict(os.environ, {"AUTOKERNEL_VIEWS": "0"}):  # copies, as before the views
            copied = {p for kernel in kernels_for(build_model("llama"), self.ids) for p, _ in kernel.problems}
        self.assertEqual([p for p in copied if "bshd" in p], [])
        model, expected = self.applied("llama")  # the default: the views
        problems = {p for kernel in self.kernels for p, _ in kernel.problems}
        self.assertIn("2x4x16x16:bshd=1,causal=1,kv_heads=2", problems)
        self.assertIn("2x4x16x16:bshd=1", problems)  # q's rotary
        with torch.no_grad():
            self.assert_same(expected, model(self.ids, labels=self.ids))
        self.assertEqual(dict(TABLE.fallbacks), {})
        copies = [n for gm in _applied_graphs(model) for n in gm.graph.nodes
                  if n.target in (torch.ops.aten.contiguous.default, torch.ops.aten.clone.default)]
        self.assertEqual(copies, [])
        torch._dynamo.reset()
        TABLE.reset_counts()
        compiled = torch.compile(model, fullgraph=True)
        with torch.no_grad():
            self.assert_same(expected, compiled(self.ids, labels=self.ids), tolerance=1e-4)
        self.assertEqual(TABLE.calls["host_flash_attention"], 2)
        self.assertEqual(dict(TABLE.fallbacks), {})

    def test_a_padding_mask_apply_did_not_see_runs_pytorch_and_says_so(self):
        # The call runs the model's own forward: attention, which the mask reaches, is PyTorch's;
        # the LayerNorm modules, each one operator whose problem has its kernel, are ours.
        model, _ = self.applied("bert")
        mask = torch.ones_like(self.ids)
        mask[1, 10:] = 0
        autokernel.restore(model)
        with torch.no_grad():
            expected = model(self.ids, attention_mask=mask).logits
        autokernel.apply(model, (self.ids,), {"labels": self.ids})
        TABLE.reset_counts()
        with torch.no_grad(), self.assertLogs("autokernel", "WARNING") as logged:
            got = model(self.ids, attention_mask=mask).logits
        self.assertLess(relative_error(expected, got), 1e-5)
        self.assertEqual(TABLE.calls["host_flash_attention"], 0)
        self.assertEqual(TABLE.calls["host_layernorm"], transformers_models()["bert"][3]["layernorm"])
        self.assertIn("attention_mask where it had 1 positional, labels", logged.output[0])
        self.assertIn("with our kernels in its 20 whole-module operators where checked", logged.output[0])

    def test_calls_by_name_run_ours_where_apply_was_given_positions_and_the_reverse(self):
        # transformers' users call model(**tokenizer(...)): by name, with the defaults spelled out
        # at times. Each binds the parameters the traced call bound, so the traced graph runs it.
        model, expected = self.applied("llama")
        for args, kwargs in (((), {"input_ids": self.ids, "labels": self.ids}),
                             ((self.ids,), {"labels": self.ids, "attention_mask": None, "position_ids": None})):
            TABLE.reset_counts()
            with torch.no_grad():
                self.assert_same(expected, model(*args, **kwargs))
            self.assertEqual(TABLE.calls["host_flash_attention"], 2, kwargs.keys())
        explained = torch._dynamo.explain(model)(input_ids=self.ids, labels=self.ids)
        self.assertEqual((explained.graph_count, explained.graph_break_count), (1, 0),
                         [str(b.reason) for b in explained.break_reasons])
        autokernel.restore(model)
        autokernel.apply(model, (), {"input_ids": self.ids, "labels": self.ids})
        TABLE.reset_counts()
        with torch.no_grad():
            self.assert_same(expected, model(self.ids, labels=self.ids))
        self.assertEqual(TABLE.calls["host_flash_attention"], 2)

    def test_applied_with_a_padding_mask_the_rest_is_ours_for_any_mask_of_that_shape(self):
        # A tokenizer's padded batch: the mask reaches SDPA through ops of the inputs, so attention
        # stays PyTorch's; the norms, rotary embeddings and MLPs are ours, whatever the mask.
        model = self.model = build_model("llama")
        mask = torch.ones_like(self.ids)
        mask[1, 12:] = 0
        self.kernels = kernels_for_call(model, {"input_ids": self.ids, "attention_mask": mask})
        self.assertNotIn("flash_attention", [k.op for k in self.kernels])
        for kernel in self.kernels:
            TABLE.add(kernel)
        other = torch.ones_like(self.ids)
        other[0, 5:] = 0
        with torch.no_grad():
            expected = model(self.ids, attention_mask=other).logits
        autokernel.apply(model, (), {"input_ids": self.ids, "attention_mask": mask})
        TABLE.reset_counts()
        with torch.no_grad():
            got = model(self.ids, attention_mask=other).logits
        self.assertLess(relative_error(expected, got), 1e-5)
        calls = dict(TABLE.calls)
        for op, sites in (("rmsnorm", 5), ("rotary_embedding", 4), ("fused_mlp", 2)):
            self.assertEqual(calls.get(f"host_{op}", 0), sites, calls)

    def test_generate_after_apply_gives_eagers_tokens_and_says_why_ours_sat_out(self):
        # model.generate() calls forward with flags the traced call did not have (and, the cache
        # off, each step after the first with one token more): those calls run the model's own
        # forward, and a warning names the difference. In it the norm, MLP and Linear modules run
        # ours where a kernel was checked for the call's problem: the first step's, of the traced
        # length; the later steps' lengths have none, so PyTorch runs them (test_module_sites.py
        # has kernels for a decode step's). The tokens are eager's; the traced call stays ours.
        model = self.model = build_model("llama")
        with torch.no_grad():
            expected = model.generate(self.ids, max_new_tokens=4, do_sample=False)
            logits = model(self.ids).logits
        self.kernels = kernels_for_call(model, {"input_ids": self.ids})
        for kernel in self.kernels:
            TABLE.add(kernel)
        autokernel.apply(model, (self.ids,))
        TABLE.reset_counts()
        with torch.no_grad(), self.assertLogs("autokernel", "WARNING") as logged:
            got = model.generate(self.ids, max_new_tokens=4, do_sample=False)
        self.assertTrue(torch.equal(expected, got), (expected, got))
        layers = model.config.num_hidden_layers
        self.assertEqual({name: count for name, count in TABLE.calls.items() if count},
                         {"host_rmsnorm": 2 * layers + 1, "host_fused_mlp": layers, "host_matmul": 4 * layers + 1})
        self.assertEqual(dict(TABLE.fallbacks), {})
        self.assertIn("use_cache", logged.output[0])
        # 5 norms, 2 MLPs and 13 Linears: no kernel has the down projections' weights (64 x 128)
        self.assertIn("with our kernels in its 20 whole-module operators where checked", logged.output[0])
        with torch.no_grad():
            self.assertLess(relative_error(logits, model(self.ids).logits), 1e-5)
        self.assertEqual(TABLE.calls["host_flash_attention"], 2)

    def test_with_the_cache_on_each_class_traces_whole_with_every_operator(self):
        for name, (config_class, model_class, settings, sites) in transformers_models().items():
            with self.subTest(name):
                config = config_class(**{**settings, "use_cache": True})
                config._attn_implementation = "sdpa"
                captures, notes = capture.capture(model_class(config).eval(), (), {"input_ids": self.ids})
                self.assertEqual(([c.path for c in captures], notes), ([""], []))
                found, _ = rewrite.find_all(captures[0].graph)
                ops = [m.op for m in rewrite.choose(found)]
                for op in COUNTED:
                    self.assertEqual(ops.count(op), 0 if op == "cross_entropy" else sites.get(op, 0), (op, ops))

    def test_with_the_cache_on_every_operator_is_ours_and_the_cache_is_eagers(self):
        # use_cache is on in a transformers configuration unless turned off: the model returns its
        # key/value cache, which export flattens once transformers' own registration is made, so
        # the model traces whole (without it: the final norm and lm_head alone), the cache comes
        # back as eager's, and generate() goes on from it.
        config_class, model_class, settings, sites = transformers_models()["llama"]
        config = config_class(**{**settings, "use_cache": True})
        config._attn_implementation = "sdpa"
        torch.manual_seed(0)
        model = self.model = model_class(config).eval()
        with torch.no_grad():
            expected = model(self.ids)
            tokens = model.generate(self.ids, max_new_tokens=4, do_sample=False)
        self.kernels = kernels_for_call(model, {"input_ids": self.ids})
        for kernel in self.kernels:
            TABLE.add(kernel)
        autokernel.apply(model, (self.ids,))
        TABLE.reset_counts()
        with torch.no_grad():
            got = model(self.ids)
        self.assertLess(relative_error(expected.logits, got.logits), 1e-5)
        calls = dict(TABLE.calls)
        for op in COUNTED:
            self.assertEqual(calls.get(f"host_{op}", 0), 0 if op == "cross_entropy" else sites.get(op, 0), (op, calls))
        cached = [pytree.tree_leaves(out.past_key_values) for out in (expected, got)]
        self.assertEqual(len(cached[0]), 2 * config.num_hidden_layers)  # keys and values of each layer
        for e, g in zip(*cached, strict=True):
            self.assertLess(relative_error(e, g), 1e-5)
        # verify compares the cache too: a wrong value in it is named
        self.assertEqual(len(outputs.flatten(got)), 1 + len(cached[1]))
        copy = outputs.clone_output(got)
        self.assertIsNone(outputs.first_difference(copy, got, torch.float32))
        cached[1][-1].add_(1.0)
        self.assertRegex(outputs.first_difference(copy, got, torch.float32), r"^output\.\w+<\d+>: relative error")
        with torch.no_grad():
            self.assertTrue(torch.equal(tokens, model.generate(self.ids, max_new_tokens=4, do_sample=False)))
        TABLE.reset_counts()
        with torch.no_grad():
            compiled = torch.compile(model, fullgraph=True)(self.ids)
        self.assertLess(relative_error(expected.logits, compiled.logits), 1e-5)
        self.assertEqual(TABLE.calls["host_flash_attention"], 2)  # the cache's values made contiguous
        self.assertEqual(dict(TABLE.fallbacks), {})

    def test_training_gives_eagers_gradients(self):
        # Applied to the model in training mode (a call in the other mode runs the model's own
        # forward: the trace holds the mode's branches).
        reference = build_model("llama").train()
        model, _ = self.applied("llama", training=True)
        TABLE.reset_counts()
        for m in (reference, model):
            m(self.ids, labels=self.ids).loss.backward()
        self.assertGreater(TABLE.calls["host_fused_mlp"], 0)  # ours ran forward in training mode
        for (name, p), q in zip(reference.named_parameters(), model.parameters(), strict=True):
            self.assertLess(relative_error(p.grad, q.grad), 1e-4, name)


if __name__ == "__main__":
    unittest.main()
