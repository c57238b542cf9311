// The unattended loop over a run's kernels. It picks a kernel by the end-to-end time it can
// still win (decision.h), asks the proposer for candidates, has the executor (executor.h) build
// them on CPUs and measure them on its workers (one experiment per GPU at a time, as many GPUs as
// it has), decides keep or revert here, in the driver, and records:
// a kept change is one commit on the run branch; every experiment, kept or not, one row of
// results.tsv; the state in run.json after each. It works on a kernel until a stop rule ends
// it (patience, roofline target, per-kernel budget, nothing left to propose), then picks the
// next, until every kernel is done, the session's budget is spent (no experiment starts that the
// ones so far say would end past it), or `stop` is set.
//
// A kill at any moment loses nothing: resume_run replays the rows that run.json had not taken
// in yet and puts the tree back at the last kept commit.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>

#include "harness/evaluate.h"
#include "loop/decision.h"
#include "loop/run_state.h"
#include "runtime/runtime.h"

namespace ak {

class Executor;

struct LoopEnvironment {
  std::filesystem::path workspace;
  Backend backend = Backend::Host;
  std::string arch;
  Ceilings ceilings;
  std::chrono::seconds timeout{120};        // one experiment, before it counts as hung
  std::chrono::seconds agent_timeout{600};  // one agent run
  double max_timing_s = 3.0;                // timing samples per experiment at most
  double session_budget_s = 0;              // this invocation; 0 = until every kernel is done
  int session_max_experiments = 0;          // this invocation; 0 = no limit
  Executor* executor = nullptr;             // builds and measures (not owned; required)
  const std::atomic<bool>* stop =
      nullptr;  // set (e.g. by SIGINT): finish the current experiment, save, return
  std::function<void(const KernelState&, const Outcome&, const ExperimentResult&)> on_experiment;
  std::function<void(const KernelState&, bool starting)> on_kernel;  // starting, or done with it
  std::function<void(const std::string&)> on_note;                   // a measurement run again, and why
  // Every 30 s without a result: what each worker is doing (Executor::activity).
  std::function<void(const std::vector<std::string>&)> on_waiting;
};

// Puts a killed run back in order: replays results.tsv rows past run.json's last experiment,
// switches to the run branch and resets the tree to the last kept commit. Returns the state.
RunState resume_run(const std::filesystem::path& workspace);

// Runs the loop until every kernel is done, the session budget is spent or stop is set.
void run_loop(RunState& state, const LoopEnvironment& env);

}  // namespace ak
