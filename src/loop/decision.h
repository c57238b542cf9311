// The loop's bookkeeping, as pure functions over RunState so that a live run and a resumed one
// (replaying results.tsv) reach the same state through the same code:
//   decide       baseline / kept / reverted / failed for a result against the kernel's best
//   apply        one experiment's outcome into the state (counters, best, stop rules, shares)
//   pick_next    the kernel with the most end-to-end time left to win (Amdahl's law)
#pragma once

#include <string>

#include "harness/result.h"
#include "harness/results_log.h"
#include "loop/run_state.h"

namespace ak {

// One experiment as the state needs it: what results.tsv records.
struct Outcome {
  int experiment = 0;
  std::string name;      // the kernel's name in the plan
  std::string config;    // what was tried
  std::string status;    // PASS, FAIL, ...
  std::string decision;  // baseline, kept, reverted, failed
  std::string commit;    // for baseline and kept
  double median_us = 0, noise = 0, roofline = 0;
  int samples = 0;
  double elapsed_s = 0;  // since the run started
  double spread = 0;     // robust relative spread (0 in rows from before it was recorded)
  std::string worker{};  // where the figure was measured ("gpu1"; "" in rows from before workers)
};

// Reads a results.tsv row written by the loop. Throws Error(Io) for a row without loop columns.
Outcome outcome_from_record(const ResultRecord& record);

// The relative gain a result must show over the kernel's best to be kept: at least min_gain,
// and three standard errors of the difference of the two medians (each ~1.25 sigma/sqrt(n)),
// so a keep is never measurement noise.
double keep_threshold(const KernelState& kernel, const ExperimentResult& result, double min_gain);

// "failed" unless the result passed; "baseline" for the kernel's first passing result;
// "kept" when faster than the best beyond keep_threshold; "reverted" otherwise.
std::string decide(const KernelState& kernel, const ExperimentResult& result, double min_gain);

// Adds the outcome to its kernel and the run: counters, best, time spent, the stop rules of
// the settings (patience, roofline target, per-kernel budget), suite shares and the projected
// speedup. Throws Error(Io) when the outcome names no kernel of the run.
void apply(RunState& state, const Outcome& outcome);

// The active kernel (done empty) to work on next: the first without a baseline in plan order,
// else the one whose reaching its roofline would save the most end-to-end time. nullptr when
// every kernel is done.
// `skip`: a kernel not to pick (the one whose session is ending, to guess what follows it).
KernelState* pick_next(RunState& state, const KernelState* skip = nullptr);

}  // namespace ak
