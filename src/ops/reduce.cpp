// reduce: y[r] = sum_j x[r, j] (sum over the last dim).
// Inputs: x[M, N]. Outputs: y[M] (dtype of x). No scalars.
#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "ops/common.h"
#include "ops/ops.h"

namespace ak {
namespace {

// The adversarial cases keep every sum well inside fp16 (max 65504), since y is stored in the
// problem's dtype, while making a half-precision accumulator fail:
//   large_sum:    positive values whose row sums sit near kLargeSum, where an fp16 ulp is 16;
//   cancellation: adjacent pairs +L, -L (|L| up to 1000) plus noise, so the sum is mostly noise;
//   dominant:     one element of +-kDominant per row, the rest small positives it would swallow.
constexpr double kLargeSum = 2e4;
constexpr double kPairMagnitude = 1000.0;
constexpr double kNoiseSumStd = 2000.0;
constexpr double kDominant = 1e4;
constexpr double kSmallSum = 16384.0;

class Reduce final : public Op {
 public:
  std::string_view name() const override { return "reduce"; }
  std::string_view summary() const override { return "sum over the last dim"; }
  std::vector<std::string> dim_names() const override { return {"M", "N"}; }

  Signature signature(const Problem& p, DType t) const override {
    const int64_t m = p.dims[0], n = p.dims[1];
    return {{{"x", t, {m, n}}}, {{"y", t, {m}}}, {}};
  }

  Problem default_problem() const override { return {{16384, 4096}, {}}; }

  StageProblems stage_problems() const override { return ops::rowwise_stage_problems({{16384, 64}, {}}); }

  std::vector<std::string> stability_cases() const override {
    return {"large_sum", "cancellation", "dominant"};
  }

  void generate(const Problem& p, std::string_view input_case, std::mt19937_64& rng,
                std::vector<Values>& in) const override {
    const int64_t m = p.dims[0], n = p.dims[1];
    const double count = static_cast<double>(n);
    std::vector<double>& x = in[0].data;
    if (input_case == kRandomCase) {
      ops::fill_normal(in[0], rng);
    } else if (input_case == "large_sum") {
      const double mean = kLargeSum / count;
      ops::fill_normal(in[0], rng, mean, mean / 8.0);
    } else if (input_case == "cancellation") {
      std::uniform_real_distribution<double> magnitude(-kPairMagnitude, kPairMagnitude);
      std::normal_distribution<double> noise(0.0, std::min(50.0, kNoiseSumStd / std::sqrt(count)));
      for (int64_t r = 0; r < m; ++r) {
        double* row = x.data() + r * n;
        for (int64_t j = 0; j + 1 < n; j += 2) {
          const double pair = magnitude(rng);
          row[j] = pair + noise(rng);
          row[j + 1] = -pair + noise(rng);
        }
        if (n % 2) row[n - 1] = noise(rng);
      }
    } else if (input_case == "dominant") {
      ops::fill_uniform(in[0], rng, 0.0, std::min(1.0, 2.0 * kSmallSum / count));
      std::uniform_int_distribution<int64_t> pick(0, n - 1);
      std::bernoulli_distribution negative(0.5);
      for (int64_t r = 0; r < m; ++r) x[r * n + pick(rng)] = negative(rng) ? -kDominant : kDominant;
    } else {
      throw Error(ErrorKind::Internal, "reduce: unknown input case " + std::string(input_case));
    }
  }

  void reference(const Problem& p, const std::vector<Values>& in, std::vector<Values>& out,
                 const std::vector<int64_t>&) const override {
    const int64_t m = p.dims[0], n = p.dims[1];
    const double* x = in[0].data.data();
    double* y = out[0].data.data();
    parallel_for(m, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        double sum = 0.0;
        for (int64_t j = 0; j < n; ++j) sum += x[r * n + j];
        y[r] = sum;
      }
    });
  }

  UnitLayout units(const Problem& p) const override {
    const int64_t m = p.dims[0], n = p.dims[1];
    return {m, {n}, {1}};
  }

  double flops(const Problem& p) const override { return static_cast<double>(p.numel()); }
  double bytes(const Problem& p, DType t) const override { return ops::bytes_of(p.numel() + p.dims[0], t); }
};

}  // namespace

std::unique_ptr<Op> make_reduce() {
  return std::make_unique<Reduce>();
}

}  // namespace ak
