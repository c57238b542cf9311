// What an experiment produced. A failure is a status with the stage and a reason, never an
// exception that escapes: the search records it and goes on.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ak {

// Lost: the machinery that measures (an experiment server, a Ray actor, a node) died under the
// experiment, and it could not be run again: nothing is known about the kernel.
enum class Status { Pass, Fail, CompileError, LintError, Timeout, Crash, Error, Lost };
std::string to_string(Status s);  // PASS, FAIL, COMPILE_ERROR, LINT, TIMEOUT, CRASH, ERROR, LOST

struct StageReport {
  std::string stage;  // smoke, sweep, stability, determinism, edge, timing-check
  int checks = 0;     // problems x dtypes x input sets that passed
  bool passed = false;
  double worst_norm_error = 0;  // largest ||out-ref|| / ||ref|| seen, over tolerance units
  double seconds = 0;
};

struct TimingReport {
  double median_us = 0;
  double noise = 0;   // relative standard deviation of the samples (the stopping rule's measure)
  double spread = 0;  // 1.4826 * MAD / median: the same for normal samples, but a few preempted
                      // samples do not inflate it (they do not move the median either)
  int samples = 0;
  double min_us = 0, max_us = 0;
  double seconds = 0;            // wall time spent sampling
  int slots = 0;                 // launches per timed batch (each on its own fresh inputs)
  double batch_overhead_us = 0;  // the judge's cost of an empty batch, subtracted from each batch:
  // the smaller of its calibrations before the module was loaded and after the timed runs
  double batch_overhead_before_us = 0, batch_overhead_after_us = 0;
  // Where a batch's time goes (medians): from the request to the launcher's "done", and from
  // there to the judge's reads showing every sampled output right (reads: the most it took).
  double batch_run_us = 0, batch_confirm_us = 0;
  int confirm_reads = 0;
  // The launcher's own CUDA events over a batch's launches (median; negative on the host): a
  // diagnostic of where the time goes, forgeable by the kernel's process, never used to judge.
  double launcher_batch_us = -1;
  // The judge's own device work between batches (medians over the batches, beside the same work
  // timed before the module was loaded; 0 where not measured): the refill of the slots' inputs
  // and the cache flush. Far slower than before means the device was busy with the kernel's work.
  double refill_us = 0, refill_before_us = 0, flush_us = 0, flush_before_us = 0;
};

struct ExperimentResult {
  Status status = Status::Error;
  std::string stage;   // the stage that failed (or "" on PASS)
  std::string reason;  // one line
  std::vector<StageReport> stages;
  TimingReport timing;
  double flops = 0, bytes = 0;
  double gbps = 0, tflops = 0;
  double roofline = 0;  // fraction of the roofline bound at the measured ceilings (0 if unknown)
  double compile_seconds = 0;
  double setup_seconds = 0;     // device initialisation and module load, before the first stage
  double launcher_seconds = 0;  // of setup: the launcher's start (exec, its device, sandbox) to "ready"
  double check_seconds = 0;     // the whole check of a timed slot after the timed runs
  double teardown_seconds = 0;  // the launcher's end, the arena and the device handles let go
  double total_seconds = 0;
  double exit_seconds = 0;  // outside total: the judge process's start and end (fork, device teardown)
  bool compile_cached = false;

  bool passed() const { return status == Status::Pass; }
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StageReport, stage, checks, passed, worst_norm_error, seconds)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TimingReport, median_us, noise, spread, samples, min_us,
                                                max_us, seconds, slots, batch_overhead_us,
                                                batch_overhead_before_us, batch_overhead_after_us,
                                                batch_run_us, batch_confirm_us, confirm_reads,
                                                launcher_batch_us, refill_us, refill_before_us, flush_us,
                                                flush_before_us)
NLOHMANN_JSON_SERIALIZE_ENUM(Status, {{Status::Error, "ERROR"},
                                      {Status::Pass, "PASS"},
                                      {Status::Fail, "FAIL"},
                                      {Status::CompileError, "COMPILE_ERROR"},
                                      {Status::LintError, "LINT"},
                                      {Status::Timeout, "TIMEOUT"},
                                      {Status::Crash, "CRASH"},
                                      {Status::Lost, "LOST"}})
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ExperimentResult, status, stage, reason, stages, timing,
                                                flops, bytes, gbps, tflops, roofline, compile_seconds,
                                                setup_seconds, launcher_seconds, check_seconds,
                                                teardown_seconds, total_seconds, exit_seconds, compile_cached)

// Where an experiment's time went, e.g. "compile=2.98 setup=0.21 launcher=0.20 smoke=0.03
// sweep=2.10 timing=0.33 check=0.15 teardown=0.10 other=0.05 total=4.90 exit=0.20": compile only
// when it was not a cache hit; setup is the judge's own part of it, launcher the rest; other is what
// no phase names (the timed problem's upload); total is the experiment's own, without the compile;
// exit, outside total, the judge process's fork and end.
std::string phase_seconds(const ExperimentResult& r);

}  // namespace ak
