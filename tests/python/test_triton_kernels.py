"""The Triton starters (kernels/triton/*.py) computed on CPU by Triton's interpreter, through their
own AK_LAUNCH mappings (python/autokernel_triton/interpret.py), against float64 references, on
small shapes that reach every variant (short and chunked rows, odd sizes, causal and not,
grouped heads, the fp32 paths) in fp32, fp16 and bf16. The GPU runs the same files compiled
ahead of time (bench/gpu_triton.sh); this checks their arithmetic and mappings in CI.
"""
import math
import os
import pathlib
import unittest

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from autokernel_triton import interpret as triton_interpret  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels" / "triton"
# The engine's per-dtype norm tolerances (src/core/op.cpp default_tolerance), loosened for fp32
# where the interpreter's numpy arithmetic differs from the device's (exp2, rsqrt).
TOLERANCE = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 2e-2}


def relative_error(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


class TritonKernels(unittest.TestCase):
    generator = torch.Generator().manual_seed(7)

    def randn(self, *shape, dtype=torch.float32, scale=1.0):
        return (torch.randn(*shape, generator=self.generator, dtype=torch.float64) * scale).to(dtype)

    def check(self, op, inputs, outputs, scalars, references, defines=None, dtype=None):
        """Runs the op's mapping in the interpreter and checks its outputs; returns the launch of its
        last step."""
        spec = triton_interpret.load(KERNELS / f"{op}.py", defines)
        launch = triton_interpret.run(spec, inputs, outputs, scalars)
        for out, ref in zip(outputs, references):
            tolerance = TOLERANCE[dtype or out.dtype]
            self.assertTrue(torch.isfinite(out.double()).all(), f"{op}: non-finite output")
            self.assertLessEqual(relative_error(out, ref), tolerance, f"{op} {list(out.shape)} {out.dtype}")
        return launch

    def dtypes(self, dot=False):
        # The interpreter's tl.dot of bf16 operands is wrong (a 16 x 16 product is off by 1e10: it
        # multiplies the raw bits), so the tl.dot kernels' bf16 runs only on the GPU.
        return [torch.float32, torch.float16] + ([] if dot else [torch.bfloat16])

    def test_rmsnorm(self):
        for (m, n), defines in [((5, 17), None), ((3, 3000), {"BLOCK_N": 1024, "NUM_WARPS": 4}), ((2, 64), None)]:
            for dtype in self.dtypes():
                x, w = self.randn(m, n, dtype=dtype), self.randn(n, dtype=dtype)
                xd, wd = x.double(), w.double()
                ref = xd / torch.sqrt((xd * xd).mean(-1, keepdim=True) + 1e-6) * wd
                self.check("rmsnorm", [x, w], [torch.empty_like(x)], [1e-6], [ref], defines)

    def test_softmax(self):
        for (m, n), defines in [((4, 33), None), ((3, 2500), {"BLOCK_N": 1024, "NUM_WARPS": 4})]:
            for dtype in self.dtypes():
                x = self.randn(m, n, dtype=dtype, scale=20.0)
                self.check("softmax", [x], [torch.empty_like(x)], [], [torch.softmax(x.double(), -1)], defines)

    def test_layernorm(self):
        for (m, n), defines in [((4, 100), None), ((2, 2100), {"BLOCK_N": 1024, "NUM_WARPS": 4})]:
            for dtype in self.dtypes():
                x = (self.randn(m, n) * 1e-2 + 3.0).to(dtype)  # a small variance around a large mean
                w, b = self.randn(n, dtype=dtype), self.randn(n, dtype=dtype)
                ref = F.layer_norm(x.double(), (n,), w.double(), b.double(), 1e-5)
                self.check("layernorm", [x, w, b], [torch.empty_like(x)], [1e-5], [ref], defines)

    def test_reduce(self):
        for (m, n), defines in [((7, 1000), None), ((9, 33), {"BLOCK_M": 4, "BLOCK_N": 256, "NUM_WARPS": 4})]:
            for dtype in self.dtypes():
                x = self.randn(m, n, dtype=dtype)
                self.check("reduce", [x], [torch.empty(m, dtype=dtype)], [], [x.double().sum(-1)], defines)

    def test_cross_entropy(self):
        for (m, v), defines in [((6, 1000), None), ((3, 5000), {"BLOCK_V": 1024, "NUM_WARPS": 4})]:
            for dtype in self.dtypes():
                logits = self.randn(m, v, dtype=dtype, scale=8.0)
                targets = torch.randint(0, v, (m,), generator=self.generator)
                loss = F.cross_entropy(logits.double(), targets, reduction="none")
                outputs = [torch.empty(m), torch.empty(1)]
                self.check("cross_entropy", [logits, targets], outputs, [], [loss, loss.mean().reshape(1)],
                           defines, dtype)

    def test_rotary_embedding(self):
        for (b, h, s, d), defines in [((1, 2, 5, 64), None), ((2, 1, 9, 130), {"BLOCK_S": 4, "BLOCK_HALF": 32})]:
            for dtype in self.dtypes():
                x = self.randn(b, h, s, d, dtype=dtype)
                angle = torch.arange(s, dtype=torch.float64)[:, None] * 10000.0 ** (
                    -2 * torch.arange(d // 2, dtype=torch.float64) / d)
                cos, sin = angle.cos().to(dtype), angle.sin().to(dtype)
                xd, c, sn, half = x.double(), cos.double(), sin.double(), d // 2
                ref = torch.cat([xd[..., :half] * c - xd[..., half:] * sn, xd[..., half:] * c + xd[..., :half] * sn], -1)
                self.check("rotary_embedding", [x, cos, sin], [torch.empty_like(x)], [], [ref], defines)

    def test_matmul(self):
        small = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 4, "NUM_WARPS": 4, "NUM_STAGES": 2}
        # TMA = 1: strides that are multiples of 16 take the TMA variant (40 x 96 x 80), others the
        # pointers' (33 x 70 x 45).
        for (m, n, k), defines in [((33, 70, 45), None), ((130, 65, 100), small), ((1, 1, 1), None),
                                   ((40, 96, 80), dict(small, TMA=1)), ((33, 70, 45), dict(small, TMA=1))]:
            for dtype in self.dtypes(dot=True):
                a, b = self.randn(m, k, dtype=dtype), self.randn(k, n, dtype=dtype)
                row_major = self.check("matmul", [a, b], [torch.empty(m, n, dtype=dtype)], [],
                                       [a.double() @ b.double()], defines)
                # B as the transposed view of a Linear's [N, K] weight (problem param b_nk = 1)
                weight = self.randn(n, k, dtype=dtype)
                linear = self.check("matmul", [a, weight.t()], [torch.empty(m, n, dtype=dtype)], [],
                                    [a.double() @ weight.double().t()], defines)
                tma = bool((defines or {}).get("TMA")) and dtype == torch.float16 and (n, k) == (96, 80)
                self.assertEqual([row_major.constexprs["TMA"], linear.constexprs["TMA"]], [int(tma)] * 2)

    def test_flash_attention(self):
        # (b, h, s, d, kv heads), causal, scale (None: 1/sqrt(d)), tuning values. Small blocks put
        # several query and key blocks in small problems: whole key blocks, diagonal blocks and a
        # partial last block; HEAD_GROUP 4 over 6 (batch, head)s leaves a short last group; a
        # scale <= 0 takes the general variant (64-bit row offsets, max of the scaled scores).
        small = {"BLOCK_M": 32, "BLOCK_N": 16, "NUM_WARPS": 4, "NUM_STAGES": 2}
        cases = [((1, 2, 70, 64, 2), 1, None, None), ((1, 4, 33, 128, 2), 0, None, None),
                 ((1, 2, 300, 128, 1), 1, None, None), ((1, 2, 300, 128, 2), 0, None, None),
                 ((2, 2, 100, 64, 1), 1, None, {"BLOCK_M": 64, "BLOCK_N": 32, "NUM_WARPS": 4}),
                 ((1, 2, 100, 48, 2), 0, None, {"BLOCK_M": 64, "BLOCK_N": 32, "NUM_WARPS": 4}),
                 ((2, 3, 80, 32, 1), 1, None, dict(small, HEAD_GROUP=4)),
                 ((2, 3, 80, 32, 3), 0, None, dict(small, HEAD_GROUP=2)),
                 ((1, 2, 40, 64, 1), 1, -0.3, small), ((1, 2, 40, 64, 2), 0, 0.0, small)]
        for (b, h, s, d, kv), causal, scale, defines in cases:
            scale = 1 / math.sqrt(d) if scale is None else scale
            for dtype in self.dtypes(dot=True):
                q = self.randn(b, h, s, d, dtype=dtype)
                k, v = self.randn(b, kv, s, d, dtype=dtype), self.randn(b, kv, s, d, dtype=dtype)
                kd, vd = (t.double().repeat_interleave(h // kv, dim=1) for t in (k, v))
                scores = scale * q.double() @ kd.transpose(-1, -2)  # SDPA's math path takes no scale <= 0
                if causal:
                    scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), -math.inf)
                ref = torch.softmax(scores, -1) @ vd
                # NaN-filled: a query block that no program writes fails the finiteness check.
                self.check("flash_attention", [q, k, v], [torch.full_like(q, math.nan)], [scale, float(causal)],
                           [ref], defines)

    def test_fused_mlp(self):
        # (33, 64, 80): every row stride a multiple of 16, the TMA variant; the others the pointers'.
        for (m, d, f) in [(17, 40, 72), (5, 129, 33), (33, 64, 80)]:
            for dtype in self.dtypes(dot=True):
                x = self.randn(m, d, dtype=dtype)
                wg, wu = self.randn(f, d, dtype=dtype, scale=d**-0.5), self.randn(f, d, dtype=dtype, scale=d**-0.5)
                wd = self.randn(d, f, dtype=dtype, scale=f**-0.5)
                ref = (F.silu(x.double() @ wg.double().t()) * (x.double() @ wu.double().t())) @ wd.double().t()
                down = self.check("fused_mlp", [x, wg, wu, wd], [torch.empty(m, d, dtype=dtype)], [], [ref])
                self.assertEqual(down.constexprs["TMA"], dtype == torch.float16 and (d, f) == (64, 80))

    def test_unsupported_calls_are_refused(self):
        spec = triton_interpret.load(KERNELS / "rmsnorm.py")
        x = self.randn(4, 8)
        with self.assertRaises(triton_interpret.Unsupported):  # y's dtype differs from x's
            triton_interpret.run(spec, [x, self.randn(8)], [torch.empty(4, 8, dtype=torch.float16)], [1e-6])
        with self.assertRaises(triton_interpret.Unsupported):  # a non-contiguous row
            triton_interpret.run(spec, [x.t(), self.randn(4)], [torch.empty(8, 4)], [1e-6])


if __name__ == "__main__":
    unittest.main()
