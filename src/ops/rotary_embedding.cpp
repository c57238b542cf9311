// rotary_embedding, the LLaMA "rotate_half" form: for i < D/2 and position s,
//   y[i]       = x[i] * cos[s, i] - x[i + D/2] * sin[s, i]
//   y[i + D/2] = x[i + D/2] * cos[s, i] + x[i] * sin[s, i]
// Inputs: x[B, H, S, D], cos[S, D/2], sin[S, D/2] (all in the problem dtype).
// Outputs: y[B, H, S, D]. No scalars. The tables hold cos/sin(s * theta_i), theta_i = 10000^(-2i/D).
// Param bshd (default 0; 1: x and y are held as [B, S, H, D] buffers, a model's projection before
// its transpose, and viewed as [B, H, S, D] with those buffers' strides).
#include <cmath>

#include "core/parallel.h"
#include "ops/common.h"
#include "ops/ops.h"

namespace ak {
namespace {

constexpr double kRopeBase = 10000.0;
// "large": |x| up to this, so |y| <= sqrt(2) * kLargeX stays under the fp16 maximum (65504).
constexpr double kLargeX = 3e4;

bool is_bshd(const Problem& p) {
  return p.param("bshd", 0.0) != 0.0;
}

class RotaryEmbedding final : public Op {
 public:
  std::string_view name() const override { return "rotary_embedding"; }
  std::string_view summary() const override {
    return "rotary position embedding (rotate_half form) with precomputed cos/sin tables";
  }
  std::vector<std::string> dim_names() const override { return {"B", "H", "S", "D"}; }
  std::vector<std::pair<std::string, double>> param_defaults() const override { return {{"bshd", 0.0}}; }

  void validate_rules(const Problem& p) const override {
    ops::require(*this, p.dims[3] % 2 == 0, "head dim D must be even, got '" + p.to_string() + "'");
    const int64_t bshd = ops::int_param(*this, p, "bshd", 0);
    ops::require(*this, bshd == 0 || bshd == 1, "bshd must be 0 or 1, got " + std::to_string(bshd));
  }

  Signature signature(const Problem& p, DType t) const override {
    const int64_t b = p.dims[0], h = p.dims[1], s = p.dims[2], d = p.dims[3];
    const int swap = is_bshd(p) ? 1 : -1;
    return {{{"x", t, {b, h, s, d}, swap}, {"cos", t, {s, d / 2}}, {"sin", t, {s, d / 2}}},
            {{"y", t, {b, h, s, d}, swap}},
            {}};
  }

  Problem default_problem() const override { return {{4, 32, 4096, 128}, {}}; }

  StageProblems stage_problems() const override {
    return {{{1, 2, 16, 64}, {}},
            {{{1, 32, 512, 128}, {}},
             {{2, 16, 256, 64}, {}},
             {{4, 8, 128, 128}, {}},
             {{1, 12, 1024, 64}, {}},
             {{2, 32, 64, 128}, {}},
             {{1, 40, 256, 128}, {}},
             {{8, 4, 128, 64}, {}},
             {{1, 8, 2048, 128}, {}}},
            {{{2, 8, 256, 128}, {}}},
            {{{1, 1, 1, 2}, {}},
             {{1, 1, 17, 64}, {}},
             {{2, 3, 33, 128}, {}},
             {{1, 2, 7, 96}, {}},
             {{1, 1, 1000, 130}, {}},
             {{3, 5, 129, 64}, {}},
             {{1, 32, 1, 128}, {}}}};
  }

  // With bshd every stage problem holds x and y as the timed one does.
  StageProblems stage_problems_like(const Problem& primary) const override {
    return ops::with_param_everywhere(stage_problems(), "bshd", is_bshd(primary));
  }

  std::vector<std::string> stability_cases() const override { return {"large"}; }

  void generate(const Problem& p, std::string_view input_case, std::mt19937_64& rng,
                std::vector<Values>& in) const override {
    if (input_case == kRandomCase) {
      ops::fill_normal(in[0], rng);
    } else if (input_case == "large") {
      ops::fill_uniform(in[0], rng, -kLargeX, kLargeX);
    } else {
      throw Error(ErrorKind::Internal, "rotary_embedding: unknown input case " + std::string(input_case));
    }
    const int64_t s_len = p.dims[2], half = p.dims[3] / 2;
    const double d = static_cast<double>(p.dims[3]);
    for (int64_t s = 0; s < s_len; ++s)
      for (int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(s) * std::pow(kRopeBase, -2.0 * static_cast<double>(i) / d);
        in[1].data[s * half + i] = std::cos(angle);
        in[2].data[s * half + i] = std::sin(angle);
      }
  }

  void reference(const Problem& p, const std::vector<Values>& in, std::vector<Values>& out,
                 const std::vector<int64_t>& rows) const override {
    const int64_t heads = p.dims[1], s_len = p.dims[2], d = p.dims[3], half = d / 2;
    const bool bshd = is_bshd(p);
    const double* x = in[0].data.data();
    const double* cos = in[1].data.data();
    const double* sin = in[2].data.data();
    double* y = out[0].data.data();
    ops::for_each_row(p.dims[0] * heads * s_len, rows, [&](int64_t r) {  // r: a row of the buffers' order
      const int64_t position = bshd ? r / heads % s_len : r % s_len;
      const double* c = cos + position * half;
      const double* sn = sin + position * half;
      const double* src = x + r * d;
      double* dst = y + r * d;
      for (int64_t i = 0; i < half; ++i) {
        dst[i] = src[i] * c[i] - src[i + half] * sn[i];
        dst[i + half] = src[i + half] * c[i] + src[i] * sn[i];
      }
    });
  }

  // A unit is one (batch, head) plane: cos and sin, indexed by position, are shared. `count` of
  // them side by side are a problem of `count` batches of one head. With bshd a head is spread
  // over its batch's buffer, so a unit is a whole batch.
  Problem units_problem(const Problem& p, int64_t count) const override {
    return {{count, is_bshd(p) ? p.dims[1] : 1, p.dims[2], p.dims[3]}, p.params};
  }
  UnitLayout units(const Problem& p) const override {
    const int64_t b = p.dims[0], h = p.dims[1], s = p.dims[2], d = p.dims[3];
    if (is_bshd(p)) return {b, {h * s * d, 0, 0}, {h * s * d}};
    return {b * h, {s * d, 0, 0}, {s * d}};
  }

  // Two multiplies and an add per output element.
  double flops(const Problem& p) const override { return 3.0 * static_cast<double>(p.numel()); }
  double bytes(const Problem& p, DType t) const override {
    return ops::bytes_of(2 * p.numel() + p.dims[2] * p.dims[3], t);
  }
};

}  // namespace

std::unique_ptr<Op> make_rotary_embedding() {
  return std::make_unique<RotaryEmbedding>();
}

}  // namespace ak
