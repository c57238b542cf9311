// `kernelbench map` and `kernelbench run`: problems found, solved (by our kernels or by an agent),
// judged and scored. Each problem gets a directory under the workspace
// (<workspace>/level<N>/<problem>/) holding its profile, plan and kernels, its solution and its
// record (eval.json); the whole run's rows and scores go to <workspace>/kernelbench-<what>.json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/kernelbench_bridge.h"

namespace ak::cli::kb {

struct LoopOptions {
  std::string dir;       // problems (see problems_dir)
  int level = 0;         // 0: every level
  std::string problems;  // numbers, "1,23,95"; empty: all
  std::string workspace = "kernelbench-workspace";
  double min_share = 0.5;
  int top = 3;                             // operators extracted per mapped problem
  bool evaluate = true;                    // map: also evaluate the ModelNew of our kernels
  std::string proposer;                    // run: "search" (our kernels, optimized) or "agent"
  std::vector<std::string> optimize_args;  // run --proposer search: passed to `autokernel optimize`
  std::string agent_cmd;
  int agent_timeout_s = 600, attempts = 1;
  std::string baseline = "eager";
  EvalSettings eval;
  int map_timeout_s = 7200;
  bool progress = true;
};

// The problems and what our operators compute in each (the Python map: profile + site detection).
nlohmann::json map_problems(const LoopOptions& o);

// For a mapped row of the map: our kernels' ModelNew (extracted, optimized when the proposer is
// search, built, written) judged; the record goes into row["record"] and the row's eval.json.
void solve_with_ours(const LoopOptions& o, const std::string& device_type, nlohmann::json& row);

// For a row of the problem list: the agent command writes the ModelNew (up to `attempts` times,
// told the last failure), and the judge decides.
void solve_with_agent(const LoopOptions& o, nlohmann::json& row);

// The selected problems as the loader lists them (key, level, number, path, inputs; error if malformed).
nlohmann::json list_problems(const LoopOptions& o);

// The selected problems by their files alone (levelN/<number>_<name>.py), without running them:
// the judge reports a malformed one. Throws Error(Usage) for a directory without levels.
nlohmann::json discover_problems(const LoopOptions& o);

// Rows and their fast_p per level over the attempted rows (those with a record).
nlohmann::json summarize(const nlohmann::json& rows, const std::string& baseline);

}  // namespace ak::cli::kb
