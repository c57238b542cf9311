// What an experiment produced. A failure is a status with the stage and a reason, never an
// exception that escapes: the search records it and goes on.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ak {

enum class Status { Pass, Fail, CompileError, LintError, Timeout, Crash, Error };
std::string_view to_string(Status s);  // PASS, FAIL, COMPILE_ERROR, LINT, TIMEOUT, CRASH, ERROR
Status parse_status(std::string_view text);

struct StageReport {
  std::string stage;  // smoke, sweep, stability, determinism, edge, timing-check
  int checks = 0;     // problems x dtypes x input sets that passed
  bool passed = false;
  double worst_norm_error = 0;  // largest ||out-ref|| / ||ref|| seen, over tolerance units
  double seconds = 0;
};

struct TimingReport {
  double median_us = 0;
  double noise = 0;  // relative standard deviation of the samples
  int samples = 0;
  double min_us = 0, max_us = 0;
  double seconds = 0;  // wall time spent sampling
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
  double total_seconds = 0;
  bool compile_cached = false;

  bool passed() const { return status == Status::Pass; }
};

void to_json(nlohmann::json& j, const StageReport& r);
void from_json(const nlohmann::json& j, StageReport& r);
void to_json(nlohmann::json& j, const TimingReport& r);
void from_json(const nlohmann::json& j, TimingReport& r);
void to_json(nlohmann::json& j, const ExperimentResult& r);
void from_json(const nlohmann::json& j, ExperimentResult& r);

}  // namespace ak
