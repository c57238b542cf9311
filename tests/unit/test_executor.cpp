// The loop's executor (src/loop/executor.h) and the driver's use of several workers: which job
// runs where, a keep re-measured on the GPU of the best it beats, a lost measurement run again,
// and the split of cores between measuring and compiling. The driver runs for real (git,
// results.tsv, run.json) over a scripted executor whose workers answer with set times.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "cli_runner.h"
#include "core/cpu_topology.h"
#include "core/error.h"
#include "core/paths.h"
#include "harness/results_log.h"
#include "loop/executor.h"
#include "loop/orchestrator.h"
#include "loop/plan.h"
#include "loop/worker_pool.h"

namespace ak {
namespace {

TEST(Executor, GpuListsAreAllOrDistinctVisibleOrdinals) {
  EXPECT_EQ(parse_gpu_list("all", 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(parse_gpu_list("2,0", 4), (std::vector<int>{2, 0}));
  for (const std::string bad : {"", "1,1", "0,x", "-1", "4", "0,,1", "1.5"})
    EXPECT_THROW(parse_gpu_list(bad, 4), Error) << bad;
  EXPECT_THROW(parse_gpu_list("all", 0), Error);
}

TEST(Executor, EachMeasuringWorkerGetsTwoCoresOfItsOwnAndTheBuildsTheRest) {
  // Four physical cores with two hyperthreads each.
  const std::vector<std::vector<int>> cores{{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  const CorePlan one = plan_cores(cores, 1);
  ASSERT_TRUE(one.pinned());
  EXPECT_EQ(one.workers, (std::vector<std::vector<int>>{{0, 4, 1, 5}}));
  EXPECT_EQ(one.builds, (std::vector<int>{2, 6, 3, 7}));
  EXPECT_FALSE(plan_cores(cores, 2).pinned()) << "no core left to compile on";
  EXPECT_FALSE(plan_cores({{0}, {1}}, 1).pinned());
  EXPECT_FALSE(physical_cores().empty());
  EXPECT_EQ(parse_cpu_list(cpu_list({0, 4, 1, 5})), (std::vector<int>{0, 4, 1, 5}));
  EXPECT_TRUE(parse_cpu_list("0,x").empty());
}

// Workers that answer at once: PASS with the time `time_us(module, worker)`, or LOST when
// `lose(module, nth)` says so (nth: the order of the measurement, from 1). Builds name their
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

TEST(Executor, JobsForAWorkerWaitForItAndTheRestGoToAnyFreeOne) {
  ScriptedExecutor executor(3, [](const std::string&, int) { return 1.0; });
  for (uint64_t t = 1; t <= 30; ++t) executor.submit({t, {}, std::chrono::seconds(1), t % 5 == 0 ? 2 : -1});
  EXPECT_EQ(executor.in_flight(), 30u);
  std::set<uint64_t> tickets;
  for (int i = 0; i < 30; ++i) {
    const MeasureDone done = *executor.next(std::chrono::hours(1));
    EXPECT_TRUE(tickets.insert(done.ticket).second);
    if (done.ticket % 5 == 0) {
      EXPECT_EQ(done.worker, 2) << done.ticket;
    }
  }
  EXPECT_EQ(executor.in_flight(), 0u);
  EXPECT_THROW(executor.next(std::chrono::hours(1)), Error);
  EXPECT_EQ(executor.activity().size(), 3u);
  // A job still measuring: next() gives up after its wait, and the worker says what it is doing.
  ScriptedExecutor slow(1, [](const std::string&, int) { return 1.0; });
  slow.delay_ms = {300};
  MeasureJob job{1, {}, std::chrono::seconds(1), -1};
  job.request.op = "reduce";
  slow.submit(job);
  EXPECT_FALSE(slow.next(std::chrono::milliseconds(50)));
  EXPECT_NE(slow.activity().front().find("reduce"), std::string::npos) << slow.activity().front();
  EXPECT_TRUE(slow.next(std::chrono::seconds(10)));
}

struct LoopRun {
  std::filesystem::path ws;
  RunState state;
};

// The first `kernels` of "sum" (reduce 48x1024), "sum2" (reduce 48x512) and "sum3" (reduce 48x256).
LoopRun start_loop(const std::string& name, int kernels = 1) {
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
void run_with(LoopRun& run, Executor& executor, int experiments, double seconds = 0) {
  LoopEnvironment env;
  env.workspace = run.ws;
  env.backend = Backend::Host;
  env.executor = &executor;
  env.session_max_experiments = experiments;
  env.session_budget_s = seconds;
  run_loop(run.state, env);
}

// The starter (no definitions) takes 100 us everywhere; MODE=4 takes 50 us on w0 and reads 10%
// faster on w1, which also flatters everything else it measures by 10%. Each time that
// candidate's turn comes on w1, its keep is decided by a second measurement on w0.
TEST(Executor, AKeepMeasuredOnAnotherWorkerIsDecidedOnTheBestsWorker) {
  ScriptedExecutor executor(2, [](const std::string& module, int worker) {
    const double base = module.find("MODE=4") != std::string::npos ? 50.0 : 100.0;
    return worker == 1 ? 0.9 * base : base;
  });
  // Measurements that take a while: a worker busy with one leaves the next to the other (with
  // instant ones, one worker's thread could take every job: 14 runs in 150).
  executor.delay_ms = {20, 20};
  LoopRun run = start_loop("executor-keep");
  run_with(run, executor, 10);
  const auto rows = read_results(run.ws / kResultsFile);
  ASSERT_EQ(rows.size(), 10u);
  ASSERT_EQ(rows[0].at("decision"), "baseline");
  const std::string best_worker = rows[0].at("worker");
  int kept = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    EXPECT_EQ(row.at("experiment"), std::to_string(i + 1));
    EXPECT_FALSE(row.at("worker").empty());
    if (row.at("decision") != "kept") continue;
    ++kept;
    // Kept at its time on the baseline's worker; where it was first seen elsewhere, both figures.
    EXPECT_EQ(row.at("worker"), best_worker) << row.at("config");
    EXPECT_DOUBLE_EQ(std::stod(row.at("median_us")), best_worker == "w1" ? 45.0 : 50.0);
    if (!row.at("first_worker").empty()) {
      EXPECT_NE(row.at("first_worker"), best_worker);
      EXPECT_DOUBLE_EQ(std::stod(row.at("first_us")), best_worker == "w1" ? 50.0 : 45.0);
    }
  }
  EXPECT_GE(kept, 1);
  EXPECT_EQ(run.state.kernels.at(0).best_worker, best_worker);
  EXPECT_GT(executor.jobs_per_worker[0], 0);
  EXPECT_GT(executor.jobs_per_worker[1], 0);
}

// A machine that reads every measurement 3% faster than the one before: configurations that run
// alike (all but MODE=4, twice as fast) would each read faster than the best recorded before them.
// A would-be keep is timed again beside the best, which reads faster still: only MODE=4's real gain
// survives, and each confirmation's figures are in its row.
TEST(Executor, AKeepIsConfirmedBesideTheBestTimedAgainSoDriftKeepsNothing) {
  auto measurements = std::make_shared<std::atomic<int>>(0);
  ScriptedExecutor executor(1, [measurements](const std::string& module, int) {
    const double base = module.find("MODE=4") != std::string::npos ? 50.0 : 100.0;
    return base * std::pow(0.97, ++*measurements);
  });
  LoopRun run = start_loop("executor-drift");
  run_with(run, executor, 10);
  const auto rows = read_results(run.ws / kResultsFile);
  ASSERT_EQ(rows.size(), 10u);
  int kept = 0, confirmed = 0;
  for (const auto& row : rows) {
    const bool fast = row.at("config").find("MODE=4") != std::string::npos;
    if (row.at("decision") == "kept") {
      ++kept;
      EXPECT_TRUE(fast) << row.at("config") << " kept on drift alone";
    }
    if (std::stod(row.at("best_again_us")) > 0) {
      ++confirmed;
      EXPECT_GT(std::stod(row.at("again_us")), 0) << row.at("config");
    }
  }
  EXPECT_EQ(kept, 1);
  EXPECT_GT(confirmed, kept) << "drift alone made would-be keeps, each timed again";
  EXPECT_NE(run.state.kernels.at(0).best_config.find("MODE=4"), std::string::npos);
}

// A hostile candidate that slows whatever runs after it (work left running, a throttled GPU) would
// make the best's re-timing read slow. That buys nothing: a keep must first beat the best's
// recorded figure, so candidates a hair faster than it (within the threshold) are never timed
// beside it again, however slow the best would then read.
TEST(Executor, ASabotagedRetimingOfTheBestBuysNoKeep) {
  auto starter_runs = std::make_shared<std::atomic<int>>(0);
  ScriptedExecutor executor(1, [starter_runs](const std::string& module, int) {
    if (module == "module") return ++*starter_runs == 1 ? 100.0 : 1000.0;  // the best, re-timed: slow
    return 99.9;  // 0.1% faster: under the loop's 0.5% least gain
  });
  LoopRun run = start_loop("executor-sabotage");
  run_with(run, executor, 10);
  const auto rows = read_results(run.ws / kResultsFile);
  ASSERT_EQ(rows.size(), 10u);
  for (const auto& row : rows) {
    EXPECT_NE(row.at("decision"), "kept") << row.at("config");
    EXPECT_EQ(std::stod(row.at("best_again_us")), 0) << row.at("config") << ": the best was timed again";
  }
  EXPECT_EQ(*starter_runs, 1);
}

std::vector<std::string> decisions_of(const std::filesystem::path& ws) {
  std::vector<std::string> decisions;
  for (const auto& row : read_results(ws / kResultsFile))
    decisions.push_back(row.at("config") + " " + row.at("decision"));
  return decisions;
}

// Each configuration's time depends on it alone; the second worker answers at once and the first
// takes 30 ms, so results come back out of order. They are decided in proposal order: the same
// decisions, in the same order, as one worker makes.
TEST(Executor, SeveralWorkersDecideAsOneWorkerDoes) {
  const auto time_of = [](const std::string& module, int) {
    double us = 100;
    if (module.find("MODE=4") != std::string::npos) us = 20;
    if (module.find("MODE=0 REPEAT=4") != std::string::npos) us = 60;
    return us;
  };
  ScriptedExecutor one(1, time_of);
  LoopRun alone = start_loop("executor-one");
  run_with(alone, one, 10);
  ScriptedExecutor two(2, time_of);
  two.delay_ms = {30, 0};
  LoopRun pair = start_loop("executor-two");
  run_with(pair, two, 10);
  EXPECT_EQ(decisions_of(pair.ws), decisions_of(alone.ws));
  EXPECT_EQ(decisions_of(alone.ws).size(), 10u);
  EXPECT_GT(two.jobs_per_worker[1], 0);
}

TEST(Executor, ALostMeasurementIsRunAgainOnAnotherWorkerAndNeverPasses) {
  ScriptedExecutor executor(2, [](const std::string&, int) { return 100.0; });
  std::set<std::string> lost_once;
  std::vector<int> lost_at;  // which measurements (their order, from 1) were lost
  std::mutex lost_mutex;
  executor.lose = [&](const std::string& module, int nth, int) {
    std::lock_guard lock(lost_mutex);
    const bool lose = nth % 3 == 0 && lost_once.insert(module).second;  // each module lost once at most
    if (lose) lost_at.push_back(nth);
    return lose;
  };
  LoopRun run = start_loop("executor-lost");
  run_with(run, executor, 6);
  const auto rows = read_results(run.ws / kResultsFile);
  ASSERT_EQ(rows.size(), 6u);
  for (const auto& row : rows) EXPECT_EQ(row.at("status"), "PASS") << row.at("reason");
  EXPECT_GE(lost_once.size(), 1u);
  // Each retry ran on the other worker: the one that lost it may still be restarting.
  for (int nth : lost_at) {
    const std::string module = executor.measured[static_cast<size_t>(nth - 1)].first;
    const int worker = executor.measured[static_cast<size_t>(nth - 1)].second;
    const auto retry = std::find_if(executor.measured.begin() + nth, executor.measured.end(),
                                    [&](const auto& m) { return m.first == module; });
    ASSERT_NE(retry, executor.measured.end()) << module;
    EXPECT_NE(retry->second, worker) << module;
  }

  // Lost twice: recorded LOST with the reason, counted as a failure, never a time.
  ScriptedExecutor unlucky(2, [](const std::string&, int) { return 100.0; });
  unlucky.lose = [](const std::string&, int nth, int) { return nth > 1; };
  LoopRun again = start_loop("executor-lost-twice");
  run_with(again, unlucky, 3);
  const auto lost = read_results(again.ws / kResultsFile);
  ASSERT_EQ(lost.size(), 3u);
  EXPECT_EQ(lost[1].at("status"), "LOST");
  EXPECT_EQ(lost[1].at("decision"), "failed");
  EXPECT_NE(lost[1].at("reason").find("scripted loss"), std::string::npos);
}

// The baseline's worker loses everything after the baseline (an actor or node that died and
// does not come back). MODE=1 is faster: its first run is lost, its retry on the other worker
// would be kept, and its re-measurement on the best's worker is lost too. That gets a second
// chance of its own: no row is LOST, and the keeps are confirmed on the worker that is left.
TEST(Executor, AKeepWhoseRemeasurementIsLostIsMeasuredOnAWorkerThatIsLeft) {
  ScriptedExecutor executor(2, [](const std::string& module, int) {
    const auto mode = module.find("MODE=");
    return 100.0 - 15.0 * (mode == std::string::npos ? 0 : module[mode + 5] - '0');
  });
  std::atomic<int> dead{-1};
  executor.lose = [&](const std::string&, int nth, int worker) {
    if (nth == 1) dead = worker;
    if (nth == 1 || worker == dead) return nth > 1;
    // The dead worker answers at once and the other takes a while: most candidates go to the
    // dead one first, as they would to a restarting actor.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return false;
  };
  LoopRun run = start_loop("executor-lost-best");
  run_with(run, executor, 10);
  const auto rows = read_results(run.ws / kResultsFile);
  ASSERT_EQ(rows.size(), 10u);
  const std::string left = dead == 0 ? "w1" : "w0";
  int kept = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].at("status"), "PASS") << rows[i].at("config") << ": " << rows[i].at("reason");
    EXPECT_EQ(rows[i].at("worker"), left) << rows[i].at("config");
    if (rows[i].at("decision") == "kept") ++kept;
  }
  EXPECT_GE(kept, 3) << "MODE=1..4 each beat the one before by 15 us or more";
  EXPECT_EQ(run.state.kernels.at(0).best_worker, left);
  EXPECT_DOUBLE_EQ(run.state.kernels.at(0).best_us, 40.0);
}

// At a kernel switch the workers would wait for the next kernel's builds: they start while the
// last kernel's measurements finish (here its baseline, then its search running out).
TEST(Executor, TheNextKernelsBuildsStartWhileTheLastMeasurementsFinish) {
  ScriptedExecutor executor(1, [](const std::string&, int) { return 100.0; });
  executor.delay_ms = {100};
  LoopRun run = start_loop("executor-prebuild", 2);
  run_with(run, executor, 60);
  const auto& events = executor.events;
  const auto at = [&](const std::string& event) {
    return std::find(events.begin(), events.end(), event) - events.begin();
  };
  EXPECT_LT(at("build sum2"), at("measured 48x1024")) << "sum2's baseline built after sum's was measured";
  const auto rows = read_results(run.ws / kResultsFile);
  ASSERT_GT(rows.size(), 4u);
  // The third session, the first search: its kernel's last measurement ends after the next
  // kernel's first search build (its second build, after its baseline's).
  const std::string searched = rows[2].at("name"), other = searched == "sum" ? "sum2" : "sum";
  ASSERT_EQ(rows.back().at("name"), other) << "the run ended before the second search began";
  const std::string measured = "measured " + std::string(searched == "sum" ? "48x1024" : "48x512");
  const auto last_measured = std::find(events.rbegin(), events.rend(), measured).base() - events.begin() - 1;
  const auto first_build = std::find(events.begin(), events.end(), "build " + other);
  const auto second_build = std::find(first_build + 1, events.end(), "build " + other) - events.begin();
  EXPECT_LT(second_build, last_measured)
      << "no build of " << other << " before " << searched << "'s session ended";
}

// Every kernel's starter build starts with the run, not with its session: else the baselines go
// at the compiler's pace, one build per session, however many workers measure them. Each is built
// once (its session takes that build), also when the run ends before its session.
TEST(Executor, EveryKernelsStarterBuildsBeforeTheFirstMeasurementEnds) {
  ScriptedExecutor executor(1, [](const std::string&, int) { return 100.0; });
  executor.delay_ms = {100};
  LoopRun run = start_loop("executor-starters", 3);
  run_with(run, executor, 6);
  ASSERT_EQ(read_results(run.ws / kResultsFile).size(), 6u);
  const auto& events = executor.events;
  const auto at = [&](const std::string& event) {
    return std::find(events.begin(), events.end(), event) - events.begin();
  };
  for (const std::string kernel : {"sum", "sum2", "sum3"}) {
    EXPECT_LT(at("build " + kernel), at("measured 48x1024"))
        << kernel << "'s starter built only after the first measurement";
    EXPECT_EQ(executor.starter_builds[kernel], 1) << kernel;
  }

  ScriptedExecutor early(1, [](const std::string&, int) { return 100.0; });
  LoopRun short_run = start_loop("executor-starters-early", 3);
  run_with(short_run, early, 1);
  EXPECT_EQ(read_results(short_run.ws / kResultsFile).size(), 1u);
  for (const std::string kernel : {"sum", "sum2", "sum3"})
    EXPECT_EQ(early.starter_builds[kernel], 1) << kernel;
}

// Builds take twice a measurement: a session builds ahead as the run's times so far ask from its
// first refill (here 3 per worker), not max(workers, 3) until results of its own come.
TEST(Executor, ANewSessionBuildsAheadAsTheRunsTimesAskFromItsStart) {
  ScriptedExecutor executor(2, [](const std::string&, int) { return 100.0; });
  executor.delay_ms = {100, 100};
  executor.build_seconds = 0.2;
  LoopRun run = start_loop("executor-ramp", 2);
  run_with(run, executor, 60);
  const auto rows = read_results(run.ws / kResultsFile);
  ASSERT_GT(rows.size(), 4u);
  const std::string searched = rows[2].at("name"), other = searched == "sum" ? "sum2" : "sum";
  ASSERT_EQ(rows.back().at("name"), other) << "the run ended before the second search began";
  // The next kernel's builds while the searched one's last measurements finish: its baseline's,
  // then its session's first refill (KernelSession::prebuild).
  const auto& events = executor.events;
  const std::string measured = "measured " + std::string(searched == "sum" ? "48x1024" : "48x512");
  const auto last_measured = std::find(events.rbegin(), events.rend(), measured);
  ASSERT_NE(last_measured, events.rend());
  const auto ahead = std::count(events.begin(), last_measured.base() - 1, "build " + other) - 1;
  EXPECT_GT(ahead, 3) << other << "'s first refill built no more ahead than a session with no times";
  EXPECT_LE(ahead, 16);
}

// On a time budget with two workers, the second kernel's baseline is measured beside the first's
// (one worker would have waited for the other); both are recorded in order, and nothing measured
// goes unrecorded, the baseline measured ahead when the budget ends included.
TEST(Executor, BaselinesOfTwoKernelsAreMeasuredSideBySide) {
  ScriptedExecutor executor(2, [](const std::string&, int) { return 100.0; });
  executor.delay_ms = {300, 300};
  LoopRun run = start_loop("executor-baselines", 2);
  run_with(run, executor, 0, 1.0);
  const auto rows = read_results(run.ws / kResultsFile);
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("name"), "sum");
  EXPECT_EQ(rows[1].at("name"), "sum2");
  EXPECT_EQ(rows[0].at("decision"), "baseline");
  EXPECT_EQ(rows[1].at("decision"), "baseline");
  const auto& events = executor.events;
  const auto at = [&](const std::string& event) {
    return std::find(events.begin(), events.end(), event) - events.begin();
  };
  EXPECT_LT(at("start 48x512"), at("measured 48x1024")) << "the baselines took turns";
  EXPECT_EQ(rows.size(), executor.measured.size()) << "a measurement went unrecorded";
}

// On a time budget with two workers, at a switch the next kernel's first search experiment is
// measured while the last kernel's final ones finish: no worker idles for the switch.
TEST(Executor, TheNextKernelsFirstSearchIsMeasuredWhileTheLastOnesFinish) {
  ScriptedExecutor executor(2, [](const std::string&, int) { return 100.0; });
  executor.delay_ms = {150, 150};
  LoopRun run = start_loop("executor-switch", 2);
  run_with(run, executor, 0, 30.0);
  const auto rows = read_results(run.ws / kResultsFile);
  ASSERT_GT(rows.size(), 4u);
  const std::string searched = rows[2].at("name"), other = searched == "sum" ? "sum2" : "sum";
  ASSERT_EQ(rows.back().at("name"), other) << "the run ended before the second search began";
  const auto problem = [](const std::string& kernel) { return kernel == "sum" ? "48x1024" : "48x512"; };
  const auto& events = executor.events;
  const auto last_measured =
      std::find(events.rbegin(), events.rend(), "measured " + std::string(problem(searched))).base() -
      events.begin() - 1;
  const auto baseline = std::find(events.begin(), events.end(), "start " + std::string(problem(other)));
  const auto first_search = std::find(baseline + 1, events.end(), "start " + std::string(problem(other)));
  EXPECT_LT(first_search - events.begin(), last_measured)
      << other << "'s first search started only after " << searched << "'s last measurement";
  EXPECT_EQ(rows.size(), executor.measured.size()) << "a measurement went unrecorded";
}

// Measurements of 400 ms on one worker and a budget of 2 s: the loop starts none that its
// measurements so far say would end past the budget (starting while any time was left, two in
// flight, it ended up to 0.8 s late), and still uses the budget.
TEST(Executor, ATimeBudgetStartsNoExperimentThatWouldEndPastIt) {
  ScriptedExecutor executor(1, [](const std::string&, int) { return 100.0; });
  executor.delay_ms = {400};
  LoopRun run = start_loop("executor-deadline");
  const auto start = std::chrono::steady_clock::now();
  run_with(run, executor, 0, 2.0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0 + 0.2);
  EXPECT_GE(read_results(run.ws / kResultsFile).size(), 3u);
}

}  // namespace
}  // namespace ak
