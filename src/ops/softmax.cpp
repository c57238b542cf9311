// softmax: y[r, j] = exp(x[r, j]) / sum_k exp(x[r, k]), over the last dim.
// Inputs: x[M, N]. Outputs: y[M, N] (dtype of x). No scalars.
#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "ops/common.h"
#include "ops/ops.h"

namespace ak {
namespace {

class Softmax final : public Op {
 public:
  std::string_view name() const override { return "softmax"; }
  std::string_view summary() const override { return "softmax over the last dim"; }
  std::vector<std::string> dim_names() const override { return {"M", "N"}; }

  Signature signature(const Problem& p, DType t) const override {
    const int64_t m = p.dims[0], n = p.dims[1];
    return {{{"x", t, {m, n}}}, {{"y", t, {m, n}}}, {}};
  }

  Problem default_problem() const override { return {{8192, 8192}, {}}; }

  StageProblems stage_problems() const override { return ops::rowwise_stage_problems({{64, 32000}, {}}); }

  // "extreme" overflows exp() in fp32 unless the row maximum is taken out first.
  std::vector<std::string> stability_cases() const override {
    return {"large", "extreme", "near_constant", "dominant"};
  }

  void generate(const Problem&, std::string_view input_case, std::mt19937_64& rng,
                std::vector<Values>& in) const override {
    if (!ops::apply_rowwise_case(input_case, in[0], rng))
      throw Error(ErrorKind::Internal, "softmax: unknown input case " + std::string(input_case));
  }

  void reference(const Problem& p, const std::vector<Values>& in, std::vector<Values>& out,
                 const std::vector<int64_t>& rows) const override {
    const int64_t m = p.dims[0], n = p.dims[1];
    const double* x = in[0].data.data();
    double* y = out[0].data.data();
    ops::for_each_row(m, rows, [&](int64_t r) {
      const double* row = x + r * n;
      double* dst = y + r * n;
      const double max = *std::max_element(row, row + n);
      double sum = 0.0;
      for (int64_t j = 0; j < n; ++j) sum += dst[j] = std::exp(row[j] - max);
      for (int64_t j = 0; j < n; ++j) dst[j] /= sum;
    });
  }

  // Per element: max, subtract, exp, add to the sum, divide.
  UnitLayout units(const Problem& p) const override {
    const int64_t m = p.dims[0], n = p.dims[1];
    return {m, {n}, {n}};
  }

  double flops(const Problem& p) const override { return 5.0 * static_cast<double>(p.numel()); }
  double bytes(const Problem& p, DType t) const override { return ops::bytes_of(2 * p.numel(), t); }
};

}  // namespace

std::unique_ptr<Op> make_softmax() {
  return std::make_unique<Softmax>();
}

}  // namespace ak
