// The loop's state on disk, in its workspace (a git repository of its own):
//
//   workspace/run.json                 this struct; rewritten atomically after every experiment
//   workspace/results.tsv              every experiment, one row (harness/results_log.h), not tracked
//   workspace/kernels/<name>/<file>    the kernel being optimized (tracked)
//   workspace/kernels/<name>/config    its kept @tune configuration, "NAME=VALUE ..." (tracked)
//
// Each kept experiment is one commit on the run branch; run.json names the commit of each
// kernel's best. `autokernel optimize --resume` and `autokernel report` read this file.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ak {

// Why the orchestrator stopped working on a kernel ("" while it still may be picked).
inline constexpr const char* kDonePatience = "patience";    // N experiments in a row without a gain
inline constexpr const char* kDoneRoofline = "roofline";    // reached the target roofline fraction
inline constexpr const char* kDoneBudget = "budget";        // its own time budget is spent
inline constexpr const char* kDoneExhausted = "exhausted";  // the proposer has nothing left
inline constexpr const char* kDoneBroken = "broken";        // its starter does not pass the harness

struct KernelState {
  std::string name;          // unique in the plan, e.g. "rmsnorm" or "matmul_4096x4096x11008"
  std::string op;            // the operator (src/ops)
  std::string file;          // the kernel source, relative to the workspace
  std::string shape;         // the primary problem, "8192x8192" or "4x32x4096x128:causal=1"
  std::string dtype;         // fp16, bf16, fp32
  double share = 0;          // fraction of the model's time this kernel's op takes (baseline)
  double baseline_us = 0;    // the starter's time (0 until measured)
  double best_us = 0;        // the best kept time (0 until measured)
  double best_noise = 0;     // relative noise of that measurement
  double best_spread = 0;    // its robust spread (TimingReport::spread), which the keep rule uses
  double best_roofline = 0;  // fraction of the roofline at the best
  std::string best_config;   // the kept configuration ("" = the file's defaults)
  std::string best_commit;   // the commit holding the best
  std::string best_worker;   // the worker (GPU) that measured it: a keep is re-measured there
  int experiments = 0;
  int kept = 0;
  int failed = 0;
  int non_improving = 0;  // consecutive experiments without a kept gain
  double seconds = 0;     // wall time spent on this kernel
  std::string done;       // one of kDone*, or "" while active
};

struct LoopSettings {
  std::string proposer = "search";  // search or agent
  std::string strategy = "anneal";  // for the search proposer (search/strategy.h)
  std::string agent_cmd;            // for the agent proposer
  double budget_s = 0;              // whole run; 0 = until every kernel is done
  double kernel_budget_s = 0;       // per kernel; 0 = none
  int patience = 5;                 // consecutive non-improvements before moving on
  double roofline_target = 0.9;     // move on at this fraction of the roofline
  double min_gain = 0.005;          // a keep must be this much faster, and beyond the noise
  bool quick = false;               // smoke + primary only (never the default)
  uint64_t seed = 20261122;
};

struct RunState {
  int version = 1;
  std::string name;     // the run's name: "suite", or the model's
  std::string branch;   // autokernel/<date>-<name>
  std::string backend;  // cuda or host
  std::string device;
  std::string started;   // UTC timestamp
  double elapsed_s = 0;  // wall time over all sessions of this run (resumes add up)
  int experiments = 0;   // numbered from 1; the last one recorded
  std::string head;      // the commit the workspace's tree must be at: the last kept one
  LoopSettings settings;
  std::vector<KernelState> kernels;
  // The suite has no model: each kernel's share is its baseline time over the sum of the
  // baselines measured so far (as if the model ran each operator once).
  bool shares_from_baselines = false;
  // Projected end-to-end speedup from the plan's shares and the kernels' baseline and best
  // times (Amdahl's law: the rest of the model unchanged).
  double projected_speedup = 1;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(KernelState, name, op, file, shape, dtype, share, baseline_us,
                                                best_us, best_noise, best_spread, best_roofline, best_config,
                                                best_commit, best_worker, experiments, kept, failed,
                                                non_improving, seconds, done)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LoopSettings, proposer, strategy, agent_cmd, budget_s,
                                                kernel_budget_s, patience, roofline_target, min_gain, quick,
                                                seed)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunState, version, name, branch, backend, device, started,
                                                elapsed_s, experiments, head, settings, kernels,
                                                shares_from_baselines, projected_speedup)

inline constexpr const char* kRunStateFile = "run.json";
inline constexpr const char* kResultsFile = "results.tsv";

// Throws Error(Usage) when the workspace holds no run, Error(Io) on an unreadable file.
RunState load_run_state(const std::filesystem::path& workspace);
void save_run_state(const std::filesystem::path& workspace, const RunState& state);  // atomic

// Amdahl: total time 1 at baseline; each kernel's share shrinks by best/baseline.
double projected_speedup(const std::vector<KernelState>& kernels);

}  // namespace ak
