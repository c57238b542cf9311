// The Triton starters' tuning spaces, read by the engine's own parser from `# @tune` comments:
// each file's module-level defaults are a point of its space that meets its @requires at the
// operator's standard problem (so `tune` and the loop time the file as written first), and the
// search has more than one point to choose from.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/paths.h"
#include "core/registry.h"
#include "search/tune_space.h"

namespace ak {
namespace {

TEST(TritonTuneSpace, DefaultsAreFeasiblePointsOfEachStartersSpace) {
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(AK_SOURCE_DIR) + "/kernels/triton")) {
    if (entry.path().extension() != ".py") continue;
    ++files;
    const std::string op = entry.path().stem().string();
    SCOPED_TRACE(op);
    const std::string source = read_text_file(entry.path());
    const TuneSpace space = parse_tune_space(source);
    EXPECT_GE(space.params.size(), 2u);
    const auto defaults = default_config(source, space);
    ASSERT_TRUE(defaults.has_value()) << "a @tune parameter without a module-level default";
    const Op& o = find_op(op);
    const auto symbols = problem_symbols(o, o.default_problem());
    EXPECT_TRUE(satisfies(space, *defaults, symbols)) << to_string(*defaults);
    EXPECT_GT(feasible_configs(space, symbols, kMaxTuneConfigs).size(), 4u);
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
