"""The Triton backend's compiler pieces (python/autokernel_triton) on CPU: a Triton without the
ahead-of-time path is refused with a line naming the file; a launch expression means the same in
Python (the interpreter's runs, the grid probes) and in the C++ the launcher evaluates; the
PTX parameter list is read as the launcher passes it.
"""
import pathlib
import subprocess
import tempfile
import unittest
from unittest import mock

import triton

from autokernel_triton import aot
from autokernel_triton.expr import Expr, ExprError, Names
from autokernel_triton.spec import SpecError

C_PROGRAM = r"""
#include <algorithm>
#include <cstdint>
#include <cstdio>
struct ak_tensor { void* data; int32_t dtype, ndim; int64_t shape[4], strides[4]; };
struct ak_call { double scalars[8]; };
struct Frame { const ak_call* call; bool bad = false; const ak_tensor* t_x; int64_t dim_M = 0; };
int64_t ak_div(Frame& f, int64_t a, int64_t b) { if (!b) { f.bad = true; return 0; } return a / b; }
int64_t ak_mod(Frame& f, int64_t a, int64_t b) { if (!b) { f.bad = true; return 0; } return a % b; }
int64_t ak_cdiv(Frame& f, int64_t a, int64_t b) { return ak_div(f, a + b - 1, b); }
double ak_fdiv(Frame& f, double a, double b) { if (b == 0) f.bad = true; return b == 0 ? 0.0 : a / b; }
int main() {
  ak_tensor x{nullptr, 1, 3, {6, 1000, 129, 0}, {129000, 129, 1, 0}};
  ak_call call{{0.5, 1.0}};
  Frame f{&call, false, &x};
  f.dim_M = x.shape[0];
  BODY
}
"""


class Tensor:
    shape = [6, 1000, 129]

    def stride(self):
        return [129000, 129, 1]


class TritonAot(unittest.TestCase):
    def test_a_triton_without_the_aot_path_is_refused(self):
        with mock.patch.object(triton, "__version__", "3.1.0"):
            with self.assertRaises(SpecError) as caught:
                aot.check_aot_path()
        self.assertIn("Triton 3.1.0 has no ahead-of-time path", caught.exception.message)
        aot.check_aot_path()  # this one has it

    def test_expressions_agree_in_python_and_cpp(self):
        names = Names({"x": "f.t_x"}, {"scale": 0, "causal": 1}, constexprs={"BLOCK": 64})
        names.dims["M"] = Expr("x.shape[0]", names)
        texts = ["cdiv(x.shape[1], BLOCK) * M", "x.shape[-1] // 16 + x.shape[2] % 16", "min(M, 4) - max(M, 7)",
                 "scale * 1.4426950408889634", "causal != 0", "x.stride[0] if M > 5 and not causal == 0 else 3",
                 "int64(x.stride[0] * 40000)", "float(M) / 4"]
        exprs = [Expr(t, names) for t in texts]
        env = {"tensors": {"x": Tensor()}, "scalars": {"scale": 0.5, "causal": 1.0}}
        expected = [e.evaluate(env) for e in exprs]
        prints = "\n".join(f'std::printf("%.9g\\n", double({e.to_c()}));' for e in exprs)
        with tempfile.TemporaryDirectory() as tmp:
            source, binary = pathlib.Path(tmp) / "e.cpp", pathlib.Path(tmp) / "e"
            source.write_text(C_PROGRAM.replace("BODY", prints))
            subprocess.run(["c++", "-std=c++17", str(source), "-o", str(binary)], check=True)
            got = [float(v) for v in subprocess.run([str(binary)], capture_output=True, text=True).stdout.split()]
        for text, want, value in zip(texts, expected, got):
            self.assertAlmostEqual(value, float(want), places=6, msg=text)
        self.assertTrue(exprs[6].wide)
        self.assertEqual(exprs[3].kind, "float")

    def test_bad_expressions_name_what_is_wrong(self):
        names = Names({"x": "f.t_x"}, {"eps": 0})
        for text, words in [("y.shape[0]", "y is not a tensor of the call"), ("z + 1", "unknown name z"), ("x.size[0]", "only TENSOR.shape"),
                            ("x + 1", "arithmetic on a tensor's pointer"), ("eps // 2", "integers"),
                            ("cdiv(1)", "functions are"), ("x.shape[7]", "constant in -4..3"), ("1 +", "not an expression")]:
            with self.assertRaises(ExprError) as caught:
                Expr(text, names)
            self.assertIn(words, str(caught.exception), text)

    def test_ptx_parameters_are_read_in_order(self):
        ptx = (".visible .entry k(\n .param .u64 .ptr .global .align 1 k_param_0,\n .param .u32 k_param_1,\n"
               " .param .f32 k_param_2,\n .param .u64 .ptr .global .align 1 k_param_3\n)\n.reqntid 128\n{")
        self.assertEqual(aot.ptx_param_bytes(ptx), [8, 4, 4, 8])


if __name__ == "__main__":
    unittest.main()
