"""Our operators found in model code the project did not write: seven decoders written in the
styles of Hugging Face's Llama, Qwen2 and Mistral, GPT-NeoX, Gemma, GPT-J and the original LLaMA
(tests/models), and — when `transformers` is installed — its real classes built from small
configurations with random weights. The graph each is traced into, with every operator found
replaced by its custom op (PyTorch's implementation here: no kernel is registered), must give the
model's own outputs; look-alikes must be left alone.
"""
import collections
import unittest
import warnings

import torch
import torch.nn.functional as F
from torch import nn

import hf_style
import other_style
from support import HAVE_TRANSFORMERS, build, relative_error, tensors, transformers_models

from autokernel.runtime import capture, rewrite

SPELLINGS = {
    hf_style.LlamaStyle: {"rmsnorm": 5, "rotary_embedding": 4, "flash_attention": 2, "fused_mlp": 2,
                          "cross_entropy": 1, "matmul": 9},
    hf_style.Qwen2Style: {"rmsnorm": 5, "rotary_embedding": 4, "flash_attention": 2, "fused_mlp": 2, "matmul": 9},
    hf_style.MistralStyle: {"rmsnorm": 5, "rotary_embedding": 4, "flash_attention": 2, "fused_mlp": 2, "matmul": 9},
    other_style.NeoXStyle: {"layernorm": 5, "rotary_embedding": 4, "softmax": 2, "matmul": 9},
    other_style.GemmaStyle: {"rmsnorm": 5, "rotary_embedding": 4, "flash_attention": 2, "matmul": 15},
    other_style.GPTJStyle: {"layernorm": 2, "rotary_embedding": 4, "softmax": 2, "cross_entropy": 1, "matmul": 13},
    other_style.MetaLlamaStyle: {"rmsnorm": 5, "rotary_embedding": 4, "flash_attention": 2, "fused_mlp": 2,
                                 "matmul": 9},
}
LABELS = {
    hf_style.LlamaStyle: {"sdpa with repeated key/value heads", "rotary (rotate-half)"},
    hf_style.Qwen2Style: {"sdpa with enable_gqa"},
    hf_style.MistralStyle: {"sdpa with repeated key/value heads"},
    other_style.GemmaStyle: {"rmsnorm written out"},
    other_style.GPTJStyle: {"rotary (interleaved pairs)", "layernorm written out", "softmax written out",
                            "nll_loss(log_softmax)"},
    other_style.MetaLlamaStyle: {"rotary (interleaved pairs)"},
}


def found_in(model, args, kwargs=None):
    """(op counts, labels, the rewritten graph) of a model traced whole."""
    captures, notes = capture.capture(model, args, kwargs or {})
    assert len(captures) == 1 and captures[0].path == "", notes
    found, _ = rewrite.find_all(captures[0].graph)
    chosen = rewrite.choose(found)
    graph = rewrite.replace(captures[0].graph, chosen)
    return collections.Counter(m.op for m in chosen), {m.label for m in chosen}, graph


class Spellings(unittest.TestCase):
    def check(self, cls, dtype, tolerance):
        model, inputs = build(cls, dtype)
        with torch.no_grad():
            expected = model(*inputs)
        counts, labels, graph = found_in(model, inputs)
        self.assertEqual(dict(counts), SPELLINGS[cls])
        self.assertLessEqual(LABELS.get(cls, set()), labels)
        with torch.no_grad():
            got = graph(*inputs)
        for e, g in zip(tensors(expected), tensors(got), strict=True):
            self.assertLess(relative_error(e, g), tolerance)

    def test_every_spelling_in_float32(self):
        for cls in SPELLINGS:
            with self.subTest(cls.__name__):
                self.check(cls, torch.float32, 1e-5)

    def test_half_precision_spellings(self):
        # Casts to float and back are part of what is matched; a half model has them all.
        for cls in (hf_style.LlamaStyle, other_style.NeoXStyle, other_style.MetaLlamaStyle):
            with self.subTest(cls.__name__):
                self.check(cls, torch.float16, 2e-2)


class NotANorm(nn.Module):
    """An RMSNorm by its parameters, but it divides by the mean absolute value."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(16))

    def forward(self, x):
        return x / torch.sqrt(x.abs().mean(-1, keepdim=True) + 1e-6) * self.weight


class NotARotary(nn.Module):
    """Halves concatenated and mixed with tables, but the second half is not rotated back."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cos", torch.rand(8, 4))
        self.register_buffer("sin", torch.rand(8, 4))

    def forward(self, x):
        x1, x2 = x[..., :4], x[..., 4:]
        return torch.cat((x1 * self.cos - x2 * self.sin, x2 * self.cos - x1 * self.sin), -1)


class PaddedAttention(nn.Module):
    """SDPA under a mask that comes with the input: it changes from call to call."""

    def forward(self, q, mask):
        return F.scaled_dot_product_attention(q, q, q, attn_mask=mask)


class PerBatchPositions(nn.Module):
    """Rotary whose tables depend on positions the caller passes: not one table for every call."""

    def forward(self, x, positions):
        angles = positions[:, None, :, None].float() * torch.arange(1, 5).float()
        c, s = torch.cat((angles.cos(), angles.cos()), -1), torch.cat((angles.sin(), angles.sin()), -1)
        return x * c + torch.cat((-x[..., 4:], x[..., :4]), -1) * s


class TrailingDimsNorms(nn.Module):
    """Norms over the last two dims (nn.LayerNorm((4, 8)), F.rms_norm over (4, 8)): one row each of
    their 32 elements, the parameters flattened alike."""

    def __init__(self):
        super().__init__()
        self.layer = nn.LayerNorm((4, 8))
        with torch.no_grad():
            self.layer.weight.uniform_(0.5, 1.5)
            self.layer.bias.uniform_(-0.5, 0.5)
        self.weight = nn.Parameter(torch.rand(4, 8) + 0.5)

    def forward(self, x):
        return F.rms_norm(self.layer(x), (4, 8), self.weight, 1e-6)


class TrailingDims(unittest.TestCase):
    def test_norms_over_several_trailing_dims_are_rows_of_their_product(self):
        model, x = TrailingDimsNorms(), torch.randn(2, 3, 4, 8)
        with torch.no_grad():
            expected = model(x)
        counts, _, graph = found_in(model, (x,))
        self.assertEqual(counts["layernorm"], 1)
        self.assertEqual(counts["rmsnorm"], 1)
        with torch.no_grad():
            self.assertLess(relative_error(expected, graph(x)), 1e-5)

    def test_a_norm_over_every_dim_is_one_row(self):
        class Whole(nn.Module):
            def forward(self, x):
                return F.layer_norm(x, x.shape[1:]) * 2

        x = torch.randn(1, 3, 4)
        counts, _, graph = found_in(Whole(), (x,))
        self.assertEqual(counts["layernorm"], 1)
        self.assertLess(relative_error(Whole()(x), graph(x)), 1e-5)


class Einsums(nn.Module):
    """Products written as einsum: a 4-D tensor times a [K, N] matrix, a batch of rows times an
    [N, K] weight (its transpose), and a batched product that the unbatched matmul does not serve."""

    def __init__(self):
        super().__init__()
        self.kn = nn.Parameter(torch.randn(8, 5))
        self.nk = nn.Parameter(torch.randn(6, 5))

    def forward(self, x, y):
        h = torch.einsum("bijl,lk->bijk", x, self.kn)
        h = torch.einsum("bijk,nk->bijn", h, self.nk)
        return h, torch.einsum("bij,bjk->bik", y, y)


class EinsumProducts(unittest.TestCase):
    def test_an_einsum_with_a_matrix_is_a_matmul_and_a_batched_one_is_left_alone(self):
        model, x, y = Einsums(), torch.randn(2, 3, 4, 8), torch.randn(2, 3, 3)
        with torch.no_grad():
            expected = model(x, y)
        counts, labels, graph = found_in(model, (x, y))
        self.assertEqual(counts["matmul"], 2)
        self.assertIn("einsum", labels)
        with torch.no_grad():
            for e, g in zip(expected, graph(x, y), strict=True):
                self.assertLess(relative_error(e, g), 1e-5)


class LookAlikes(unittest.TestCase):
    def ops(self, model, *inputs):
        return found_in(model, inputs)[0]

    def test_a_different_formula_is_not_taken(self):
        self.assertNotIn("rmsnorm", self.ops(NotANorm(), torch.randn(2, 16)))
        self.assertNotIn("layernorm", self.ops(NotANorm(), torch.randn(2, 16)))
        self.assertNotIn("rotary_embedding", self.ops(NotARotary(), torch.randn(1, 2, 8, 8)))

    def test_an_input_dependent_mask_or_table_is_not_taken(self):
        q = torch.randn(1, 2, 8, 4)
        self.assertNotIn("flash_attention", self.ops(PaddedAttention(), q, torch.ones(8, 8, dtype=torch.bool)))
        positions = torch.arange(8)[None].repeat(2, 1)
        self.assertNotIn("rotary_embedding", self.ops(PerBatchPositions(), torch.randn(2, 3, 8, 8), positions))

    def test_a_geglu_mlp_is_reported_not_taken_for_swiglu(self):
        model, inputs = build(other_style.GemmaStyle)
        captures, _ = capture.capture(model, inputs, {})
        found, notes = rewrite.find_all(captures[0].graph)
        self.assertNotIn("fused_mlp", {m.op for m in found})
        self.assertTrue(any("GeGLU" in n for n in notes), notes)


@unittest.skipUnless(HAVE_TRANSFORMERS, "transformers is not installed (python/requirements.txt installs it)")
class HuggingFaceClasses(unittest.TestCase):
    """The real modeling code of transformers, small configurations, random weights, nothing fetched."""

    def test_real_classes(self):
        for name, (config_class, model_class, settings, sites) in transformers_models().items():
            with self.subTest(name), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                config = config_class(**settings)
                config._attn_implementation = "sdpa"
                torch.manual_seed(0)
                model = model_class(config).eval()
                ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0))
                with torch.no_grad():
                    expected = model(ids, labels=ids)
                counts, _, graph = found_in(model, (ids,), {"labels": ids})
                # Every site listed, and nothing else but the matmuls of the projections.
                self.assertEqual({op: n for op, n in counts.items() if op != "matmul"},
                                 {op: n for op, n in sites.items() if n}, counts)
                with torch.no_grad():
                    got = graph(ids, labels=ids)
                self.assertLess(relative_error(expected.logits, got.logits), 1e-5)
                self.assertLess(relative_error(expected.loss, got.loss), 1e-5)


if __name__ == "__main__":
    unittest.main()
