// The five correctness stages, in order, each a list of checks; the first failure ends the run.
//   smoke        the op's small problem, the requested dtype
//   sweep        the op's 8+ shapes x fp16/bf16/fp32, plus the primary (model) problem
//   stability    adversarial input cases x fp16/bf16/fp32
//   determinism  repeated runs on the same inputs are bitwise identical
//   edge         odd sizes, one row, tiny and very long rows x fp16/bf16/fp32
// --quick runs smoke and the primary problem only.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "harness/checks.h"
#include "harness/result.h"

namespace ak {

struct StagePlan {
  Problem primary;
  DType dtype = DType::F16;
  bool quick = false;
  uint64_t seed = 0;
};

using Progress = std::function<void(std::string_view)>;

// Fills result.stages; on a failure also result.status = Fail, result.stage and result.reason.
// Returns whether every stage passed. Device faults propagate as Error(Crash).
bool run_correctness_stages(const CheckContext& ctx, const StagePlan& plan, ExperimentResult& result,
                            const Progress& progress);

// Every input set the stages draw for `plan` (prepare_case's keys, in the stages' order, with
// repeats where a stage reuses another's), for preparing them before the run.
std::vector<CaseSpec> stage_input_sets(const Op& op, const StagePlan& plan);

}  // namespace ak
