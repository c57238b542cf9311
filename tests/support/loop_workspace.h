// A loop workspace for the CLI tests of `optimize` (host backend): tests/kernels/loop_modes.cpp as
// its one kernel, and the checks every finished run must pass.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "core/paths.h"
#include "harness/results_log.h"
#include "loop/git_repo.h"
#include "loop/plan.h"

namespace ak::test {

inline std::filesystem::path make_workspace(const std::string& name) {
  const auto ws = scratch_dir(name) / "workspace";
  std::filesystem::create_directories(ws / "kernels" / "sum");
  std::filesystem::copy_file(kernel("loop_modes.cpp"), ws / "kernels" / "sum" / "sum.cpp");
  const Plan plan{"test", false, {{"sum", "reduce", "kernels/sum/sum.cpp", "48x1024", "fp32", 0.5}}};
  write_file_atomically(ws / kPlanFile, nlohmann::json(plan).dump());
  return ws;
}

// An experiment's time limit well above what one takes on a CPU that ctest keeps busy with other
// tests (a baseline near 10 s there).
inline std::vector<std::string> optimize_args(const std::filesystem::path& ws) {
  return {"optimize",  "--workspace", ws.string(),  "--backend", "host",
          "--timeout", "40",          "--max-time", "0.2",       "--json"};
}

// Kept rows name exactly the commits on the run branch after its first, in order; experiments
// are numbered 1..N once each; the tree is at the last kept commit.
inline void expect_consistent(const std::filesystem::path& ws, const nlohmann::json& state) {
  const auto rows = read_results(ws / kResultsFile);
  ASSERT_FALSE(rows.empty());
  std::vector<std::string> kept;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].at("experiment"), std::to_string(i + 1));
    if (rows[i].at("decision") == "kept") kept.push_back(rows[i].at("commit"));
  }
  GitRepo repo(ws);
  auto log = repo.log();
  ASSERT_GE(log.size(), 1u);
  log.pop_back();  // the run's first commit: the plan
  std::vector<std::string> commits;
  for (auto it = log.rbegin(); it != log.rend(); ++it) commits.push_back(it->hash);
  EXPECT_EQ(commits, kept);
  EXPECT_TRUE(repo.is_clean());
  EXPECT_EQ(repo.head(), state.at("head").get<std::string>());
  EXPECT_EQ(state.at("experiments").get<size_t>(), rows.size());
  EXPECT_EQ(repo.current_branch(), state.at("branch").get<std::string>());
}

}  // namespace ak::test
