// A candidate from source to result: lint, compile (content-addressed cache), and the isolated
// experiment. Split in two so that callers can compile many candidates in parallel on CPU
// threads while the device runs one experiment at a time.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>

#include "harness/experiment.h"
#include "runtime/compiler.h"

namespace ak {

class ExperimentServer;

struct Candidate {
  std::filesystem::path source;
  Defines defines;
};

struct EvaluateOptions {
  ExperimentRequest request;  // op, backend, problem, dtype, quick, seed, timing, ceilings (module unset)
  std::string arch;           // CUDA architecture to build for
  std::chrono::seconds timeout{300};
  std::chrono::seconds compile_timeout{300};
  // Runs the experiments when set (prepared cases reused across candidates); otherwise each one
  // is a fresh `autokernel worker` (run_isolated). Not owned.
  ExperimentServer* server = nullptr;
};

struct BuiltCandidate {
  std::optional<BuildResult> build;  // set when lint and compile passed
  ExperimentResult failure;          // LINT or COMPILE_ERROR (or ERROR) otherwise
};

// Lints the source and compiles it. Never throws for the candidate's own faults.
BuiltCandidate build_candidate(const Candidate& candidate, const EvaluateOptions& options);
ExperimentResult run_candidate(const BuiltCandidate& built, const EvaluateOptions& options,
                               const Progress& progress);

// Lint findings as one error message, or "" when the source is clean.
std::string lint_report(const std::filesystem::path& source);

}  // namespace ak
