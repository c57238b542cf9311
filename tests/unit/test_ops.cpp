// The operators: references against values worked out by hand, row sampling, stage problems and
// their inputs, validation, the ABI signatures and the work counts.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <random>
#include <set>
#include <stdexcept>

#include "core/error.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ak {
namespace {

std::vector<Values> zeros_like(const std::vector<TensorSpec>& specs) {
  std::vector<Values> values;
  for (const auto& spec : specs)
    values.push_back({spec, std::vector<double>(static_cast<size_t>(spec.numel()))});
  return values;
}

// Runs op's reference on the given input values (fp32 shapes) and returns its outputs.
std::vector<Values> reference(const std::string& op_name, const Problem& p,
                              const std::vector<std::vector<double>>& inputs,
                              const std::vector<int64_t>& rows = {}) {
  const Op& op = find_op(op_name);
  op.validate(p);
  const Signature sig = op.signature(p, DType::F32);
  auto in = zeros_like(sig.inputs);
  if (inputs.size() != in.size()) throw std::logic_error("wrong number of inputs for " + op_name);
  for (size_t i = 0; i < in.size(); ++i) {
    if (inputs[i].size() != in[i].data.size()) throw std::logic_error("wrong size of " + in[i].spec.name);
    in[i].data = inputs[i];
  }
  auto out = zeros_like(sig.outputs);
  op.reference(p, in, out, rows);
  return out;
}

std::vector<Values> random_inputs(const Op& op, const Problem& p, DType t, std::string_view input_case,
                                  uint64_t seed) {
  auto in = zeros_like(op.signature(p, t).inputs);
  std::mt19937_64 rng(seed);
  op.generate(p, input_case, rng, in);
  return in;
}

const double kLn2 = std::numbers::ln2;

TEST(OpsReference, SoftmaxOfZeroAndLn2IsAThirdAndTwoThirds) {
  const auto y = reference("softmax", {{2, 2}, {}}, {{0.0, kLn2, 7.0, 7.0}})[0].data;
  EXPECT_NEAR(y[0], 1.0 / 3.0, 1e-15);
  EXPECT_NEAR(y[1], 2.0 / 3.0, 1e-15);
  EXPECT_NEAR(y[2], 0.5, 1e-15);
  EXPECT_NEAR(y[3], 0.5, 1e-15);
}

TEST(OpsReference, RmsNormOfThreeFour) {
  const auto y = reference("rmsnorm", {{1, 2}, {}}, {{3.0, 4.0}, {1.0, 2.0}})[0].data;
  EXPECT_NEAR(y[0], 3.0 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(y[1], 2.0 * 4.0 / std::sqrt(12.5), 1e-6);
}

TEST(OpsReference, LayerNormCentresScalesAndShifts) {
  // Mean 2, biased variance 1: the normalised row is (-1, 1) / sqrt(1 + 1e-5).
  const auto y = reference("layernorm", {{1, 2}, {}}, {{1.0, 3.0}, {2.0, 1.0}, {1.0, 0.0}})[0].data;
  const double inv = 1.0 / std::sqrt(1.0 + 1e-5);
  EXPECT_NEAR(y[0], 1.0 - 2.0 * inv, 1e-15);
  EXPECT_NEAR(y[1], inv, 1e-15);
}

TEST(OpsReference, MatmulSquareAndRectangular) {
  const auto c = reference("matmul", {{2, 2, 2}, {}}, {{1, 2, 3, 4}, {5, 6, 7, 8}})[0].data;
  EXPECT_EQ(c, (std::vector<double>{19, 22, 43, 50}));
  // M=1, N=2, K=3: [1 2 3] times [[1 0] [0 1] [1 1]].
  const auto r = reference("matmul", {{1, 2, 3}, {}}, {{1, 2, 3}, {1, 0, 0, 1, 1, 1}})[0].data;
  EXPECT_EQ(r, (std::vector<double>{4, 5}));
}

TEST(OpsReference, MatmulReadsALinearsWeightInItsOwnOrder) {
  // B = [[1 0] [0 1] [1 1]] (K=3, N=2) held as its transpose [[1 0 1] [0 1 1]].
  const Problem p{{1, 2, 3}, {{"b_nk", 1}}};
  EXPECT_EQ(reference("matmul", p, {{1, 2, 3}, {1, 0, 1, 0, 1, 1}})[0].data, (std::vector<double>{4, 5}));
  const auto b = find_op("matmul").signature(p, DType::F16).inputs[1];
  EXPECT_EQ(b.to_string(), "B fp16[3,2] (transposed view)");
  EXPECT_EQ(b.strides(), (std::vector<int64_t>{1, 3}));
  // Every stage problem of an experiment timed with b_nk holds B the same way.
  const StageProblems stages = find_op("matmul").stage_problems_like(p);
  EXPECT_EQ(stages.smoke.param("b_nk", 0), 1.0);
  for (const auto* list : {&stages.sweep, &stages.stability, &stages.edge})
    for (const Problem& q : *list) EXPECT_EQ(q.param("b_nk", 0), 1.0) << q.to_string();
  EXPECT_EQ(find_op("matmul").stage_problems_like({{64, 64, 64}, {}}).smoke.param("b_nk", 0), 0.0);
}

// The [B, H, S, D] tensor `values` (contiguous) as a [B, S, H, D] buffer.
std::vector<double> to_bshd(const std::vector<double>& values, int64_t b, int64_t h, int64_t s, int64_t d) {
  std::vector<double> out(values.size());
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t si = 0; si < s; ++si)
        for (int64_t di = 0; di < d; ++di)
          out[((bi * s + si) * h + hi) * d + di] = values[((bi * h + hi) * s + si) * d + di];
  return out;
}

std::vector<double> drawn(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

// bshd = 1: the same attention, each row read and written where the [B, S, H, D] buffers hold it.
TEST(OpsReference, AttentionOnBshdBuffersIsTheSameAttention) {
  const int64_t b = 2, h = 4, kv = 2, s = 5, d = 8;
  for (const char* causal : {"0", "1"}) {
    const auto q = drawn(b * h * s * d, 1), k = drawn(b * kv * s * d, 2), v = drawn(b * kv * s * d, 3);
    const Problem plain{{b, h, s, d}, {{"causal", std::stod(causal)}, {"kv_heads", static_cast<double>(kv)}}};
    Problem bshd = plain;
    bshd.params["bshd"] = 1;
    const auto o = reference("flash_attention", plain, {q, k, v})[0].data;
    const auto o_bshd =
        reference("flash_attention", bshd,
                  {to_bshd(q, b, h, s, d), to_bshd(k, b, kv, s, d), to_bshd(v, b, kv, s, d)})[0]
            .data;
    const auto expected = to_bshd(o, b, h, s, d);
    ASSERT_EQ(o_bshd.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) ASSERT_NEAR(o_bshd[i], expected[i], 1e-12) << i;
  }
  const Problem p{{b, h, s, d}, {{"bshd", 1}, {"kv_heads", static_cast<double>(kv)}}};
  const Signature sig = find_op("flash_attention").signature(p, DType::F16);
  EXPECT_EQ(sig.inputs[0].strides(), (std::vector<int64_t>{s * h * d, d, h * d, 1}));
  EXPECT_EQ(sig.inputs[1].strides(), (std::vector<int64_t>{s * kv * d, d, kv * d, 1}));
  EXPECT_EQ(sig.outputs[0].to_string(), "o fp16[2,4,5,8] (axes 1 and 2 swapped in memory)");
  // A unit is a whole batch; every stage problem holds the tensors the same way.
  const UnitLayout units = find_op("flash_attention").units(p);
  EXPECT_EQ(units.count, b);
  EXPECT_EQ(units.inputs, (std::vector<int64_t>{h * s * d, kv * s * d, kv * s * d}));
  const StageProblems stages = find_op("flash_attention").stage_problems_like(p);
  for (const auto* list : {&stages.sweep, &stages.stability, &stages.edge})
    for (const Problem& q : *list) EXPECT_EQ(q.param("bshd", 0), 1.0) << q.to_string();
}

TEST(OpsReference, RotaryOnBshdBuffersIsTheSameRotation) {
  const int64_t b = 2, h = 3, s = 4, d = 6;
  const auto x = drawn(b * h * s * d, 4), cos = drawn(s * d / 2, 5), sin = drawn(s * d / 2, 6);
  const auto y = reference("rotary_embedding", {{b, h, s, d}, {}}, {x, cos, sin})[0].data;
  const auto y_bshd =
      reference("rotary_embedding", {{b, h, s, d}, {{"bshd", 1}}}, {to_bshd(x, b, h, s, d), cos, sin})[0]
          .data;
  EXPECT_EQ(y_bshd, to_bshd(y, b, h, s, d));
  EXPECT_EQ(find_op("rotary_embedding").units({{b, h, s, d}, {{"bshd", 1}}}).count, b);
}

TEST(OpsReference, RotaryRotatesHalvesByTheTableAngle) {
  // S=2, D=2: position 0 has angle 0, position 1 a quarter turn (cos 0, sin 1).
  const auto y = reference("rotary_embedding", {{1, 1, 2, 2}, {}}, {{1, 2, 1, 2}, {1, 0}, {0, 1}})[0].data;
  EXPECT_EQ(y, (std::vector<double>{1, 2, -2, 1}));
}

TEST(OpsReference, RotaryTablesFollowTheLlamaFrequencies) {
  const Problem p{{1, 1, 3, 4}, {}};
  const auto in = random_inputs(find_op("rotary_embedding"), p, DType::F32, kRandomCase, 1);
  // theta_i = 10000^(-2i/4): theta_0 = 1, theta_1 = 0.01; tables are [S, D/2].
  EXPECT_DOUBLE_EQ(in[1].data[2 * 2 + 1], std::cos(2 * 0.01));
  EXPECT_DOUBLE_EQ(in[2].data[2 * 2 + 1], std::sin(2 * 0.01));
  EXPECT_DOUBLE_EQ(in[2].data[1 * 2 + 0], std::sin(1.0));
  EXPECT_DOUBLE_EQ(in[1].data[0], 1.0);
}

TEST(OpsReference, CrossEntropyOfUniformLogitsIsLnV) {
  // Row 0: uniform over 4 classes. Row 1: logits (0, ln 3, 0, 0), target 1: -log(3/6) = ln 2.
  const auto out = reference("cross_entropy", {{2, 4}, {}}, {{5, 5, 5, 5, 0, std::log(3.0), 0, 0}, {2, 1}});
  EXPECT_NEAR(out[0].data[0], std::log(4.0), 1e-15);
  EXPECT_NEAR(out[0].data[1], kLn2, 1e-15);
  ASSERT_EQ(out[1].data.size(), 1u);
  EXPECT_NEAR(out[1].data[0], (std::log(4.0) + kLn2) / 2.0, 1e-15);
}

TEST(OpsReference, ReduceSumsEachRow) {
  const auto y = reference("reduce", {{2, 3}, {}}, {{1, 2, 3, -1, 0.5, 4}})[0].data;
  EXPECT_EQ(y, (std::vector<double>{6, 3.5}));
}

TEST(OpsReference, AttentionOverOneKeyReturnsItsValue) {
  // S=1, two query heads sharing one kv head: whatever q and k are, o = v.
  const Problem p{{1, 2, 1, 2}, {{"causal", 0}, {"kv_heads", 1}}};
  const auto o = reference("flash_attention", p, {{3, -1, 0.5, 2}, {7, 8}, {0.25, -4}})[0].data;
  EXPECT_EQ(o, (std::vector<double>{0.25, -4, 0.25, -4}));
}

TEST(OpsReference, AttentionWeightsKeysBySoftmaxAndMasksTheFuture) {
  // D=1 (scale 1), q = 1, keys (0, ln 3): weights 1:3 over values (2, 6) give 5.
  const std::vector<std::vector<double>> in{{1, 1}, {0, std::log(3.0)}, {2, 6}};
  const auto full = reference("flash_attention", {{1, 1, 2, 1}, {{"causal", 0}}}, in)[0].data;
  EXPECT_NEAR(full[0], 5.0, 1e-14);
  EXPECT_NEAR(full[1], 5.0, 1e-14);
  // Causal: the first query sees only key 0, so it returns v[0].
  const auto causal = reference("flash_attention", {{1, 1, 2, 1}, {{"causal", 1}}}, in)[0].data;
  EXPECT_EQ(causal[0], 2.0);
  EXPECT_NEAR(causal[1], 5.0, 1e-14);
}

TEST(OpsReference, FusedMlpWithOneUnit) {
  // D = F = 1: g = 2 * 1, u = 2 * 3, y = silu(2) * 6 * 0.5 with silu(2) = 2 / (1 + e^-2).
  const auto y = reference("fused_mlp", {{1, 1, 1}, {}}, {{2}, {1}, {3}, {0.5}})[0].data;
  EXPECT_NEAR(y[0], 2.0 / (1.0 + std::exp(-2.0)) * 6.0 * 0.5, 1e-14);
}

TEST(OpsRowSampling, SampledRowsEqualTheFullReference) {
  const std::vector<std::pair<std::string, Problem>> cases{
      {"matmul", {{9, 5, 7}, {}}},
      {"fused_mlp", {{9, 5, 7}, {}}},
      {"flash_attention", {{2, 3, 7, 4}, {{"causal", 1}, {"kv_heads", 1}}}},
      {"flash_attention", {{2, 2, 5, 3}, {{"causal", 0}}}}};
  std::set<std::string> sampling;
  for (const auto& op : all_ops())
    if (op->row_sampling()) sampling.insert(std::string(op->name()));
  EXPECT_EQ(sampling, (std::set<std::string>{"matmul", "fused_mlp", "flash_attention"}));

  for (const auto& [name, p] : cases) {
    const Op& op = find_op(name);
    const auto in = random_inputs(op, p, DType::F32, kRandomCase, 7);
    std::vector<std::vector<double>> data;
    for (const auto& v : in) data.push_back(v.data);
    const auto full = reference(name, p, data)[0];
    const int64_t row_len = full.spec.shape.back(), n_rows = full.spec.numel() / row_len;
    const std::vector<int64_t> rows{0, 4, n_rows - 1};
    const auto sampled = reference(name, p, data, rows)[0];
    for (int64_t r : rows)
      for (int64_t j = 0; j < row_len; ++j)
        EXPECT_EQ(sampled.data[r * row_len + j], full.data[r * row_len + j]) << name << " row " << r;
    EXPECT_THROW(reference(name, p, data, {n_rows}), Error) << name << ": a row past the end";
  }
}

std::vector<double> round_trip(const Values& v, DType t) {
  const TensorSpec spec{v.spec.name, t, v.spec.shape};
  return decode(spec, encode(spec, v.data));
}

bool fits_fp16(const std::vector<double>& values) {
  for (double v : values)
    if (!std::isfinite(v) || std::fabs(v) > 65504.0) return false;
  return true;
}

// Every input of every case survives rounding to fp16 and bf16, and the reference on the
// fp16-rounded inputs is finite with its problem-dtype outputs inside fp16's range.
void check_problem(const Op& op, const Problem& p) {
  SCOPED_TRACE(std::string(op.name()) + " " + p.to_string());
  ASSERT_NO_THROW(op.validate(p));
  std::vector<std::string> cases{std::string(kRandomCase)};
  for (const auto& c : op.stability_cases()) cases.push_back(c);
  for (const auto& input_case : cases) {
    SCOPED_TRACE(input_case);
    auto in = random_inputs(op, p, DType::F16, input_case, 11);
    for (auto& v : in) {
      if (!is_float(v.spec.dtype)) continue;  // cross_entropy's targets
      const auto as_bf16 = round_trip(v, DType::BF16);
      v.data = round_trip(v, DType::F16);
      ASSERT_TRUE(fits_fp16(v.data)) << v.spec.to_string() << " overflows fp16";
      for (double x : as_bf16) ASSERT_TRUE(std::isfinite(x)) << v.spec.to_string() << " overflows bf16";
    }
    auto out = zeros_like(op.signature(p, DType::F16).outputs);
    op.reference(p, in, out, {});
    for (const auto& v : out) {
      for (double x : v.data) ASSERT_TRUE(std::isfinite(x)) << v.spec.to_string();
      if (v.spec.dtype == DType::F16) {
        EXPECT_TRUE(fits_fp16(v.data)) << v.spec.to_string() << " overflows fp16";
      }
    }
  }
}

class OpsStages : public testing::TestWithParam<std::string> {};

TEST_P(OpsStages, EveryProblemValidatesAndEveryCaseIsRepresentable) {
  const Op& op = find_op(GetParam());
  const StageProblems stages = op.stage_problems();
  EXPECT_GE(stages.sweep.size(), 8u);
  EXPECT_FALSE(stages.stability.empty());
  EXPECT_FALSE(stages.edge.empty());
  EXPECT_FALSE(op.stability_cases().empty());
  EXPECT_NO_THROW(op.validate(op.default_problem()));
  // Sweep problems only validate here: they are large, the harness draws them with the random
  // case only, and every case is drawn below on the smaller problems of the other stages.
  for (const auto& p : stages.sweep) {
    EXPECT_NO_THROW(op.validate(p)) << p.to_string();
    // The sweep's references run in full (and thrice) in CI: keep them cheap.
    if (op.row_sampling()) {
      EXPECT_LE(op.flops(p), 2.5e8) << p.to_string();
    }
  }
  check_problem(op, stages.smoke);
  for (const auto& p : stages.stability) check_problem(op, p);
  for (const auto& p : stages.edge) check_problem(op, p);
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const auto& op : all_ops()) names.emplace_back(op->name());
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpsStages, testing::ValuesIn(op_names()),
                         [](const testing::TestParamInfo<std::string>& param) { return param.param; });

TEST(OpsStageProblems, AttentionRunsCausalAndNotInSweepAndEdge) {
  const auto stages = find_op("flash_attention").stage_problems();
  for (const auto* problems : {&stages.sweep, &stages.edge}) {
    std::set<double> causal;
    for (const auto& p : *problems) causal.insert(p.param("causal", 1));
    EXPECT_EQ(causal, (std::set<double>{0, 1}));
  }
}

ErrorKind validation_error(const std::string& op_name, const Problem& p) {
  try {
    find_op(op_name).validate(p);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(op_name, 0), 0u) << e.what();
    return e.kind();
  }
  ADD_FAILURE() << op_name << " accepted " << p.to_string();
  return ErrorKind::Internal;
}

TEST(OpsValidate, RejectsBadProblemsAsUsageErrors) {
  for (const auto& op : all_ops()) {
    const std::string name(op->name());
    Problem p = op->default_problem();
    p.dims.push_back(2);
    EXPECT_EQ(validation_error(name, p), ErrorKind::Usage);
    p = op->default_problem();
    p.dims[0] = 0;
    EXPECT_EQ(validation_error(name, p), ErrorKind::Usage);
    p = op->default_problem();
    p.params["casual"] = 0;
    EXPECT_EQ(validation_error(name, p), ErrorKind::Usage);
  }
  EXPECT_EQ(validation_error("rotary_embedding", {{1, 2, 8, 63}, {}}), ErrorKind::Usage);
  EXPECT_EQ(validation_error("flash_attention", {{1, 4, 8, 64}, {{"kv_heads", 3}}}), ErrorKind::Usage);
  EXPECT_EQ(validation_error("flash_attention", {{1, 4, 8, 64}, {{"kv_heads", 8}}}), ErrorKind::Usage);
  EXPECT_EQ(validation_error("flash_attention", {{1, 4, 8, 64}, {{"kv_heads", -2}}}), ErrorKind::Usage);
  EXPECT_EQ(validation_error("flash_attention", {{1, 4, 8, 64}, {{"causal", 2}}}), ErrorKind::Usage);
  EXPECT_EQ(validation_error("flash_attention", {{1, 4, 8, 64}, {{"causal", 0.5}}}), ErrorKind::Usage);
  EXPECT_NO_THROW(find_op("flash_attention").validate({{1, 4, 8, 64}, {{"kv_heads", 2}, {"causal", 0}}}));
  EXPECT_NO_THROW(find_op("flash_attention").validate({{1, 4, 8, 64}, {{"kv_heads", 0}}}));
}

TEST(OpsSignature, FollowsTheAbiOrder) {
  const auto attn = find_op("flash_attention").signature({{2, 8, 16, 64}, {{"kv_heads", 2}}}, DType::BF16);
  ASSERT_EQ(attn.inputs.size(), 3u);
  EXPECT_EQ(attn.inputs[1].to_string(), "k bf16[2,2,16,64]");
  EXPECT_EQ(attn.outputs[0].to_string(), "o bf16[2,8,16,64]");
  EXPECT_EQ(attn.scalars, (std::vector<double>{0.125, 1.0}));  // scale, causal (the default)

  const auto ce = find_op("cross_entropy").signature({{4, 10}, {}}, DType::F16);
  EXPECT_EQ(ce.inputs[1].to_string(), "targets i64[4]");
  EXPECT_EQ(ce.outputs[0].to_string(), "loss fp32[4]");
  EXPECT_EQ(ce.outputs[1].to_string(), "mean_loss fp32[1]");

  const auto ln = find_op("layernorm").signature({{4, 10}, {}}, DType::F16);
  EXPECT_EQ(ln.inputs[2].to_string(), "bias fp16[10]");
  EXPECT_EQ(ln.scalars, (std::vector<double>{1e-5}));

  const auto mlp = find_op("fused_mlp").signature({{3, 4, 5}, {}}, DType::F32);
  EXPECT_EQ(mlp.inputs[1].to_string(), "w_gate fp32[5,4]");
  EXPECT_EQ(mlp.inputs[3].to_string(), "w_down fp32[4,5]");
  EXPECT_EQ(find_op("rotary_embedding").signature({{1, 2, 3, 8}, {}}, DType::F16).inputs[1].to_string(),
            "cos fp16[3,4]");
  EXPECT_EQ(find_op("reduce").signature({{3, 5}, {}}, DType::F16).outputs[0].to_string(), "y fp16[3]");
  EXPECT_EQ(find_op("matmul").signature({{3, 5, 7}, {}}, DType::F16).inputs[1].to_string(), "B fp16[7,5]");
}

TEST(OpsCost, FlopsAndBytesOfKnownProblems) {
  EXPECT_EQ(find_op("matmul").flops({{2, 3, 4}, {}}), 48);
  EXPECT_EQ(find_op("matmul").bytes({{2, 3, 4}, {}}, DType::F16), 2 * (8 + 12 + 6));
  const Op& attn = find_op("flash_attention");
  EXPECT_EQ(attn.flops({{1, 2, 4, 8}, {{"causal", 0}}}), 4 * 2 * 8 * 16);
  EXPECT_EQ(attn.flops({{1, 2, 4, 8}, {{"causal", 1}}}), 4 * 2 * 8 * 10);  // 10 unmasked pairs
  EXPECT_NEAR(attn.flops(attn.default_problem()) / attn.flops({{4, 32, 4096, 128}, {{"causal", 0}}}), 0.5,
              1e-3);
  EXPECT_EQ(attn.bytes({{1, 2, 4, 8}, {{"kv_heads", 1}}}, DType::F32), 4 * (2 * 64 + 2 * 32));
  EXPECT_EQ(find_op("fused_mlp").flops({{2, 3, 4}, {}}), 6 * 24 + 5 * 8);
  EXPECT_EQ(find_op("fused_mlp").bytes({{2, 3, 4}, {}}, DType::F32), 4 * (2 * 6 + 3 * 12));
  EXPECT_EQ(find_op("cross_entropy").bytes({{4, 10}, {}}, DType::F16), 2 * 40 + 8 * 4 + 4 * 5);
  EXPECT_EQ(find_op("reduce").bytes({{3, 5}, {}}, DType::BF16), 2 * (15 + 3));
  EXPECT_EQ(find_op("rotary_embedding").bytes({{1, 2, 3, 4}, {}}, DType::F16), 2 * (2 * 24 + 12));
  EXPECT_EQ(find_op("layernorm").bytes({{2, 3}, {}}, DType::F16), 2 * (2 * 6 + 2 * 3));
  EXPECT_EQ(find_op("softmax").bytes({{2, 3}, {}}, DType::F32), 4 * 12);
  EXPECT_EQ(find_op("reduce").flops({{3, 5}, {}}), 15);
}

}  // namespace
}  // namespace ak
