// rmsnorm: y[r, j] = x[r, j] / sqrt(mean_j(x[r, :]^2) + eps) * weight[j]
// Inputs: x[M, N], weight[N]. Outputs: y[M, N] (dtype of x). Scalars: eps.
#include <cmath>

#include "core/parallel.h"
#include "ops/common.h"
#include "ops/ops.h"

namespace ak {
namespace {

constexpr double kEps = 1e-6;

class RmsNorm final : public Op {
 public:
  std::string_view name() const override { return "rmsnorm"; }
  std::string_view summary() const override {
    return "root-mean-square norm over the last dim, scaled by weight";
  }
  std::vector<std::string> dim_names() const override { return {"M", "N"}; }

  Signature signature(const Problem& p, DType t) const override {
    const int64_t m = p.dims[0], n = p.dims[1];
    return {{{"x", t, {m, n}}, {"weight", t, {n}}}, {{"y", t, {m, n}}}, {kEps}};
  }

  Problem default_problem() const override { return {{8192, 8192}, {}}; }

  StageProblems stage_problems() const override { return ops::rowwise_stage_problems({{64, 11008}, {}}); }

  std::vector<std::string> stability_cases() const override { return {"large", "near_constant", "dominant"}; }

  void generate(const Problem&, std::string_view input_case, std::mt19937_64& rng,
                std::vector<Values>& in) const override {
    if (!ops::apply_rowwise_case(input_case, in[0], rng))
      throw Error(ErrorKind::Internal, "rmsnorm: unknown input case " + std::string(input_case));
    ops::fill_uniform(in[1], rng, 0.5, 1.5);
  }

  void reference(const Problem& p, const std::vector<Values>& in, std::vector<Values>& out,
                 const std::vector<int64_t>& rows) const override {
    const int64_t m = p.dims[0], n = p.dims[1];
    const double* x = in[0].data.data();
    const double* w = in[1].data.data();
    double* y = out[0].data.data();
    ops::for_each_row(m, rows, [&](int64_t r) {
      double sum_sq = 0.0;
      for (int64_t j = 0; j < n; ++j) sum_sq += x[r * n + j] * x[r * n + j];
      const double inv = 1.0 / std::sqrt(sum_sq / static_cast<double>(n) + kEps);
      for (int64_t j = 0; j < n; ++j) y[r * n + j] = x[r * n + j] * inv * w[j];
    });
  }

  UnitLayout units(const Problem& p) const override {
    const int64_t m = p.dims[0], n = p.dims[1];
    return {m, {n, 0}, {n}};
  }

  double flops(const Problem& p) const override { return 4.0 * static_cast<double>(p.numel()); }
  double bytes(const Problem& p, DType t) const override {
    return static_cast<double>(size_of(t)) *
           (2.0 * static_cast<double>(p.numel()) + static_cast<double>(p.dims[1]));
  }
};

}  // namespace

std::unique_ptr<Op> make_rmsnorm() {
  return std::make_unique<RmsNorm>();
}

}  // namespace ak
