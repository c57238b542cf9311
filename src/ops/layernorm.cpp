// layernorm: y[r, j] = (x[r, j] - mean_r) / sqrt(var_r + eps) * weight[j] + bias[j], where mean_r and
// the biased variance var_r are taken over the last dim (as torch.nn.LayerNorm does).
// Inputs: x[M, N], weight[N], bias[N]. Outputs: y[M, N] (dtype of x). Scalars: eps.
#include <cmath>

#include "core/parallel.h"
#include "ops/common.h"
#include "ops/ops.h"

namespace ak {
namespace {

constexpr double kEps = 1e-5;

class LayerNorm final : public Op {
 public:
  std::string_view name() const override { return "layernorm"; }
  std::string_view summary() const override {
    return "layer norm over the last dim (mean and variance), scaled by weight, shifted by bias";
  }
  std::vector<std::string> dim_names() const override { return {"M", "N"}; }

  Signature signature(const Problem& p, DType t) const override {
    const int64_t m = p.dims[0], n = p.dims[1];
    return {{{"x", t, {m, n}}, {"weight", t, {n}}, {"bias", t, {n}}}, {{"y", t, {m, n}}}, {kEps}};
  }

  Problem default_problem() const override { return {{8192, 8192}, {}}; }

  StageProblems stage_problems() const override { return ops::rowwise_stage_problems({{512, 1600}, {}}); }

  // "near_constant" is what breaks var = E[x^2] - E[x]^2: the difference cancels to noise.
  std::vector<std::string> stability_cases() const override { return {"large", "near_constant", "dominant"}; }

  void generate(const Problem&, std::string_view input_case, std::mt19937_64& rng,
                std::vector<Values>& in) const override {
    if (input_case == "near_constant") {
      fill_near_constant(in[0], rng);
    } else if (!ops::apply_rowwise_case(input_case, in[0], rng)) {
      throw Error(ErrorKind::Internal, "layernorm: unknown input case " + std::string(input_case));
    }
    ops::fill_uniform(in[1], rng, 0.5, 1.5);
    ops::fill_uniform(in[2], rng, -0.5, 0.5);
  }

  // Two passes (mean, then the centred sum of squares), so the reference has no cancellation.
  void reference(const Problem& p, const std::vector<Values>& in, std::vector<Values>& out,
                 const std::vector<int64_t>& rows) const override {
    const int64_t m = p.dims[0], n = p.dims[1];
    const double* x = in[0].data.data();
    const double* w = in[1].data.data();
    const double* b = in[2].data.data();
    double* y = out[0].data.data();
    const double count = static_cast<double>(n);
    ops::for_each_row(m, rows, [&](int64_t r) {
      const double* row = x + r * n;
      double sum = 0.0;
      for (int64_t j = 0; j < n; ++j) sum += row[j];
      const double mean = sum / count;
      double sum_sq = 0.0;
      for (int64_t j = 0; j < n; ++j) sum_sq += (row[j] - mean) * (row[j] - mean);
      const double inv = 1.0 / std::sqrt(sum_sq / count + kEps);
      for (int64_t j = 0; j < n; ++j) y[r * n + j] = (row[j] - mean) * inv * w[j] + b[j];
    });
  }

  // Per element: sum, centre, square and add, normalise, scale, shift.
  UnitLayout units(const Problem& p) const override {
    const int64_t m = p.dims[0], n = p.dims[1];
    return {m, {n, 0, 0}, {n}};
  }

  double flops(const Problem& p) const override { return 7.0 * static_cast<double>(p.numel()); }
  double bytes(const Problem& p, DType t) const override {
    return ops::bytes_of(2 * p.numel() + 2 * p.dims[1], t);
  }

 private:
  // Rows c + N(0, kNoise^2) with |c| in [0.5, 2]. The shared near_constant case (|c| up to ~4 with
  // 1e-3 noise) is too hard for fp32: one rounding of the mean, ulp(c) * rstd, alone is about the
  // fp32 allowance. With |c| / noise <= 100 a two-pass fp32 kernel keeps a 10x margin while
  // E[x^2] - E[x]^2 in fp32 still misses by over 1e-3.
  static void fill_near_constant(Values& x, std::mt19937_64& rng) {
    constexpr double kNoise = 0.02;
    const int64_t cols = x.spec.shape.back(), rows = x.spec.numel() / cols;
    std::uniform_real_distribution<double> offset(0.5, 2.0);
    std::bernoulli_distribution negative(0.5);
    ops::fill_normal(x, rng, 0.0, kNoise);
    for (int64_t r = 0; r < rows; ++r) {
      const double c = negative(rng) ? -offset(rng) : offset(rng);
      for (int64_t j = 0; j < cols; ++j) x.data[r * cols + j] += c;
    }
  }
};

}  // namespace

std::unique_ptr<Op> make_layernorm() {
  return std::make_unique<LayerNorm>();
}

}  // namespace ak
