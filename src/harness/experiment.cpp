#include "harness/experiment.h"

#include <unistd.h>

#include <atomic>

#include "core/error.h"
#include "core/paths.h"
#include "core/registry.h"
#include "core/subprocess.h"
#include "runtime/ceilings_cache.h"
#include "runtime/module.h"

namespace ak {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

StagePlan stage_plan(const ExperimentRequest& req) {
  return {req.problem, req.dtype, req.quick, req.seed};
}

// Far from the stages' seeds, so the timed inputs are new to the kernel.
CaseSpec timing_input_set(const ExperimentRequest& req) {
  return {req.problem, req.dtype, std::string(kRandomCase), req.seed + 1'000'001};
}

// Times the primary problem, then checks that the timed runs themselves produced the right
// answer into freshly poisoned outputs (a kernel cannot be right once and fast afterwards).
void time_primary(const CheckContext& ctx, const ExperimentRequest& req, ExperimentResult& result) {
  auto prepared = prepare_case(ctx.op, timing_input_set(req));
  KernelArgs args(ctx.runtime, prepared->signature);
  load_case(args, *prepared);
  result.timing = measure(
      ctx.runtime, [&] { launch_kernel(ctx, args); }, req.timing);
  ctx.runtime.synchronize();
  const CheckOutcome after = verify_case(ctx, args, *prepared);
  if (!after.ok) {
    result.status = Status::Fail;
    result.stage = "timing";
    result.reason = "wrong after the timed runs: " + after.reason;
    return;
  }
  const double seconds = result.timing.median_us * 1e-6;
  result.status = Status::Pass;
  result.gbps = result.bytes / seconds / 1e9;
  result.tflops = result.flops / seconds / 1e12;
  result.roofline = roofline_fraction(req.ceilings, result.flops, result.bytes, seconds);
}

Status status_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Crash: return Status::Crash;
    case ErrorKind::Timeout: return Status::Timeout;
    case ErrorKind::Launch:
    case ErrorKind::Validation: return Status::Fail;
    default: return Status::Error;
  }
}

}  // namespace

void to_json(nlohmann::json& j, const ExperimentRequest& r) {
  j = {{"op", r.op},
       {"backend", to_string(r.backend)},
       {"module", r.module.string()},
       {"problem", r.problem.to_string()},
       {"dtype", to_string(r.dtype)},
       {"quick", r.quick},
       {"seed", r.seed},
       {"timing",
        {{"warmup", r.timing.warmup},
         {"min_samples", r.timing.min_samples},
         {"max_samples", r.timing.max_samples},
         {"max_seconds", r.timing.max_seconds},
         {"target_noise", r.timing.target_noise}}},
       {"ceilings", r.ceilings}};
}

void from_json(const nlohmann::json& j, ExperimentRequest& r) {
  r.op = j.at("op");
  r.backend = parse_backend(j.at("backend").get<std::string>());
  r.module = j.at("module").get<std::string>();
  r.problem = parse_problem(j.at("problem").get<std::string>());
  r.dtype = parse_dtype(j.at("dtype").get<std::string>());
  r.quick = j.at("quick");
  r.seed = j.at("seed");
  const auto& t = j.at("timing");
  r.timing = {t.at("warmup"), t.at("min_samples"), t.at("max_samples"), t.at("max_seconds"),
              t.at("target_noise")};
  r.ceilings = j.at("ceilings").get<Ceilings>();
}

std::vector<CaseSpec> experiment_input_sets(const ExperimentRequest& req) {
  std::vector<CaseSpec> sets = stage_input_sets(find_op(req.op), stage_plan(req));
  sets.push_back(timing_input_set(req));
  return sets;
}

ExperimentResult run_experiment(const ExperimentRequest& req, const Progress& progress) {
  const auto start = std::chrono::steady_clock::now();
  ExperimentResult result;
  std::string current_stage = "load";
  const Progress track = [&](std::string_view stage) {
    current_stage = stage;
    progress(stage);
  };
  try {
    const Op& op = find_op(req.op);
    op.validate(req.problem);
    result.flops = op.flops(req.problem);
    result.bytes = op.bytes(req.problem, req.dtype);
    auto runtime = make_runtime(req.backend);
    KernelModule module(req.module);
    const CheckContext ctx{*runtime, module.launch(), op};
    result.setup_seconds = seconds_since(start);
    if (run_correctness_stages(ctx, stage_plan(req), result, track)) {
      track("timing");
      time_primary(ctx, req, result);
    }
  } catch (const Error& e) {
    result.status = status_for(e.kind());
    result.stage = current_stage;
    result.reason = e.what();
  } catch (const std::exception& e) {
    result.status = Status::Error;
    result.stage = current_stage;
    result.reason = e.what();
  }
  result.total_seconds = seconds_since(start);
  return result;
}

ExperimentResult isolated_outcome(const ProcessResult& run, const std::string& answer,
                                  const std::string& stage, std::chrono::seconds timeout) {
  if (run.ok() && !answer.empty()) return nlohmann::json::parse(answer).get<ExperimentResult>();
  ExperimentResult result;
  result.status = run.timed_out ? Status::Timeout : Status::Crash;
  result.stage = stage;
  result.reason = (run.timed_out ? "no answer within " + std::to_string(timeout.count()) + " s, killed"
                                 : run.describe()) +
                  " during " + stage;
  if (!run.timed_out && run.term_signal == 0) result.reason += ": " + run.tail(3);
  result.total_seconds = run.seconds;
  return result;
}

ExperimentResult run_isolated(const ExperimentRequest& req, std::chrono::seconds timeout,
                              const Progress& progress) {
  static std::atomic<int> counter{0};
  const auto dir = cache_dir() / "runs";
  std::filesystem::create_directories(dir);
  const std::string stem = std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const auto request_path = dir / (stem + ".request.json");
  const auto result_path = dir / (stem + ".result.json");
  write_file_atomically(request_path, nlohmann::json(req).dump());

  std::string stage = "load";
  ProcessOptions options;
  options.timeout = timeout;
  options.on_line = [&](std::string_view line) {
    if (line.rfind("stage ", 0) == 0) {
      stage = line.substr(6);
      progress(stage);
    }
  };
  const ProcessResult run = run_process({self_executable().string(), "worker", "--request",
                                         request_path.string(), "--result", result_path.string()},
                                        options);

  const bool answered = run.ok() && std::filesystem::exists(result_path);
  ExperimentResult result =
      isolated_outcome(run, answered ? read_text_file(result_path) : "", stage, timeout);
  std::error_code ec;
  std::filesystem::remove(request_path, ec);
  std::filesystem::remove(result_path, ec);
  return result;
}

}  // namespace ak
