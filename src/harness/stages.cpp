#include "harness/stages.h"

#include <chrono>

namespace ak {
namespace {

struct Stage {
  std::string_view name;
  std::vector<CaseSpec> cases;
  bool determinism = false;
};

void add_all_dtypes(std::vector<CaseSpec>& cases, const Problem& p, const std::string& input_case) {
  for (DType t : kFloatTypes) cases.push_back({p, t, input_case, 0});
}

std::vector<Stage> plan_stages(const Op& op, const StagePlan& plan) {
  const StageProblems problems = op.stage_problems_like(plan.primary);
  const std::string random{kRandomCase};
  std::vector<Stage> stages;
  stages.push_back({"smoke", {{problems.smoke, plan.dtype, random, 0}}});
  if (plan.quick) {
    stages.push_back({"primary", {{plan.primary, plan.dtype, random, 0}}});
  } else {
    Stage sweep{"sweep", {}};
    for (const auto& p : problems.sweep) add_all_dtypes(sweep.cases, p, random);
    sweep.cases.push_back({plan.primary, plan.dtype, random, 0});
    Stage stability{"stability", {}};
    for (const auto& p : problems.stability)
      for (const auto& c : op.stability_cases()) add_all_dtypes(stability.cases, p, c);
    Stage edge{"edge", {}};
    for (const auto& p : problems.edge) add_all_dtypes(edge.cases, p, random);
    stages.push_back(std::move(sweep));
    stages.push_back(std::move(stability));
    stages.push_back(std::move(edge));
  }

  // Each check draws its own input sets: seeds spaced by the sets a check uses.
  uint64_t seed = plan.seed;
  for (auto& stage : stages)
    for (auto& c : stage.cases) c.seed = (seed += kInputSetsPerCheck);

  if (!plan.quick) {
    // Determinism repeats inputs the sweep already drew (references cached in this process):
    // the first sweep problem in fp16 and the primary problem. It runs before the edge stage.
    Stage determinism{"determinism", {}, true};
    const auto& sweep = stages[1].cases;
    for (const CaseSpec& c : sweep)
      if ((c.problem == problems.sweep.front() && c.dtype == DType::F16) || &c == &sweep.back())
        determinism.cases.push_back(c);
    stages.insert(stages.begin() + 3, std::move(determinism));
  }
  return stages;
}

}  // namespace

bool run_correctness_stages(const CheckContext& ctx, const StagePlan& plan, ExperimentResult& result,
                            const Progress& progress) {
  for (const Stage& stage : plan_stages(ctx.op, plan)) {
    progress(stage.name);
    const auto start = std::chrono::steady_clock::now();
    StageReport report{std::string(stage.name), 0, true, 0, 0};
    for (const CaseSpec& c : stage.cases) {
      const CheckOutcome outcome = stage.determinism ? run_determinism(ctx, c, 3) : run_check(ctx, c);
      report.worst_norm_error = std::max(report.worst_norm_error, outcome.worst_norm_error);
      if (!outcome.ok) {
        report.passed = false;
        result.status = Status::Fail;
        result.stage = report.stage;
        result.reason = outcome.reason;
        break;
      }
      ++report.checks;
    }
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.stages.push_back(report);
    if (!report.passed) return false;
  }
  return true;
}

std::vector<CaseSpec> stage_input_sets(const Op& op, const StagePlan& plan) {
  std::vector<CaseSpec> sets;
  for (const Stage& stage : plan_stages(op, plan))
    for (const CaseSpec& c : stage.cases) {
      // run_determinism repeats the check's first set; run_check draws every set.
      const int n_sets = stage.determinism ? 1 : kInputSetsPerCheck;
      for (int set = 0; set < n_sets; ++set) sets.push_back(input_set(c, set));
    }
  return sets;
}

}  // namespace ak
