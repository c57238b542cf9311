// The scripted executor of the loop's executor tests (test_executor.cpp,
// test_executor_sessions.cpp): workers that answer with set times, and a loop over one to three
// reduce kernels driven for real (git, results.tsv, run.json) through it.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli_runner.h"
#include "core/paths.h"
#include "harness/results_log.h"
#include "loop/executor.h"
#include "loop/orchestrator.h"
#include "loop/plan.h"
#include "loop/worker_pool.h"

namespace ak::test {

// Workers that answer at once: PASS with the time `time_us(module, worker)`, or LOST when
// `lose(module, nth, worker)` says so (nth: the order of the measurement, from 1). Builds name their
// module after the configuration and are ready at once, saying they took `build_seconds`.
class ScriptedExecutor final : public WorkerPool {
 public:
  using TimeOf = std::function<double(const std::string& module, int worker)>;
  ScriptedExecutor(int workers, TimeOf time_us) : time_us_(std::move(time_us)) {
    std::vector<WorkerInfo> infos;
    for (int w = 0; w < workers; ++w) {
      std::string name = "w";  // not "w" + to_string(w): GCC 12's -Wrestrict misfires on it when inlined
      name += std::to_string(w);
      infos.push_back({name, "test", w, "Test GPU"});
    }
    start_workers(std::move(infos));
  }
  ~ScriptedExecutor() override { stop_workers(); }

  std::future<BuiltCandidate> build(const Candidate& candidate, const EvaluateOptions&) override {
    {
      std::lock_guard lock(mutex_);
      events.push_back("build " + candidate.source.parent_path().filename().string());
      if (candidate.defines.empty()) starter_builds[candidate.source.parent_path().filename().string()] += 1;
    }
    std::string name = "module";
    for (const auto& [key, value] : candidate.defines) name += " " + key + "=" + value;
    std::promise<BuiltCandidate> built;
    built.set_value(BuiltCandidate{BuildResult{name, build_seconds == 0, build_seconds, ""}, {}});
    return built.get_future();
  }

  // Whether the nth measurement (from 1), of `module` on `worker`, is lost.
  std::function<bool(const std::string& module, int nth, int worker)> lose = [](const std::string&, int,
                                                                                int) { return false; };
  std::vector<int> delay_ms;                  // per worker: how long its measurements take
  double build_seconds = 0;                   // what each build says it took; 0: a compile-cache hit
  std::map<std::string, int> starter_builds;  // per kernel: builds of its starter (no definitions)
  std::map<int, int> jobs_per_worker;
  std::vector<std::pair<std::string, int>> measured;  // module, worker, in order
  // "build KERNEL" as a build starts, "start SHAPE" and "measured SHAPE" as a measurement starts
  // and ends, in order.
  std::vector<std::string> events;

 private:
  ExperimentResult measure_on(size_t worker, const MeasureJob& job, const Progress&) override {
    ExperimentResult result;
    int nth = 0;
    {
      std::lock_guard lock(mutex_);
      jobs_per_worker[static_cast<int>(worker)] += 1;
      measured.emplace_back(job.request.module.string(), static_cast<int>(worker));
      nth = static_cast<int>(measured.size());
      events.push_back("start " + job.request.problem.to_string());
    }
    if (worker < delay_ms.size()) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms[worker]));
    {
      std::lock_guard lock(mutex_);
      events.push_back("measured " + job.request.problem.to_string());  // after its delay: its end
    }
    if (lose(job.request.module.string(), nth, static_cast<int>(worker))) {
      result.status = Status::Lost;
      result.reason = "scripted loss";
      return result;
    }
    result.status = Status::Pass;
    result.timing.median_us = time_us_(job.request.module.string(), static_cast<int>(worker));
    result.timing.samples = 100;
    result.timing.noise = result.timing.spread = 0.001;
    return result;
  }
  void abort_worker(size_t) override {}

  TimeOf time_us_;
  std::mutex mutex_;
};

struct LoopRun {
  std::filesystem::path ws;
  RunState state;
};

// The first `kernels` of "sum" (reduce 48x1024), "sum2" (reduce 48x512) and "sum3" (reduce 48x256).
inline LoopRun start_loop(const std::string& name, int kernels = 1) {
  LoopRun run{test::scratch_dir(name) / "workspace", {}};
  Plan plan{"test", false, {}};
  const std::vector<std::pair<std::string, std::string>> all{
      {"sum", "48x1024"}, {"sum2", "48x512"}, {"sum3", "48x256"}};
  for (const auto& [kernel, shape] : std::vector(all.begin(), all.begin() + kernels)) {
    std::filesystem::create_directories(run.ws / "kernels" / kernel);
    std::filesystem::copy_file(test::kernel("loop_modes.cpp"),
                               run.ws / "kernels" / kernel / (kernel + ".cpp"));
    plan.kernels.push_back(
        {kernel, "reduce", "kernels/" + kernel + "/" + kernel + ".cpp", shape, "fp32", 0.5});
  }
  LoopSettings settings;
  settings.strategy = "exhaustive";
  settings.patience = 20;
  run.state = start_run(run.ws, plan, settings, Backend::Host, "Test GPU");
  return run;
}

// The loop with a budget of `experiments` and one of `seconds` (0: none).
inline void run_with(LoopRun& run, Executor& executor, int experiments, double seconds = 0) {
  LoopEnvironment env;
  env.workspace = run.ws;
  env.backend = Backend::Host;
  env.executor = &executor;
  env.session_max_experiments = experiments;
  env.session_budget_s = seconds;
  run_loop(run.state, env);
}

inline std::vector<std::string> decisions_of(const std::filesystem::path& ws) {
  std::vector<std::string> decisions;
  for (const auto& row : read_results(ws / kResultsFile))
    decisions.push_back(row.at("config") + " " + row.at("decision"));
  return decisions;
}
}  // namespace ak::test
