// Whether a starter takes a problem (profile/starter_fit.h), and what extract and KernelBench's
// map make of an operator whose starter takes none of its configurations there: the CUDA
// attention kernel at a head dimension of 1024 (KernelBench level 1 problem 97).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "cli_runner.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/problem.h"
#include "core/registry.h"
#include "loop/plan.h"
#include "profile/extract.h"
#include "profile/starter_fit.h"
#include "search/tune_space.h"

namespace ak::test {
namespace {

constexpr const char* kWideHeads = "32x32x512x1024:causal=0";

TEST(StarterFit, AStarterRefusesAProblemNoConfigurationOfItsSpaceFits) {
  EXPECT_FALSE(starter_refusal("cuda", "flash_attention", "4x32x4096x128:causal=1"));
  const auto refused = starter_refusal("cuda", "flash_attention", kWideHeads);
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->find(kWideHeads), std::string::npos) << *refused;
  EXPECT_NE(refused->find("@require"), std::string::npos) << *refused;
  EXPECT_FALSE(starter_refusal("host", "flash_attention", kWideHeads));  // any head dimension on a CPU
  EXPECT_FALSE(starter_refusal("cuda", "rmsnorm", "8192x4096"));
}

// Every starter of every backend: its tuning space parses (prose in its header that begins a
// comment line with "@tune" once broke the CUDA matmul's), its defaults are a point of the space,
// and that point meets its @require rules at the operator's standard problem.
TEST(StarterFit, EveryStartersSpaceParsesAndItsDefaultsFitTheStandardProblem) {
  int files = 0;
  for (const char* kind : {"cuda", "host", "triton"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(AK_SOURCE_DIR) + "/kernels/" + kind)) {
      const std::string op = entry.path().stem().string();
      if (entry.path() != starter_path(kind, op)) continue;  // a header beside the starters
      SCOPED_TRACE(entry.path().string());
      ++files;
      const std::string source = read_text_file(entry.path());
      const TuneSpace space = parse_tune_space(source);
      EXPECT_GE(space.params.size(), 1u);
      const auto defaults = default_config(source, space);
      ASSERT_TRUE(defaults.has_value()) << "a @tune parameter without a default";
      const Op& o = find_op(op);
      EXPECT_TRUE(satisfies(space, *defaults, problem_symbols(o, o.default_problem())))
          << to_string(*defaults);
      EXPECT_FALSE(starter_refusal(kind, op, o.default_problem().to_string()));
    }
  }
  EXPECT_EQ(files, 27);
}

// The CUDA matmul's space holds SKINNY = 0 only where a call can reach the skinny variant (M up to
// 64): above, both values run the same code, and a search timed the twins (on an H200 it took
// their 8.4 against 9.1 us at 4096 x 256 x 768 for a gain); likewise its block heights, only
// where the shared-memory form takes the call.
TEST(StarterFit, MatmulSearchesSkinnyOnlyWhereACallCanTakeIt) {
  const std::string source = read_text_file(starter_path("cuda", "matmul"));
  const TuneSpace space = parse_tune_space(source);
  const Op& op = find_op("matmul");
  const auto values_of = [&](const std::string& param, const std::string& shape) {
    std::set<std::string> values;
    for (const auto& config :
         feasible_configs(space, problem_symbols(op, parse_problem(shape)), kMaxTuneConfigs))
      for (const auto& [name, value] : config)
        if (name == param) values.insert(value);
    return values;
  };
  EXPECT_EQ(values_of("SKINNY", "4096x256x768:b_nk=1"), (std::set<std::string>{"1"}));
  EXPECT_EQ(values_of("SKINNY", "65x4096x4096:b_nk=1"), (std::set<std::string>{"1"}));
  // The shared-memory form's block heights (32, 64, 128): only for the rows it takes, 17 to 64
  // against B as [N, K].
  const std::set<std::string> heights{"0", "1", "32", "64", "128"};
  EXPECT_EQ(values_of("SKINNY", "64x4096x4096:b_nk=1"), heights);
  EXPECT_EQ(values_of("SKINNY", "17x4096x4096:b_nk=1"), heights);
  EXPECT_EQ(values_of("SKINNY", "16x4096x4096:b_nk=1"), (std::set<std::string>{"0", "1"}));
  EXPECT_EQ(values_of("SKINNY", "64x4096x4096"), (std::set<std::string>{"0", "1"}));
  // ... and with the default tiles only, which the skinny kernels ignore: a height times only SPLIT_K
  // (0, 1, 2, 4) and, unsplit, the cluster split.
  size_t heights_searched = 0;
  for (const auto& config :
       feasible_configs(space, problem_symbols(op, parse_problem("64x4096x4096:b_nk=1")), kMaxTuneConfigs))
    for (const auto& [name, value] : config) heights_searched += name == "SKINNY" && value == "64";
  EXPECT_EQ(heights_searched, 5u);
  // The cluster split, likewise: where the shared-memory form may take the call, with no forced split.
  EXPECT_EQ(values_of("SKINNY_CLUSTER", "64x4096x4096:b_nk=1"), (std::set<std::string>{"0", "1"}));
  EXPECT_EQ(values_of("SKINNY_CLUSTER", "16x4096x4096:b_nk=1"), (std::set<std::string>{"0"}));
  EXPECT_EQ(values_of("SKINNY_CLUSTER", "64x4096x4096"), (std::set<std::string>{"0"}));
  for (const auto& config :
       feasible_configs(space, problem_symbols(op, parse_problem("64x4096x4096:b_nk=1")), kMaxTuneConfigs))
    if (std::count(config.begin(), config.end(),
                   std::pair<std::string, std::string>{"SKINNY_CLUSTER", "1"})) {
      const std::map<std::string, std::string> values(config.begin(), config.end());
      EXPECT_EQ(values.at("SPLIT_K"), "0");
      EXPECT_NE(values.at("SKINNY"), "0");
    }
}

// The CUDA matmul's 112-wide tiles and its rings of 6 and 8 stages are wgmma's alone (the mma
// tiles cannot split 112 columns over their warps, and their rings stop at 5), and 112 with 6
// stages keeps the TMA store's staging tiles beside its ring (8 stages do only at 64 wide).
TEST(StarterFit, MatmulSearchesNarrowTilesAndDeepRingsOnWgmmaOnly) {
  const TuneSpace space = parse_tune_space(read_text_file(starter_path("cuda", "matmul")));
  const auto configs = feasible_configs(
      space, problem_symbols(find_op("matmul"), parse_problem("4096x896x896:b_nk=1")), kMaxTuneConfigs);
  std::set<std::string> deep_ring_widths;
  bool narrow_staged = false;
  for (const auto& config : configs) {
    const std::map<std::string, std::string> v(config.begin(), config.end());
    const int stages = std::stoi(v.at("STAGES"));
    if (v.at("BLOCK_N") == "112" || stages > 5) {
      EXPECT_EQ(v.at("WGMMA"), "1") << to_string(config);
    }
    if (stages == 8 && v.at("TMA_STORE") == "1") deep_ring_widths.insert(v.at("BLOCK_N"));
    narrow_staged = narrow_staged || (v.at("BLOCK_N") == "112" && stages == 6 && v.at("TMA_STORE") == "1");
  }
  EXPECT_TRUE(narrow_staged);
  EXPECT_EQ(deep_ring_widths, (std::set<std::string>{"64"}));
}

Profile attention_profile() {
  Profile profile;
  profile.model.spec = "attention.py:Model";
  profile.device_type = "cuda";
  profile.time_kind = "gpu kernel time";
  profile.entries = {{"flash_attention", kWideHeads, "fp16", "", 600, 1},
                     {"rmsnorm", "8192x4096", "fp16", "", 300, 1},
                     {std::nullopt, "", "", "aten::add", 100, 1}};
  profile.total_us = 1000;
  return profile;
}

TEST(StarterFit, ExtractPassesOverAnOperatorNoStarterTakes) {
  const auto ws = scratch_dir("starter-fit");
  Profile profile = attention_profile();
  std::vector<std::string> passed_over;
  const Plan plan =
      extract_plan(ws, profile, rank_profile(profile, Ceilings{}), 5, Backend::Cuda, {}, &passed_over);
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_EQ(plan.kernels[0].op, "rmsnorm");
  ASSERT_EQ(passed_over.size(), 1u);
  EXPECT_NE(passed_over[0].find("flash_attention_32x32x512x1024"), std::string::npos) << passed_over[0];

  // With nothing else of ours in the profile: an error that says why.
  profile.entries.erase(profile.entries.begin() + 1);
  try {
    extract_plan(ws, profile, rank_profile(profile, Ceilings{}), 5, Backend::Cuda);
    FAIL() << "extracted a plan no starter takes";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("takes no " + std::string(kWideHeads)), std::string::npos)
        << e.what();
  }
}

TEST(StarterFit, KernelBenchsMapCountsOnlyWhatOurStartersTake) {
  const nlohmann::json mapped = {{"ops",
                                  {{{"op", "flash_attention"}, {"problem", kWideHeads}, {"us", 900.0}},
                                   {{"op", "softmax"}, {"problem", "4096x4096"}, {"us", 50.0}}}},
                                 {"total_us", 1000.0},
                                 {"share", 0.95},
                                 {"mapped", true}};
  nlohmann::json on_gpu = mapped;
  drop_refused_ops(on_gpu, Backend::Cuda, 0.5);
  EXPECT_FALSE(on_gpu["mapped"].get<bool>());
  EXPECT_NEAR(on_gpu["share"].get<double>(), 0.05, 1e-12);
  ASSERT_EQ(on_gpu["ops"].size(), 1u);
  EXPECT_EQ(on_gpu["ops"][0]["op"], "softmax");
  ASSERT_EQ(on_gpu["refused"].size(), 1u);

  nlohmann::json on_cpu = mapped;  // the host starter takes it: the row stays as it was
  drop_refused_ops(on_cpu, Backend::Host, 0.5);
  EXPECT_EQ(on_cpu, mapped);
}

}  // namespace
}  // namespace ak::test
