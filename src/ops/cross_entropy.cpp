// cross_entropy: loss[r] = logsumexp(logits[r, :]) - logits[r, targets[r]];
// mean_loss[0] = mean_r loss[r].
// Inputs: logits[M, V] (problem dtype), targets[M] (i64, in [0, V)).
// Outputs: loss[M] (fp32), mean_loss[1] (fp32). No scalars.
#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "ops/common.h"
#include "ops/ops.h"

namespace ak {
namespace {

// "dominant": one logit per row stands this far above N(0, 1) noise. On even rows it is the
// target (a loss near zero), on odd rows another class (a loss near kDominantLogit), so the
// tolerance, which scales with the rms of the losses, stays meaningful for both.
constexpr double kDominantLogit = 30.0;

class CrossEntropy final : public Op {
 public:
  std::string_view name() const override { return "cross_entropy"; }
  std::string_view summary() const override {
    return "softmax cross-entropy per row against integer targets, and its mean";
  }
  std::vector<std::string> dim_names() const override { return {"M", "V"}; }

  Signature signature(const Problem& p, DType t) const override {
    const int64_t m = p.dims[0], v = p.dims[1];
    return {{{"logits", t, {m, v}}, {"targets", DType::I64, {m}}},
            {{"loss", DType::F32, {m}}, {"mean_loss", DType::F32, {1}}},
            {}};
  }

  Problem default_problem() const override { return {{8192, 32768}, {}}; }

  StageProblems stage_problems() const override {
    return {{{64, 1000}, {}},
            {{{256, 32000}, {}},
             {{128, 50257}, {}},
             {{32, 128256}, {}},
             {{512, 8192}, {}},
             {{1024, 4096}, {}},
             {{2048, 1000}, {}},
             {{300, 32768}, {}},
             {{4096, 512}, {}}},
            {{{64, 32000}, {}}},
            {{{1, 32000}, {}},
             {{7, 2}, {}},
             {{3, 17}, {}},
             {{33, 1000}, {}},
             {{5, 4095}, {}},
             {{2, 65536}, {}},
             {{129, 127}, {}}}};
  }

  // "extreme" overflows exp() in fp32 without the max subtraction; "near_constant" makes every
  // loss close to ln V, a sum of V nearly equal terms.
  std::vector<std::string> stability_cases() const override {
    return {"large", "extreme", "near_constant", "dominant"};
  }

  void generate(const Problem& p, std::string_view input_case, std::mt19937_64& rng,
                std::vector<Values>& in) const override {
    const int64_t m = p.dims[0], v = p.dims[1];
    std::uniform_int_distribution<int64_t> pick(0, v - 1);
    for (double& t : in[1].data) t = static_cast<double>(pick(rng));
    if (input_case != "dominant") {
      if (!ops::apply_rowwise_case(input_case, in[0], rng))
        throw Error(ErrorKind::Internal, "cross_entropy: unknown input case " + std::string(input_case));
      return;
    }
    ops::fill_normal(in[0], rng);
    for (int64_t r = 0; r < m; ++r) {
      const auto target = static_cast<int64_t>(in[1].data[r]);
      int64_t hot = target;
      if (r % 2 == 1 && v > 1) hot = (target + std::uniform_int_distribution<int64_t>(1, v - 1)(rng)) % v;
      in[0].data[r * v + hot] = kDominantLogit;
    }
  }

  void reference(const Problem& p, const std::vector<Values>& in, std::vector<Values>& out,
                 const std::vector<int64_t>&) const override {
    const int64_t m = p.dims[0], v = p.dims[1];
    const double* logits = in[0].data.data();
    const double* targets = in[1].data.data();
    double* loss = out[0].data.data();
    for (int64_t r = 0; r < m; ++r)
      if (!(targets[r] >= 0 && targets[r] < static_cast<double>(v)))
        throw Error(ErrorKind::Internal, "cross_entropy reference: target " + std::to_string(targets[r]) +
                                             " of row " + std::to_string(r) + " is outside [0, V)");
    parallel_for(m, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const double* row = logits + r * v;
        const double max = *std::max_element(row, row + v);
        double sum = 0.0;
        for (int64_t j = 0; j < v; ++j) sum += std::exp(row[j] - max);
        loss[r] = std::log(sum) + max - row[static_cast<int64_t>(targets[r])];
      }
    });
    double total = 0.0;
    for (int64_t r = 0; r < m; ++r) total += loss[r];
    out[1].data[0] = total / static_cast<double>(m);
  }

  // Per logit: max, subtract, exp, add; the log, target pick and mean are O(M).
  // The mean over rows is shared: a permutation of the rows leaves it as it was.
  UnitLayout units(const Problem& p) const override {
    const int64_t m = p.dims[0], v = p.dims[1];
    return {m, {v, 1}, {1, 0}};
  }

  double flops(const Problem& p) const override { return 4.0 * static_cast<double>(p.numel()); }
  double bytes(const Problem& p, DType t) const override {
    const int64_t m = p.dims[0];
    return ops::bytes_of(p.numel(), t) + ops::bytes_of(m, DType::I64) + ops::bytes_of(m + 1, DType::F32);
  }
};

}  // namespace

std::unique_ptr<Op> make_cross_entropy() {
  return std::make_unique<CrossEntropy>();
}

}  // namespace ak
