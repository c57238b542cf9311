// The Triton starters' tuning spaces, read by the engine's own parser from `# @tune` comments.
// That every starter's space parses and its defaults fit the operator's standard problem is
// StarterFit's check, for every backend; here, what the Triton starters add: each tunes at least
// two parameters, and the search has more than four points to choose from there.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/paths.h"
#include "core/registry.h"
#include "search/tune_space.h"

namespace ak {
namespace {

TEST(TritonTuneSpace, EachStarterTunesTwoParametersWithMoreThanFourFeasiblePoints) {
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(AK_SOURCE_DIR) + "/kernels/triton")) {
    if (entry.path().extension() != ".py") continue;
    ++files;
    const std::string op = entry.path().stem().string();
    SCOPED_TRACE(op);
    const TuneSpace space = parse_tune_space(read_text_file(entry.path()));
    EXPECT_GE(space.params.size(), 2u);
    const Op& o = find_op(op);
    EXPECT_GT(feasible_configs(space, problem_symbols(o, o.default_problem()), kMaxTuneConfigs).size(), 4u);
  }
  EXPECT_EQ(files, 9);
}

TEST(TritonTuneSpace, PythonDefaultsAreModuleLevelAssignmentsOnly) {
  const TuneSpace space = parse_tune_space("# @tune BLOCK: 64, 128\n# @tune WARPS: 4, 8\n");
  const auto found = default_config("BLOCK = 128  # rows\n    WARPS = 4\nWARPS = 8\n", space);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(to_string(*found), "BLOCK=128 WARPS=8");  // the indented WARPS is not module-level
  EXPECT_FALSE(default_config("BLOCK = 256\nWARPS = 8\n", space).has_value());  // 256 is not listed
  EXPECT_FALSE(default_config("BLOCK == 128\nWARPS = 8\n", space).has_value());
}

}  // namespace
}  // namespace ak
