#include <gtest/gtest.h>

#include <functional>

#include "core/error.h"
#include "core/op.h"
#include "core/problem.h"
#include "search/tune_space.h"

namespace ak {
namespace {

constexpr std::string_view kKernel = R"(// rmsnorm, one block per BLOCK_ROWS rows.
#include <cuda_fp16.h>
#include "autokernel/abi.h"

// @tune BLOCK_ROWS: 1, 2, 4, 8
// @tune THREADS: 128, 256, 512
//  @tune VEC : 4,8
// @tune LOAD: ldg, plain
// @require THREADS * VEC <= N
// @require BLOCK_ROWS <= M
// The @tune lines above are read by the engine; @tune in prose is not a directive.
// @tuned is not one either.

template <int kThreads>
__global__ void rmsnorm_kernel(const half* x, half* y, int n) {}
)";

// Runs `fn`, expecting Error(Usage) whose message contains `fragment`.
void expect_usage(const std::function<void()>& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected Error(Usage) mentioning '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(TuneSpace, ParsesARealisticKernelHeader) {
  const TuneSpace space = parse_tune_space(kKernel);
  ASSERT_EQ(space.params.size(), 4u);
  EXPECT_EQ(space.params[0].name, "BLOCK_ROWS");
  EXPECT_EQ(space.params[0].values, (std::vector<std::string>{"1", "2", "4", "8"}));
  EXPECT_EQ(space.params[1].name, "THREADS");
  EXPECT_EQ(space.params[2].name, "VEC");
  EXPECT_EQ(space.params[2].values, (std::vector<std::string>{"4", "8"}));
  EXPECT_EQ(space.params[3].values, (std::vector<std::string>{"ldg", "plain"}));
  EXPECT_EQ(space.requires_, (std::vector<std::string>{"THREADS * VEC <= N", "BLOCK_ROWS <= M"}));
  EXPECT_EQ(space.size(), 4u * 3u * 2u * 2u);
}

TEST(TuneSpace, ReadsHashCommentsOfPythonFiles) {
  const TuneSpace space =
      parse_tune_space("import triton\n# @tune BLOCK: 64, 128\n#   @require BLOCK <= N\n");
  ASSERT_EQ(space.params.size(), 1u);
  EXPECT_EQ(space.params[0].values, (std::vector<std::string>{"64", "128"}));
  EXPECT_EQ(space.requires_, (std::vector<std::string>{"BLOCK <= N"}));
}

TEST(TuneSpace, EmptySpaceHasOneEmptyConfig) {
  const TuneSpace space = parse_tune_space("int ak_launch(const ak_call*) { return 0; }\n");
  EXPECT_EQ(space.size(), 1u);
  const auto configs = feasible_configs(space, {}, kMaxTuneConfigs);
  ASSERT_EQ(configs.size(), 1u);
  EXPECT_TRUE(configs[0].empty());
}

TEST(TuneSpace, FeasibleDropsConfigsBreakingARequire) {
  const TuneSpace space = parse_tune_space(kKernel);
  const auto configs = feasible_configs(space, {{"M", 4}, {"N", 1000}}, kMaxTuneConfigs);
  // THREADS * VEC <= 1000 leaves only 128 x 4; BLOCK_ROWS <= 4 drops 8; LOAD is free.
  ASSERT_EQ(configs.size(), 3u * 1u * 1u * 2u);
  for (const auto& config : configs) {
    EXPECT_EQ(config[1].second, "128");
    EXPECT_EQ(config[2].second, "4");
    EXPECT_NE(config[0].second, "8");
  }
  // Declaration order: the first parameter varies slowest, the last fastest.
  EXPECT_EQ(to_string(configs[0]), "BLOCK_ROWS=1 THREADS=128 VEC=4 LOAD=ldg");
  EXPECT_EQ(to_string(configs[1]), "BLOCK_ROWS=1 THREADS=128 VEC=4 LOAD=plain");
  EXPECT_EQ(to_string(configs[2]), "BLOCK_ROWS=2 THREADS=128 VEC=4 LOAD=ldg");
  EXPECT_EQ(feasible_configs(space, {{"M", 8}, {"N", 4096}}, kMaxTuneConfigs).size(), space.size());
}

TEST(TuneSpace, RequiresMayUseModuloAndNot) {
  const TuneSpace space = parse_tune_space(
      "// @tune VEC: 1, 3, 4\n// @tune BLOCK: 32, 128\n// @require N % VEC == 0\n"
      "// @require !causal || BLOCK <= 64\n");
  const auto configs = feasible_configs(space, {{"N", 8}, {"causal", 1}}, kMaxTuneConfigs);
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_EQ(to_string(configs[0]), "VEC=1 BLOCK=32");
  EXPECT_EQ(to_string(configs[1]), "VEC=4 BLOCK=32");
  EXPECT_EQ(feasible_configs(space, {{"N", 8}, {"causal", 0}}, kMaxTuneConfigs).size(), 4u);
}

TEST(TuneSpace, SatisfiesChecksOneConfig) {
  const TuneSpace space = parse_tune_space(kKernel);
  const std::map<std::string, double> symbols{{"M", 8}, {"N", 1024}};
  EXPECT_TRUE(satisfies(space, parse_config("BLOCK_ROWS=8 THREADS=256 VEC=4 LOAD=ldg", space), symbols));
  EXPECT_FALSE(satisfies(space, parse_config("BLOCK_ROWS=8 THREADS=256 VEC=8 LOAD=ldg", space), symbols));
}

TEST(TuneSpace, MalformedLinesNameTheirLine) {
  expect_usage([] { parse_tune_space("int x;\n// @tune THREADS 128, 256\n"); }, "line 2");
  expect_usage([] { parse_tune_space("// @tune THREADS: 128,, 256\n"); }, "line 1");
  expect_usage([] { parse_tune_space("// @tune 2X: 1\n"); }, "not a parameter name");
  expect_usage([] { parse_tune_space("// @tune T: 1, \"a b\"\n"); }, "is not a value");
  expect_usage([] { parse_tune_space("// @tune T: 1, 1\n"); }, "duplicate value");
  expect_usage([] { parse_tune_space("\n\n// @require\n"); }, "line 3");
}

TEST(TuneSpace, DuplicateParameterIsAnError) {
  expect_usage([] { parse_tune_space("// @tune T: 1, 2\n// @tune U: 1\n// @tune T: 4\n"); },
               "line 3: duplicate parameter T (first declared on line 1)");
}

TEST(TuneSpace, EmptyValueListIsAnError) {
  expect_usage([] { parse_tune_space("\n// @tune THREADS:\n"); }, "line 2: @tune THREADS has no values");
}

TEST(TuneSpace, BadRequireExpressionFailsAtParseTime) {
  expect_usage([] { parse_tune_space("// @tune T: 1\n// @require T * <= N\n"); }, "line 2");
  expect_usage([] { parse_tune_space("// @require (T <= N\n// @tune T: 1\n"); }, "line 1");
  // A @require over a parameter with non-numeric values can never be evaluated.
  expect_usage([] { parse_tune_space("// @tune LOAD: ldg, plain\n// @require LOAD <= 1\n"); },
               "line 2: @require uses LOAD");
}

TEST(TuneSpace, UnknownSymbolIsNamed) {
  const TuneSpace space = parse_tune_space("// @tune T: 1, 2\n// @require T <= NN\n");
  expect_usage([&] { feasible_configs(space, {{"N", 4}}, kMaxTuneConfigs); }, "unknown symbol NN");
  expect_usage([&] { satisfies(space, {{"T", "1"}}, {{"N", 4}}); }, "unknown symbol NN");
}

TEST(TuneSpace, NonNumericValueInARequireIsAnError) {
  TuneSpace space;  // built by hand: parse_tune_space already refuses this space
  space.params = {{"MODE", {"1", "fast"}}};
  space.requires_ = {"MODE <= N"};
  EXPECT_TRUE(satisfies(space, {{"MODE", "1"}}, {{"N", 4}}));
  expect_usage([&] { satisfies(space, {{"MODE", "fast"}}, {{"N", 4}}); }, "MODE=fast is not a number");
  expect_usage([&] { satisfies(space, {}, {{"N", 4}}); }, "no value for MODE");
}

TEST(TuneSpace, ParameterShadowingASymbolIsAnError) {
  const TuneSpace space = parse_tune_space("// @tune N: 1, 2\n// @require N <= M\n");
  expect_usage([&] { feasible_configs(space, {{"M", 4}, {"N", 4}}, kMaxTuneConfigs); }, "shadows");
}

TEST(TuneSpace, TooLargeASpaceIsRefused) {
  const TuneSpace space = parse_tune_space("// @tune A: 1, 2, 3, 4\n// @tune B: 1, 2, 3, 4\n");
  EXPECT_EQ(feasible_configs(space, {}, 16).size(), 16u);
  expect_usage([&] { feasible_configs(space, {}, 15); }, "more than the limit of 15");
}

// The limit counts feasible configurations: a product past it whose requires prune early passes,
// and the same lists without the requires are refused.
TEST(TuneSpace, TheLimitCountsFeasibleConfigs) {
  const std::string lists = "// @tune A: 1, 2, 3, 4\n// @tune B: 1, 2, 3, 4\n// @tune C: 1, 2, 3, 4\n";
  const TuneSpace pruned = parse_tune_space(lists + "// @require A == 1\n// @require B <= A\n");
  EXPECT_EQ(pruned.size(), 64u);
  const auto configs = feasible_configs(pruned, {}, 4);
  ASSERT_EQ(configs.size(), 4u);
  EXPECT_EQ(to_string(configs[0]), "A=1 B=1 C=1");
  EXPECT_EQ(to_string(configs[3]), "A=1 B=1 C=4");
  expect_usage([&] { feasible_configs(parse_tune_space(lists), {}, 4); }, "more than the limit of 4");
  // A require over the problem alone that fails leaves nothing, whatever the lists.
  EXPECT_TRUE(feasible_configs(parse_tune_space(lists + "// @require N > 8\n"), {{"N", 4}}, 4).empty());
  // A require that waits for the last parameter prunes nothing before it: past 16 x the limit
  // prefixes tried (4 + 16 + 64 here, against 80 for a limit of 5), the search is refused too.
  const TuneSpace late = parse_tune_space(lists + "// @require C == 0\n");
  EXPECT_TRUE(feasible_configs(late, {}, 6).empty());
  expect_usage([&] { feasible_configs(late, {}, 5); }, "80 partial configurations to try");
}

// Each require is tested on the prefixes that bind its parameters, with the same result as on
// whole configurations: the pruned enumeration and satisfies() agree on every point.
TEST(TuneSpace, PrunedEnumerationAgreesWithSatisfies) {
  const TuneSpace space = parse_tune_space(kKernel);
  for (const double n : {100.0, 1000.0, 4096.0}) {
    const std::map<std::string, double> symbols{{"M", 4}, {"N", n}};
    size_t count = 0;
    for (const auto& config : feasible_configs(space, symbols, kMaxTuneConfigs)) {
      EXPECT_TRUE(satisfies(space, config, symbols)) << to_string(config);
      ++count;
    }
    size_t brute = 0;
    for (const auto& rows : space.params[0].values)
      for (const auto& threads : space.params[1].values)
        for (const auto& vec : space.params[2].values)
          for (const auto& load : space.params[3].values)
            brute += satisfies(
                space, {{"BLOCK_ROWS", rows}, {"THREADS", threads}, {"VEC", vec}, {"LOAD", load}}, symbols);
    EXPECT_EQ(count, brute) << "N = " << n;
  }
}

TEST(TuneSpace, ConfigRoundTrips) {
  const TuneSpace space = parse_tune_space(kKernel);
  for (const auto& config : feasible_configs(space, {{"M", 8}, {"N", 4096}}, kMaxTuneConfigs))
    EXPECT_EQ(parse_config(to_string(config), space), config);
  // Any order and commas are accepted; the result is ordered like the params.
  EXPECT_EQ(to_string(parse_config("VEC=8, LOAD=plain THREADS=512 BLOCK_ROWS=2", space)),
            "BLOCK_ROWS=2 THREADS=512 VEC=8 LOAD=plain");
}

TEST(TuneSpace, ParseConfigRejectsWhatTheSpaceDoesNotHold) {
  const TuneSpace space = parse_tune_space(kKernel);
  expect_usage([&] { parse_config("BLOCK_ROWS=1 THREADS=128 VEC=4 LOAD=ldg WARPS=2", space), void(); },
               "unknown parameter WARPS");
  expect_usage([&] { parse_config("BLOCK_ROWS=3 THREADS=128 VEC=4 LOAD=ldg", space), void(); },
               "BLOCK_ROWS=3 is not in the space");
  expect_usage([&] { parse_config("BLOCK_ROWS=1 THREADS=128 VEC=4", space), void(); }, "no value for LOAD");
  expect_usage([&] { parse_config("VEC=4 VEC=8", space), void(); }, "sets VEC twice");
  expect_usage([&] { parse_config("VEC", space), void(); }, "not NAME=VALUE");
}

// The smallest op that has a parameter, for problem_symbols.
class AttentionLike final : public Op {
 public:
  std::string_view name() const override { return "attention_like"; }
  std::string_view summary() const override { return "test op"; }
  std::vector<std::string> dim_names() const override { return {"B", "H", "S", "D"}; }
  std::vector<std::pair<std::string, double>> param_defaults() const override {
    return {{"causal", 1}, {"window", 0}};
  }
  Signature signature(const Problem&, DType) const override { return {}; }
  Problem default_problem() const override { return {}; }
  StageProblems stage_problems() const override { return {}; }
  std::vector<std::string> stability_cases() const override { return {}; }
  void generate(const Problem&, std::string_view, std::mt19937_64&, std::vector<Values>&) const override {}
  void reference(const Problem&, const std::vector<Values>&, std::vector<Values>&,
                 const std::vector<int64_t>&) const override {}
  UnitLayout units(const Problem&) const override { return {}; }
  double flops(const Problem&) const override { return 0; }
  double bytes(const Problem&, DType) const override { return 0; }
};

TEST(TuneSpace, ProblemSymbolsBindDimsAndParams) {
  const AttentionLike op;
  const auto symbols = problem_symbols(op, parse_problem("4x32x4096x128:causal=0"));
  const std::map<std::string, double> expected{{"B", 4},   {"H", 32},     {"S", 4096},
                                               {"D", 128}, {"causal", 0}, {"window", 0}};
  EXPECT_EQ(symbols, expected);
  expect_usage([&] { problem_symbols(op, parse_problem("4x32")); }, "expected 4");
}

}  // namespace
}  // namespace ak
