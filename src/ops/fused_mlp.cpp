// fused_mlp, the SwiGLU feed-forward block of LLaMA-style models:
//   y = (silu(x w_gate^T) * (x w_up^T)) w_down^T,   silu(g) = g / (1 + exp(-g)).
// Inputs: x[M, D], w_gate[F, D], w_up[F, D], w_down[D, F] (weights as torch.nn.Linear stores them).
// Outputs: y[M, D]. No scalars.
#include <cmath>

#include "ops/common.h"
#include "ops/ops.h"

namespace ak {
namespace {

// "large_gate": gate pre-activations ~ N(0, kLargeGateStd^2) reach +-200, so silu saturates at
// both ends and a silu written as g * e^g / (1 + e^g) overflows to inf / inf even in fp32.
constexpr double kLargeGateStd = 40.0;
// "large": x ~ N(0, kLargeXStd^2), so the intermediate silu(g) * u reaches thousands (still far
// from the fp16 maximum) and y has magnitudes in the hundreds.
constexpr double kLargeXStd = 16.0;

double silu(double g) {
  return g / (1.0 + std::exp(-g));
}

class FusedMlp final : public Op {
 public:
  std::string_view name() const override { return "fused_mlp"; }
  std::string_view summary() const override { return "SwiGLU MLP: (silu(x w_gate^T) * (x w_up^T)) w_down^T"; }
  std::vector<std::string> dim_names() const override { return {"M", "D", "F"}; }

  Signature signature(const Problem& p, DType t) const override {
    const int64_t m = p.dims[0], d = p.dims[1], f = p.dims[2];
    // h = silu(x w_gate^T) * (x w_up^T), in x's dtype, from the up launch to the down launch.
    return {{{"x", t, {m, d}}, {"w_gate", t, {f, d}}, {"w_up", t, {f, d}}, {"w_down", t, {d, f}}},
            {{"y", t, {m, d}}},
            {},
            TensorSpec{"h", t, {m, f}}};
  }

  Problem default_problem() const override { return {{4096, 4096, 11008}, {}}; }

  // Sweep problems keep 6*M*D*F under ~0.2 GFLOP so the float64 reference stays cheap in CI;
  // F is about 8/3 D as in LLaMA where the shape allows.
  StageProblems stage_problems() const override {
    return {{{16, 64, 176}, {}},
            {{{64, 256, 688}, {}},
             {{32, 512, 1376}, {}},
             {{128, 256, 704}, {}},
             {{16, 1024, 1536}, {}},
             {{8, 2048, 1408}, {}},
             {{256, 192, 512}, {}},
             {{48, 384, 1024}, {}},
             {{512, 128, 344}, {}}},
            {{{64, 256, 688}, {}}, {{32, 512, 1376}, {}}},
            {{{1, 1, 1}, {}},
             {{1, 512, 1376}, {}},
             {{7, 33, 127}, {}},
             {{33, 7, 1}, {}},
             {{127, 65, 33}, {}},
             {{1000, 17, 40}, {}},
             {{5, 129, 1000}, {}}}};
  }

  std::vector<std::string> stability_cases() const override { return {"large_gate", "large"}; }

  // Weights ~ N(0, 1/fan_in), so x w^T keeps the scale of x.
  void generate(const Problem& p, std::string_view input_case, std::mt19937_64& rng,
                std::vector<Values>& in) const override {
    const double d = static_cast<double>(p.dims[1]), f = static_cast<double>(p.dims[2]);
    double x_std = 1.0, gate_std = 1.0;
    if (input_case == "large_gate") {
      gate_std = kLargeGateStd;
    } else if (input_case == "large") {
      x_std = kLargeXStd;
    } else if (input_case != kRandomCase) {
      throw Error(ErrorKind::Internal, "fused_mlp: unknown input case " + std::string(input_case));
    }
    ops::fill_normal(in[0], rng, 0.0, x_std);
    ops::fill_normal(in[1], rng, 0.0, gate_std / std::sqrt(d));
    ops::fill_normal(in[2], rng, 0.0, 1.0 / std::sqrt(d));
    ops::fill_normal(in[3], rng, 0.0, 1.0 / std::sqrt(f));
  }

  // Per row: the F gate and up projections (dot products over contiguous weight rows), the
  // activation, then the D down projections (dot products over contiguous rows of w_down).
  void reference(const Problem& p, const std::vector<Values>& in, std::vector<Values>& out,
                 const std::vector<int64_t>& rows) const override {
    const int64_t d = p.dims[1], f = p.dims[2];
    const double* x = in[0].data.data();
    const double* w_gate = in[1].data.data();
    const double* w_up = in[2].data.data();
    const double* w_down = in[3].data.data();
    double* y = out[0].data.data();
    ops::for_each_row(p.dims[0], rows, [&](int64_t r) {
      const double* x_row = x + r * d;
      std::vector<double> hidden(static_cast<size_t>(f));
      for (int64_t j = 0; j < f; ++j) {
        double gate = 0.0, up = 0.0;
        for (int64_t c = 0; c < d; ++c) {
          gate += x_row[c] * w_gate[j * d + c];
          up += x_row[c] * w_up[j * d + c];
        }
        hidden[j] = silu(gate) * up;
      }
      for (int64_t c = 0; c < d; ++c) {
        double sum = 0.0;
        for (int64_t j = 0; j < f; ++j) sum += hidden[j] * w_down[c * f + j];
        y[r * d + c] = sum;
      }
    });
  }
  bool row_sampling() const override { return true; }

  // Three matrix products of 2*M*D*F each, and silu (exp, add, divide, multiply) times up per
  // hidden element.
  UnitLayout units(const Problem& p) const override {
    const int64_t m = p.dims[0], d = p.dims[1];
    return {m, {d, 0, 0, 0}, {d}};
  }

  double flops(const Problem& p) const override {
    const double m = static_cast<double>(p.dims[0]), d = static_cast<double>(p.dims[1]),
                 f = static_cast<double>(p.dims[2]);
    return 6.0 * m * d * f + 5.0 * m * f;
  }
  double bytes(const Problem& p, DType t) const override {
    const int64_t m = p.dims[0], d = p.dims[1], f = p.dims[2];
    return ops::bytes_of(2 * m * d + 3 * d * f, t);
  }
};

}  // namespace

std::unique_ptr<Op> make_fused_mlp() {
  return std::make_unique<FusedMlp>();
}

}  // namespace ak
