"""Tests of the shipped PyTorch models, on their tiny variants (fast on a CPU).

Run from the repository root:

    PYTHONPATH=python python3 -m unittest tests/python/test_models.py
"""

import math
import unittest

import torch

from autokernel import models
from autokernel.models import bert, common, gpt2, llama

TINY = ("gpt2-tiny", "llama-tiny", "bert-tiny")
LANGUAGE_MODELS = ("gpt2-tiny", "llama-tiny")
CPU = torch.device("cpu")
PARAMETER_COUNTS = {
    "gpt2": gpt2.parameter_count,
    "llama": llama.parameter_count,
    "bert": bert.parameter_count,
}


def build(name, seed=0):
    torch.manual_seed(seed)
    return models.get(name).build().eval()


def make_inputs(name, model, shape=None, seed=0, device=CPU):
    spec = models.get(name)
    return spec.make_inputs(model, shape or spec.default_shape, device, torch.Generator().manual_seed(seed))


def forward(model, args):
    with torch.no_grad():
        return model(*args)


class TinyModelTest(unittest.TestCase):
    def test_output_shapes_are_right_and_values_finite(self):
        for name in TINY:
            with self.subTest(name):
                model = build(name)
                args = make_inputs(name, model)
                out = forward(model, args)
                batch, seq = models.get(name).default_shape
                if name in LANGUAGE_MODELS:
                    self.assertEqual(len(args), 2)
                    logits, loss = out
                    self.assertEqual(tuple(logits.shape), (batch, seq, model.config.vocab_size))
                    self.assertTrue(torch.isfinite(logits).all())
                else:
                    self.assertEqual(len(args), 1)
                    self.assertEqual(tuple(out.shape), (batch, seq, model.config.dim))
                    self.assertTrue(torch.isfinite(out).all())

    def test_language_model_loss_is_near_log_vocab(self):
        # Small random weights give near-uniform predictions, hence a loss of about log(vocab).
        for name in LANGUAGE_MODELS:
            with self.subTest(name):
                model = build(name)
                _, loss = forward(model, make_inputs(name, model))
                self.assertEqual(loss.dim(), 0)
                self.assertTrue(math.isfinite(loss.item()))
                self.assertAlmostEqual(loss.item(), math.log(model.config.vocab_size), delta=1.0)

    def test_language_model_returns_logits_alone_without_targets(self):
        for name in LANGUAGE_MODELS:
            with self.subTest(name):
                model = build(name)
                idx, targets = make_inputs(name, model)
                logits = forward(model, (idx,))
                self.assertTrue(torch.equal(logits, forward(model, (idx, targets))[0]))

    def test_same_seed_gives_bitwise_identical_outputs(self):
        for name in TINY:
            with self.subTest(name):
                first, second = build(name, seed=7), build(name, seed=7)
                out_a = forward(first, make_inputs(name, first, seed=3))
                out_b = forward(second, make_inputs(name, second, seed=3))
                out_a = out_a if isinstance(out_a, tuple) else (out_a,)
                out_b = out_b if isinstance(out_b, tuple) else (out_b,)
                for a, b in zip(out_a, out_b):
                    self.assertTrue(torch.equal(a, b))

    def test_different_seeds_give_different_weights(self):
        for name in TINY:
            with self.subTest(name):
                a = torch.cat([p.flatten() for p in build(name, seed=1).parameters()])
                b = torch.cat([p.flatten() for p in build(name, seed=2).parameters()])
                self.assertFalse(torch.equal(a, b))

    def test_token_ids_are_int64_and_within_the_vocab(self):
        for name in TINY:
            with self.subTest(name):
                model = build(name)
                for ids in make_inputs(name, model):
                    self.assertEqual(ids.dtype, torch.int64)
                    self.assertEqual(tuple(ids.shape), models.get(name).default_shape)
                    self.assertGreaterEqual(ids.min().item(), 0)
                    self.assertLess(ids.max().item(), model.config.vocab_size)

    def test_make_inputs_rejects_bad_shapes(self):
        for name in TINY:
            with self.subTest(name):
                model = build(name)
                too_long = (2, model.config.max_positions + 1)
                for shape in ((2, 16, 1), (16,), too_long):
                    with self.assertRaises(ValueError) as caught:
                        make_inputs(name, model, shape=shape)
                    self.assertNotIn("\n", str(caught.exception))
                # The longest allowed sequence is accepted.
                make_inputs(name, model, shape=(1, model.config.max_positions))

    def test_language_models_are_causal(self):
        for name in LANGUAGE_MODELS:
            with self.subTest(name):
                model = build(name)
                idx, _ = make_inputs(name, model)
                changed = idx.clone()
                changed[:, -1] = (changed[:, -1] + 1) % model.config.vocab_size
                before, after = forward(model, (idx,)), forward(model, (changed,))
                torch.testing.assert_close(before[:, :-1], after[:, :-1], rtol=0, atol=1e-6)
                # Otherwise the check above would pass for a model that ignores its input.
                self.assertFalse(torch.allclose(before[:, -1], after[:, -1]))

    def test_bert_attends_in_both_directions(self):
        model = build("bert-tiny")
        (ids,) = make_inputs("bert-tiny", model)
        changed = ids.clone()
        changed[:, -1] = (changed[:, -1] + 1) % model.config.vocab_size
        self.assertFalse(torch.allclose(forward(model, (ids,))[:, 0], forward(model, (changed,))[:, 0]))


class PrimitiveTest(unittest.TestCase):
    def test_attention_matches_the_explicit_math_path(self):
        # On torch with SDPA this compares it, with and without grouped-query heads, to the math path.
        generator = torch.Generator().manual_seed(0)
        for kv_heads in (4, 2, 1):
            for causal in (True, False):
                with self.subTest(kv_heads=kv_heads, causal=causal):
                    q = torch.randn(2, 4, 8, 16, generator=generator)
                    k = torch.randn(2, kv_heads, 8, 16, generator=generator)
                    v = torch.randn(2, kv_heads, 8, 16, generator=generator)
                    expected = common._math_attention(q, k, v, causal)
                    torch.testing.assert_close(common.attention(q, k, v, causal), expected)

    def test_math_attention_is_a_weighted_average_of_values(self):
        q = torch.randn(1, 2, 5, 8)
        k = torch.randn(1, 2, 5, 8)
        out = common._math_attention(q, k, torch.ones(1, 2, 5, 8), causal=True)
        torch.testing.assert_close(out, torch.ones_like(out))
        # Causal: the first position sees only itself.
        v = torch.randn(1, 2, 5, 8)
        torch.testing.assert_close(common._math_attention(q, k, v, causal=True)[:, :, 0], v[:, :, 0])

    def test_rms_norm_matches_its_definition(self):
        norm = llama.RMSNorm(32, eps=1e-6)
        with torch.no_grad():
            norm.weight.copy_(torch.linspace(0.5, 1.5, 32))
        x = torch.randn(3, 5, 32)
        expected = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * norm.weight
        torch.testing.assert_close(norm(x), expected)
        self.assertEqual(norm(x.double()).dtype, torch.float64)

    def test_rotary_embedding(self):
        rotary = llama.RotaryEmbedding(head_dim=16, max_seq=32, base=10000.0)
        self.assertEqual(tuple(rotary.cos.shape), (32, 8))
        self.assertEqual(rotary.cos.dtype, torch.float32)
        x = torch.randn(2, 3, 10, 16)
        y = rotary(x)
        self.assertEqual(y.shape, x.shape)
        # Position 0 has angle 0; each (i, i + D/2) pair turns without changing length.
        torch.testing.assert_close(y[:, :, 0], x[:, :, 0])
        pair_length = lambda t: t[..., :8].pow(2) + t[..., 8:].pow(2)  # noqa: E731
        torch.testing.assert_close(pair_length(y), pair_length(x))
        # Scores depend on relative position only: shifting both q and k by 3 leaves q.k unchanged.
        q, k = torch.randn(16), torch.randn(16)
        seq = torch.zeros(1, 1, 10, 16)
        seq[0, 0, 2], seq[0, 0, 5] = q, k
        shifted = torch.zeros(1, 1, 10, 16)
        shifted[0, 0, 5], shifted[0, 0, 8] = q, k
        a, b = rotary(seq)[0, 0], rotary(shifted)[0, 0]
        torch.testing.assert_close(a[2] @ a[5], b[5] @ b[8])


class RegistryTest(unittest.TestCase):
    def test_names_shapes_and_kinds(self):
        expected = {"gpt2", "llama", "llama-7b", "llama-7b-4l", "bert", "gpt2-tiny", "llama-tiny", "bert-tiny"}
        self.assertEqual(set(models.MODELS), expected)
        shapes = {"llama-7b-4l": (1, 2048)}  # the GPU-bound configuration: one long sequence
        for name, spec in models.MODELS.items():
            self.assertEqual(spec.name, name)
            self.assertEqual(spec.input_kind, "tokens")
            self.assertEqual(spec.default_shape, (2, 16) if name.endswith("-tiny") else shapes.get(name, (8, 512)))
            self.assertTrue(spec.summary)

    def test_unknown_name_raises_key_error_listing_the_known_ones(self):
        with self.assertRaises(KeyError) as caught:
            models.get("gpt5")
        for name in models.MODELS:
            self.assertIn(name, str(caught.exception))

    def test_parameter_counts(self):
        # The full models take seconds and gigabytes to build, so their counts come from the same
        # formulas that are checked here against the tiny models.
        for name in TINY:
            with self.subTest(name):
                model = build(name)
                count = PARAMETER_COUNTS[name[: -len("-tiny")]](model.config)
                self.assertEqual(count, sum(p.numel() for p in model.parameters()))
                self.assertLess(count, 1_000_000)
        ranges = {
            "gpt2": (gpt2.parameter_count(gpt2.GPT2_SMALL), 120e6, 130e6),
            "llama": (llama.parameter_count(llama.LLAMA_COMPACT), 100e6, 160e6),
            "llama-7b": (llama.parameter_count(llama.LLAMA_7B), 6.5e9, 7.0e9),
            "llama-7b-4l": (llama.parameter_count(models.LLAMA_7B_4L), 1.0e9, 1.1e9),
            "bert": (bert.parameter_count(bert.BERT_BASE), 105e6, 115e6),
        }
        for name, (count, low, high) in ranges.items():
            with self.subTest(name):
                self.assertTrue(low <= count <= high, f"{name}: {count:,} parameters")

    def test_gpt2_lm_head_is_tied_to_the_token_embedding(self):
        model = build("gpt2-tiny")
        self.assertIs(model.lm_head.weight, model.wte.weight)


@unittest.skipUnless(torch.cuda.is_available(), "needs a CUDA device")
class CudaTest(unittest.TestCase):
    def test_fp16_forward_is_finite_and_inputs_match_the_cpu(self):
        cuda = torch.device("cuda")
        for name in TINY:
            with self.subTest(name):
                model = build(name)
                cpu_args = make_inputs(name, model)
                model = model.to(device=cuda, dtype=torch.float16)
                args = make_inputs(name, model, device=cuda)
                for cpu_ids, ids in zip(cpu_args, args):
                    self.assertTrue(torch.equal(cpu_ids, ids.cpu()))
                out = forward(model, args)
                for tensor in out if isinstance(out, tuple) else (out,):
                    self.assertEqual(tensor.dtype, torch.float16)
                    self.assertTrue(torch.isfinite(tensor).all())


if __name__ == "__main__":
    unittest.main()
