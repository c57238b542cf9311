// One experiment: a compiled module checked through every stage and then timed on the primary
// problem. run_experiment does it in this process (the worker); run_isolated runs it in a child
// process with a wall-clock limit, so a hang is TIMEOUT and a crash is CRASH, and the caller
// carries on.
#pragma once

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/problem.h"
#include "core/subprocess.h"
#include "harness/result.h"
#include "harness/stages.h"
#include "harness/timing.h"
#include "runtime/runtime.h"

namespace ak {

struct ExperimentRequest {
  std::string op;
  Backend backend = Backend::Host;
  std::filesystem::path module;
  Problem problem;
  DType dtype = DType::F16;
  bool quick = false;
  uint64_t seed = 20261122;
  TimingOptions timing;
  Ceilings ceilings;  // for the roofline fraction; zeros leave it unknown
};

void to_json(nlohmann::json& j, const ExperimentRequest& r);
void from_json(const nlohmann::json& j, ExperimentRequest& r);

// Every input set run_experiment draws for the request: the stages' and the timing's (throws
// Error(Usage) for an unknown op).
std::vector<CaseSpec> experiment_input_sets(const ExperimentRequest& request);

// In this process. Never throws for a kernel's failure: the result carries it.
ExperimentResult run_experiment(const ExperimentRequest& request, const Progress& progress);

// In a child process (`autokernel worker`), killed after `timeout`.
ExperimentResult run_isolated(const ExperimentRequest& request, std::chrono::seconds timeout,
                              const Progress& progress);

// What an isolated run of run_experiment came to: its result (`answer`, the result's JSON, ""
// when it gave none) or TIMEOUT / CRASH naming the stage it was in. For run_isolated and the
// experiment server, so that both word their failures alike.
ExperimentResult isolated_outcome(const ProcessResult& run, const std::string& answer,
                                  const std::string& stage, std::chrono::seconds timeout);

}  // namespace ak
