// matmul: C[i, j] = sum_k A[i, k] * B[k, j].
// Inputs: A[M, K], B[K, N]. Outputs: C[M, N] (dtype of A). No scalars. Param b_nk (default 0):
// 1 holds B as a Linear's weight, [N, K] contiguous, which the kernel sees as the view B[K, N]
// with strides (1, K) (no copy of the weight on each call).
#include <algorithm>
#include <cmath>

#include "ops/common.h"
#include "ops/ops.h"

namespace ak {
namespace {

// "large": A spans most of fp16's range while B is scaled so that C keeps this standard deviation:
// even a six-sigma element stays far below the fp16 maximum (65504), but a half-precision
// accumulator (ulp 2 at 4096) loses the low bits of every partial sum.
constexpr double kLargeA = 2e4;
constexpr double kLargeOutputStd = 3000.0;
// "mixed_scale": rows of A and columns of B scaled by 2^e, e uniform in [-kMaxScaleExp, kMaxScaleExp].
constexpr int kMaxScaleExp = 5;

class Matmul final : public Op {
 public:
  std::string_view name() const override { return "matmul"; }
  std::string_view summary() const override { return "matrix product C = A B (A is MxK, B is KxN)"; }
  std::vector<std::string> dim_names() const override { return {"M", "N", "K"}; }
  std::vector<std::pair<std::string, double>> param_defaults() const override { return {{"b_nk", 0.0}}; }

  void validate_rules(const Problem& p) const override {
    const int64_t b_nk = ops::int_param(*this, p, "b_nk", 0);
    ops::require(*this, b_nk == 0 || b_nk == 1, "b_nk must be 0 or 1, got " + std::to_string(b_nk));
  }

  Signature signature(const Problem& p, DType t) const override {
    const int64_t m = p.dims[0], n = p.dims[1], k = p.dims[2];
    return {{{"A", t, {m, k}}, {"B", t, {k, n}, b_nk(p) ? 0 : -1}}, {{"C", t, {m, n}}}, {}};
  }

  Problem default_problem() const override { return {{4096, 4096, 4096}, {}}; }

  // Sweep problems keep 2*M*N*K under ~0.2 GFLOP so the float64 reference stays cheap in CI.
  StageProblems stage_problems() const override {
    return {{{64, 64, 64}, {}},
            {{{256, 256, 256}, {}},
             {{512, 512, 256}, {}},
             {{128, 1024, 512}, {}},
             {{32, 4096, 512}, {}},
             {{16, 4096, 1024}, {}},
             {{1024, 128, 512}, {}},
             {{256, 768, 384}, {}},
             {{64, 1536, 768}, {}},
             {{384, 384, 384}, {}}},
            {{{256, 256, 1024}, {}}, {{64, 512, 4096}, {}}},
            {{{1, 1, 1}, {}},
             {{1, 2048, 1000}, {}},
             {{7, 33, 127}, {}},
             {{127, 7, 33}, {}},
             {{33, 1000, 7}, {}},
             {{1000, 1, 33}, {}},
             {{129, 65, 257}, {}},
             {{1000, 127, 1}, {}}}};
  }

  // With b_nk every stage problem holds B as the timed one does.
  StageProblems stage_problems_like(const Problem& primary) const override {
    return ops::with_param_everywhere(stage_problems(), "b_nk", b_nk(primary));
  }

  std::vector<std::string> stability_cases() const override { return {"large", "mixed_scale"}; }

  void generate(const Problem& p, std::string_view input_case, std::mt19937_64& rng,
                std::vector<Values>& in) const override {
    const int64_t k = p.dims[2];
    if (input_case == kRandomCase) {
      ops::fill_normal(in[0], rng);
      ops::fill_normal(in[1], rng);
    } else if (input_case == "large") {
      ops::fill_uniform(in[0], rng, -kLargeA, kLargeA);
      const double a_std = kLargeA / std::sqrt(3.0);
      ops::fill_normal(in[1], rng, 0.0, kLargeOutputStd / (a_std * std::sqrt(static_cast<double>(k))));
    } else if (input_case == "mixed_scale") {
      ops::fill_normal(in[0], rng);
      ops::fill_normal(in[1], rng, 0.0, 1.0 / std::sqrt(static_cast<double>(k)));
      scale_rows_and_columns(p, rng, in);
    } else {
      throw Error(ErrorKind::Internal, "matmul: unknown input case " + std::string(input_case));
    }
  }

  // Row i of C needs row i of A and all of B; the loops walk B in its buffer's order (k then j
  // for [K, N]; j then k, a dot product per output, for b_nk's [N, K]).
  void reference(const Problem& p, const std::vector<Values>& in, std::vector<Values>& out,
                 const std::vector<int64_t>& rows) const override {
    const int64_t m = p.dims[0], n = p.dims[1], k = p.dims[2];
    const double* a = in[0].data.data();
    const double* b = in[1].data.data();
    double* c = out[0].data.data();
    const bool nk = b_nk(p);
    ops::for_each_row(m, rows, [&](int64_t i) {
      double* c_row = c + i * n;
      const double* a_row = a + i * k;
      if (nk) {
        for (int64_t j = 0; j < n; ++j) {
          const double* b_col = b + j * k;
          double sum = 0.0;
          for (int64_t kk = 0; kk < k; ++kk) sum += a_row[kk] * b_col[kk];
          c_row[j] = sum;
        }
        return;
      }
      std::fill(c_row, c_row + n, 0.0);
      for (int64_t kk = 0; kk < k; ++kk) {
        const double a_ik = a_row[kk];
        const double* b_row = b + kk * n;
        for (int64_t j = 0; j < n; ++j) c_row[j] += a_ik * b_row[j];
      }
    });
  }
  bool row_sampling() const override { return true; }

  UnitLayout units(const Problem& p) const override {
    const int64_t m = p.dims[0], n = p.dims[1], k = p.dims[2];
    return {m, {k, 0}, {n}};
  }

  double flops(const Problem& p) const override { return 2.0 * static_cast<double>(p.numel()); }
  double bytes(const Problem& p, DType t) const override {
    const int64_t m = p.dims[0], n = p.dims[1], k = p.dims[2];
    return ops::bytes_of(m * k + k * n + m * n, t);
  }

 private:
  // Powers of two, so the scaling itself adds no rounding in any dtype.
  static void scale_rows_and_columns(const Problem& p, std::mt19937_64& rng, std::vector<Values>& in) {
    const int64_t m = p.dims[0], n = p.dims[1], k = p.dims[2];
    std::uniform_int_distribution<int> exponent(-kMaxScaleExp, kMaxScaleExp);
    for (int64_t i = 0; i < m; ++i) {
      const double s = std::ldexp(1.0, exponent(rng));
      for (int64_t kk = 0; kk < k; ++kk) in[0].data[i * k + kk] *= s;
    }
    const bool nk = b_nk(p);
    for (int64_t j = 0; j < n; ++j) {
      const double s = std::ldexp(1.0, exponent(rng));
      for (int64_t kk = 0; kk < k; ++kk) in[1].data[nk ? j * k + kk : kk * n + j] *= s;
    }
  }

  static bool b_nk(const Problem& p) { return p.param("b_nk", 0.0) != 0.0; }
};

}  // namespace

std::unique_ptr<Op> make_matmul() {
  return std::make_unique<Matmul>();
}

}  // namespace ak
