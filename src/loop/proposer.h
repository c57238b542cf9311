// Proposers for the loop: what to try next on one kernel. Two kinds behind one interface:
//   search  a strategy (search/strategy.h) over the kernel's declared @tune space; proposals
//           are configurations, the source is untouched, so several can be built ahead
//   agent   a user's command edits the kernel file (search/agent.h); one at a time
// The engine, never a proposer, builds, checks, times and decides.
#pragma once

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/result.h"
#include "loop/run_state.h"
#include "search/strategy.h"
#include "search/tune_space.h"

namespace ak {

struct Proposal {
  Config config;  // the -D definitions to build with
  bool edits_source = false;
  // Set when the proposal failed before anything could be built (the agent timed out, broke
  // the file...): it is recorded as this result, and the loop goes on.
  std::optional<ExperimentResult> failure;
  std::string note;  // e.g. "agent: edited"
};

struct ProposerContext {
  const KernelState* kernel = nullptr;
  std::filesystem::path source;  // absolute path of the kernel file
  std::vector<Trial> history;    // this kernel's experiments (pending ones marked)
  std::string last_report;       // the last experiment's report, for an agent
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // True when next() may be asked again before the earlier proposals have results.
  virtual bool lookahead() const = 0;
  // nullopt: nothing left to propose for this kernel.
  virtual std::optional<Proposal> next(const ProposerContext& context) = 0;
};

// A search proposer over `feasible` with the named strategy. Throws Error(Usage) for an unknown one.
std::unique_ptr<Proposer> make_search_proposer(const std::string& strategy, std::vector<Config> feasible,
                                               uint64_t seed);

struct AgentSettings {
  std::string command;
  std::string op, problem, dtype;
  std::chrono::seconds timeout{600};
  Config kept_config;  // built with the edited source when the file still declares it
};

std::unique_ptr<Proposer> make_agent_proposer(AgentSettings settings);

}  // namespace ak
