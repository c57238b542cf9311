// flash_attention: o[b, h, i] = sum_j softmax_j(scale * q[b, h, i] . k[b, g, j]) v[b, g, j], where
// g = h / (H / kv_heads) is the key/value head of query head h (grouped-query attention) and, when
// causal, keys j > i are masked out (q and k have the same length S).
// Inputs: q[B, H, S, D], k[B, Hkv, S, D], v[B, Hkv, S, D]. Outputs: o[B, H, S, D].
// Scalars: scale (= 1/sqrt(D)), causal (0 or 1). Params: causal (default 1), kv_heads (0 = H),
// bshd (default 0; 1: q, k, v and o are held as [B, S, H, D] buffers, the layout of a model's
// projections before their transpose, and viewed as [B, H, S, D] with those buffers' strides).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/ops.h"

namespace ak {
namespace {

// "large_logits": q and k ~ N(0, kLargeLogitStd), so scale * q.k has standard deviation
// kLargeLogitStd and reaches about +-60 (exp(60) needs the running max even in fp32).
constexpr double kLargeLogitStd = 15.0;
// "dominant_key": each query is a copy of one allowed key scaled to give it this logit, so the
// softmax is nearly one-hot at a random position (a masking or indexing slip shows at once).
constexpr double kDominantLogit = 20.0;

Problem attention(std::vector<int64_t> dims, int causal, int64_t kv_heads = 0) {
  Problem p{std::move(dims), {{"causal", static_cast<double>(causal)}}};
  if (kv_heads) p.params["kv_heads"] = static_cast<double>(kv_heads);
  return p;
}

bool is_causal(const Problem& p) {
  return p.param("causal", 1.0) != 0.0;
}

int64_t kv_heads_of(const Problem& p) {
  const auto kv = static_cast<int64_t>(p.param("kv_heads", 0.0));
  return kv == 0 ? p.dims[1] : kv;
}

bool is_bshd(const Problem& p) {
  return p.param("bshd", 0.0) != 0.0;
}

// Where each row (b, h, i) of a [B, heads, S, D] tensor starts in its buffer, by layout, and which
// row of the buffer's order is which.
struct RowLayout {
  int64_t heads, seq, dim;
  bool bshd;
  int64_t offset(int64_t b, int64_t h, int64_t i) const {
    return (bshd ? (b * seq + i) * heads + h : (b * heads + h) * seq + i) * dim;
  }
  void place(int64_t r, int64_t& b, int64_t& h, int64_t& i) const {
    b = r / (seq * heads);
    h = bshd ? r % heads : r / seq % heads;
    i = bshd ? r / heads % seq : r % seq;
  }
};

class FlashAttention final : public Op {
 public:
  std::string_view name() const override { return "flash_attention"; }
  std::string_view summary() const override {
    return "scaled dot-product attention, causal or not, with grouped key/value heads";
  }
  std::vector<std::string> dim_names() const override { return {"B", "H", "S", "D"}; }
  std::vector<std::pair<std::string, double>> param_defaults() const override {
    return {{"causal", 1.0}, {"kv_heads", 0.0}, {"bshd", 0.0}};
  }

  void validate_rules(const Problem& p) const override {
    const int64_t causal = ops::int_param(*this, p, "causal", 1);
    ops::require(*this, causal == 0 || causal == 1, "causal must be 0 or 1, got " + std::to_string(causal));
    const int64_t kv = ops::int_param(*this, p, "kv_heads", 0);
    ops::require(*this, kv >= 0, "kv_heads must be positive (or 0 for H), got " + std::to_string(kv));
    ops::require(
        *this, p.dims[1] % kv_heads_of(p) == 0,
        "kv_heads " + std::to_string(kv) + " must divide the query heads H = " + std::to_string(p.dims[1]));
    const int64_t bshd = ops::int_param(*this, p, "bshd", 0);
    ops::require(*this, bshd == 0 || bshd == 1, "bshd must be 0 or 1, got " + std::to_string(bshd));
  }

  Signature signature(const Problem& p, DType t) const override {
    const int64_t b = p.dims[0], h = p.dims[1], s = p.dims[2], d = p.dims[3], kv = kv_heads_of(p);
    const int swap = is_bshd(p) ? 1 : -1;
    return {{{"q", t, {b, h, s, d}, swap}, {"k", t, {b, kv, s, d}, swap}, {"v", t, {b, kv, s, d}, swap}},
            {{"o", t, {b, h, s, d}, swap}},
            {1.0 / std::sqrt(static_cast<double>(d)), is_causal(p) ? 1.0 : 0.0}};
  }

  Problem default_problem() const override { return attention({4, 32, 4096, 128}, 1); }

  // Sweep problems keep the attention FLOPs under ~0.2 G so the float64 reference stays cheap in CI.
  StageProblems stage_problems() const override {
    return {
        attention({1, 2, 64, 64}, 1),
        {attention({1, 4, 256, 64}, 1), attention({1, 4, 256, 64}, 0), attention({2, 4, 128, 128}, 0),
         attention({1, 8, 256, 128}, 1), attention({1, 8, 128, 64}, 1, 2), attention({2, 2, 512, 64}, 1),
         attention({1, 1, 512, 128}, 0), attention({4, 4, 64, 128}, 0), attention({1, 16, 128, 128}, 1, 4),
         attention({1, 4, 384, 64}, 0, 1)},
        {attention({1, 4, 256, 64}, 1), attention({1, 4, 256, 128}, 0, 2)},
        {attention({1, 1, 1, 64}, 0), attention({1, 1, 1, 128}, 1), attention({1, 2, 17, 64}, 1),
         attention({2, 3, 17, 128}, 0), attention({1, 4, 33, 128}, 1, 2), attention({1, 2, 129, 64}, 1),
         attention({3, 1, 255, 64}, 0), attention({1, 8, 100, 128}, 1, 1), attention({2, 2, 65, 64}, 0, 1)}};
  }

  // With bshd every stage problem holds the tensors as the timed one does.
  StageProblems stage_problems_like(const Problem& primary) const override {
    return ops::with_param_everywhere(stage_problems(), "bshd", is_bshd(primary));
  }

  std::vector<std::string> stability_cases() const override { return {"large_logits", "dominant_key"}; }

  void generate(const Problem& p, std::string_view input_case, std::mt19937_64& rng,
                std::vector<Values>& in) const override {
    if (input_case == kRandomCase) {
      for (auto& tensor : in) ops::fill_normal(tensor, rng);
    } else if (input_case == "large_logits") {
      ops::fill_normal(in[0], rng, 0.0, std::sqrt(kLargeLogitStd));
      ops::fill_normal(in[1], rng, 0.0, std::sqrt(kLargeLogitStd));
      ops::fill_normal(in[2], rng);
    } else if (input_case == "dominant_key") {
      ops::fill_normal(in[1], rng);
      ops::fill_normal(in[2], rng);
      copy_dominant_keys(p, rng, in);
    } else {
      throw Error(ErrorKind::Internal, "flash_attention: unknown input case " + std::string(input_case));
    }
  }

  void reference(const Problem& p, const std::vector<Values>& in, std::vector<Values>& out,
                 const std::vector<int64_t>& rows) const override {
    const int64_t heads = p.dims[1], s_len = p.dims[2], d = p.dims[3];
    const int64_t kv = kv_heads_of(p), group = heads / kv;
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    const bool causal = is_causal(p);
    const RowLayout query_rows{heads, s_len, d, is_bshd(p)}, key_rows{kv, s_len, d, is_bshd(p)};
    const double* q = in[0].data.data();
    const double* k = in[1].data.data();
    const double* v = in[2].data.data();
    double* o = out[0].data.data();
    ops::for_each_row(p.dims[0] * heads * s_len, rows, [&](int64_t r) {  // r: a row of the buffers' order
      int64_t b, h, i;
      query_rows.place(r, b, h, i);
      const int64_t n_keys = causal ? i + 1 : s_len;
      const double* q_row = q + r * d;
      std::vector<double> score(static_cast<size_t>(n_keys));
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < n_keys; ++j) {
        const double* k_row = k + key_rows.offset(b, h / group, j);
        double dot = 0.0;
        for (int64_t c = 0; c < d; ++c) dot += q_row[c] * k_row[c];
        score[j] = dot * scale;
        max = std::max(max, score[j]);
      }
      double* o_row = o + r * d;
      std::fill(o_row, o_row + d, 0.0);
      double sum = 0.0;
      for (int64_t j = 0; j < n_keys; ++j) {
        const double weight = std::exp(score[j] - max);
        const double* v_row = v + key_rows.offset(b, h / group, j);
        sum += weight;
        for (int64_t c = 0; c < d; ++c) o_row[c] += weight * v_row[c];
      }
      for (int64_t c = 0; c < d; ++c) o_row[c] /= sum;
    });
  }
  bool row_sampling() const override { return true; }

  // A unit is one (batch, key/value head) pair with the query heads that share it: G = H / kv
  // consecutive heads of q and o, one head of k and v. `count` of them side by side are a problem
  // of `count` batches of G heads over one key/value head. With bshd a head is spread over its
  // batch's buffer, so a unit is a whole batch: `count` batches of every head.
  Problem units_problem(const Problem& p, int64_t count) const override {
    if (is_bshd(p)) return {{count, p.dims[1], p.dims[2], p.dims[3]}, p.params};
    Problem part{{count, p.dims[1] / kv_heads_of(p), p.dims[2], p.dims[3]}, p.params};
    part.params["kv_heads"] = 1;
    return part;
  }
  UnitLayout units(const Problem& p) const override {
    const int64_t b = p.dims[0], h = p.dims[1], s = p.dims[2], d = p.dims[3], kv = kv_heads_of(p);
    if (is_bshd(p)) return {b, {h * s * d, kv * s * d, kv * s * d}, {h * s * d}};
    const int64_t group = h / kv;
    return {b * kv, {group * s * d, s * d, s * d}, {group * s * d}};
  }

  // q.k and p.v cost 2*D each per (query, key) pair that is not masked.
  double flops(const Problem& p) const override {
    const double s = static_cast<double>(p.dims[2]);
    const double pairs = is_causal(p) ? s * (s + 1.0) / 2.0 : s * s;
    return 4.0 * static_cast<double>(p.dims[0] * p.dims[1] * p.dims[3]) * pairs;
  }
  double bytes(const Problem& p, DType t) const override {
    const int64_t q_elements = p.numel();
    const int64_t kv_elements = p.dims[0] * kv_heads_of(p) * p.dims[2] * p.dims[3];
    return ops::bytes_of(2 * q_elements + 2 * kv_elements, t);
  }

 private:
  static void copy_dominant_keys(const Problem& p, std::mt19937_64& rng, std::vector<Values>& in) {
    const int64_t heads = p.dims[1], s_len = p.dims[2], d = p.dims[3];
    const int64_t kv = kv_heads_of(p), group = heads / kv;
    const RowLayout query_rows{heads, s_len, d, is_bshd(p)}, key_rows{kv, s_len, d, is_bshd(p)};
    const double gain = kDominantLogit / std::sqrt(static_cast<double>(d));
    for (int64_t r = 0; r < p.dims[0] * heads * s_len; ++r) {
      int64_t b, h, i;
      query_rows.place(r, b, h, i);
      std::uniform_int_distribution<int64_t> pick(0, is_causal(p) ? i : s_len - 1);
      const double* key = in[1].data.data() + key_rows.offset(b, h / group, pick(rng));
      for (int64_t c = 0; c < d; ++c) in[0].data[r * d + c] = gain * key[c];
    }
  }
};

}  // namespace

std::unique_ptr<Op> make_flash_attention() {
  return std::make_unique<FlashAttention>();
}

}  // namespace ak
