// One kernel's turn in the loop: its proposer, its history, the build pipeline, and the
// keep-or-revert bookkeeping of each experiment (commit, results row, run.json).
#pragma once

#include <deque>
#include <functional>
#include <future>
#include <memory>

#include "loop/git_repo.h"
#include "loop/orchestrator.h"
#include "loop/proposer.h"

namespace ak {

class Op;

struct LoopClock {
  std::function<double()> now;  // seconds since the run started, over all its sessions
};

class KernelSession {
 public:
  KernelSession(RunState& state, KernelState& kernel, const LoopEnvironment& env, const LoopClock& clock);
  ~KernelSession();  // waits for builds still in flight (they fill the compile cache); never throws
  KernelSession(const KernelSession&) = delete;
  KernelSession& operator=(const KernelSession&) = delete;

  // Experiments until the kernel is done or `stop` says so.
  void run(const std::function<bool()>& stop);

 private:
  struct Pending {
    Proposal proposal;
    std::future<BuiltCandidate> build;  // invalid when proposal.failure is set
    size_t trial = 0;                   // its entry in history_
  };

  void load_history();
  bool refill();  // false when the proposer has nothing left
  ExperimentResult run_one(Pending& pending);
  void record(const Pending& pending, const ExperimentResult& result);
  void start_build(Pending& pending);
  std::string commit_message(int experiment, const Proposal& proposal, const ExperimentResult& result,
                             const std::string& decision) const;

  RunState& state_;
  KernelState& kernel_;
  const LoopEnvironment& env_;
  const LoopClock& clock_;
  GitRepo repo_;
  std::filesystem::path source_;
  EvaluateOptions options_;
  TuneSpace space_;
  std::optional<Config> defaults_;  // the file's own #define values, as a configuration
  std::unique_ptr<Proposer> proposer_;
  std::vector<Trial> history_;
  std::deque<Pending> pipeline_;
  std::string last_report_;
  bool exhausted_ = false;
};

}  // namespace ak
