#include "harness/experiment.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iomanip>
#include <sstream>

#include "core/error.h"
#include "core/paths.h"
#include "core/registry.h"
#include "core/subprocess.h"
#include "harness/arena.h"
#include "harness/launcher.h"
#include "harness/timed_slots.h"
#include "runtime/ceilings_cache.h"

namespace ak {
namespace {

// Refills of the timed slots timed before the module is loaded, for their median.
constexpr int kRefillRounds = 7;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

StagePlan stage_plan(const ExperimentRequest& req) {
  return {req.problem, req.dtype, req.quick, req.seed};
}

// The timing's source set, far from the stages' seeds: the timed slots draw every launch's inputs
// from it (drawn_inputs.h), so the timed inputs are new to the kernel at every launch.
CaseSpec timing_source_set(const ExperimentRequest& req) {
  return {req.problem, req.dtype, std::string(kRandomCase), req.seed + 1'000'001};
}

// $AUTOKERNEL_TIMING_SLOTS (1 to 64) in place of the rule below: a diagnosis of the judge's clock
// (bench/timing_crosscheck.py --slots). The judge's environment is the user's, never the kernel's.
size_t slots_from_environment() {
  const char* text = std::getenv("AUTOKERNEL_TIMING_SLOTS");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const long slots = std::strtol(text, &end, 10);
  if (*end != '\0' || slots < 1 || slots > 64)
    throw Error(
        ErrorKind::Usage,
        std::string("AUTOKERNEL_TIMING_SLOTS must be a number of slots from 1 to 64, not '") + text + "'");
  return static_cast<size_t>(slots);
}

// Timed slots enough that one batch touches four times the last-level cache (a launch then reads
// memory that no earlier launch of the batch left in it), and at least 16: a batch's fixed cost
// (the GPU switching between the launcher's and the judge's contexts, about 0.3 ms on the H100)
// is subtracted, and what the subtraction misses is shared by more launches (at 8 slots reduce
// 16384 x 4096 read 12% over its time by events; at 16 about 5%, and 32 or 48 do no better:
// docs/benchmarks.md, 2026-11-24 fifth session). The slots take at most an eighth of the
// device's memory (and at least 2 slots).
size_t timing_slot_count(size_t slot_bytes, const DeviceInfo& info) {
  const size_t budget = info.backend == Backend::Cuda
                            ? info.memory_bytes / 8
                            : std::min<size_t>(info.memory_bytes / 16, size_t{1} << 30);
  const size_t bytes = std::max<size_t>(slot_bytes, 1);
  const size_t wanted = (4 * info.l2_bytes + bytes - 1) / bytes;
  // Two slots even past the budget while they take at most a quarter of the device.
  const size_t cap = std::max(budget, std::min(2 * bytes, info.memory_bytes / 4));
  const size_t fits = std::max<size_t>(1, cap / bytes);
  return std::min({std::clamp<size_t>(wanted, 16, 64), fits});
}

// A measured time under the floor (the roofline: bytes at the measured copy bandwidth, FLOPs at
// the measured matrix rate) by more than the margin is not a fast kernel but a broken
// measurement or a cheat. The margins sit above what honest kernels reach: 102.5% of the copy
// figure on the H100; on a CPU, a read-only kernel outruns a copy's read-and-write figure more.
double floor_margin(Backend backend) {
  return backend == Backend::Cuda ? 0.90 : 0.50;
}

std::string check_physics(const ExperimentRequest& req, const ExperimentResult& r) {
  const RooflineTimes floor = roofline_times(req.ceilings, r.flops, r.bytes);
  const double measured = r.timing.median_us * 1e-6, limit = floor.seconds() * floor_margin(req.backend);
  if (floor.seconds() <= 0 || measured >= limit) return "";
  const bool memory = floor.memory_s >= floor.compute_s;
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << "faster than the hardware allows: " << measured * 1e6
      << " us measured, the floor is " << floor.seconds() * 1e6 << " us (" << std::setprecision(1);
  if (memory)
    out << r.bytes / 1e6 << " MB at the measured copy bandwidth of " << req.ceilings.copy_gbps << " GB/s)";
  else
    out << r.flops / 1e9 << " GFLOP at the measured matrix rate of " << req.ceilings.matrix_tflops
        << " TFLOP/s)";
  return out.str();
}

// Times the primary problem on fresh inputs, then checks one timed launch's outputs whole and the
// time against physics.
void time_primary(const CheckContext& ctx, const ExperimentRequest& req, size_t slot_count,
                  const JudgeCosts& costs, const std::function<JudgeCosts()>& recalibrate,
                  ExperimentResult& result) {
  TimedSlots slots(ctx, req.problem, prepare_case(ctx.op, timing_source_set(req)), slot_count);
  result.timing = measure(slots, ctx.launcher, ctx.runtime, costs, req.timing, recalibrate);
  const auto check_start = std::chrono::steady_clock::now();
  CheckOutcome after = slots.verify(slots.pick_slot());
  if (std::string foreign = slots.check_unlaunched(); after.ok && !foreign.empty()) after = {false, foreign};
  result.check_seconds = seconds_since(check_start);
  if (!after.ok) {
    result.status = Status::Fail;
    result.stage = "timing";
    result.reason = "wrong in the timed runs: " + after.reason;
    return;
  }
  const double seconds = result.timing.median_us * 1e-6;
  result.gbps = result.bytes / seconds / 1e9;
  result.tflops = result.flops / seconds / 1e12;
  result.roofline = roofline_fraction(req.ceilings, result.flops, result.bytes, seconds);
  if (std::string impossible = check_physics(req, result); !impossible.empty()) {
    result.status = Status::Fail;
    result.stage = "timing";
    result.reason = std::move(impossible);
    return;
  }
  result.status = Status::Pass;
}

// The arena holds one check's tensors at a time, or the timed slots.
size_t arena_bytes(const Op& op, const ExperimentRequest& req, size_t slot_bytes, size_t slot_count) {
  size_t largest = slot_bytes * slot_count;
  for (const CaseSpec& set : stage_input_sets(op, stage_plan(req))) {
    try {
      largest = std::max(largest, arena_bytes_of(op.signature(set.problem, set.dtype)));
    } catch (const std::exception&) {
      // A problem the op refuses fails its check where it is drawn.
    }
  }
  return largest + (size_t{1} << 20);
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
  sets.push_back(timing_source_set(req));
  return sets;
}

ExperimentResult run_experiment(const ExperimentRequest& req, const Progress& progress) {
  const auto start = std::chrono::steady_clock::now();
  ExperimentResult result;
  std::string current_stage = "load";
  double body_end = 0;
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
    const size_t slot_bytes = arena_bytes_of(op.signature(req.problem, req.dtype));
    const size_t forced_slots = slots_from_environment();
    const size_t slot_count = forced_slots ? forced_slots : timing_slot_count(slot_bytes, runtime->info());
    auto arena = runtime->share(arena_bytes(op, req, slot_bytes, slot_count));
    ArenaAllocator allocator(*arena);
    const auto launcher_start = std::chrono::steady_clock::now();
    Launcher launcher(req.backend, *arena);
    result.launcher_seconds = seconds_since(launcher_start);
    // Before the module is in the launcher: these costs are then the engine's own.
    const size_t samples = TimedSlots::sample_count(op.signature(req.problem, req.dtype), slot_count);
    JudgeCosts costs = measure_judge_costs(*runtime, launcher, *arena, samples);
    const auto recalibrate = [&] { return measure_judge_costs(*runtime, launcher, *arena, samples, 15); };
    DeviceCases cases(*runtime);
    const CheckContext ctx{*runtime, allocator, launcher, op, cases};
    // Judged on a GPU only (timing.cpp), so measured there only: on the host it would cost a
    // CPU-bound experiment several copies of its slots.
    if (runtime->info().backend == Backend::Cuda)
      costs.refill_s = TimedSlots::time_refill(ctx, req.problem, prepare_case(op, timing_source_set(req)),
                                               slot_count, kRefillRounds);
    launcher.load(req.module);
    result.setup_seconds = seconds_since(start);
    if (run_correctness_stages(ctx, stage_plan(req), result, track)) {
      track("timing");
      time_primary(ctx, req, slot_count, costs, recalibrate, result);
    }
    body_end = seconds_since(start);  // what follows this block: the launcher, arena and device let go
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
  if (body_end > 0) result.teardown_seconds = result.total_seconds - body_end;
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
