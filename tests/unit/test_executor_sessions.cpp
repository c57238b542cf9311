// The loop's sessions over several kernels and workers (src/loop/kernel_session.cpp,
// orchestrator.cpp): builds started ahead of the measurements that need them, baselines and
// kernel switches that leave no worker idle, and a time budget that starts nothing it would
// overrun, over the scripted executor of scripted_executor.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "scripted_executor.h"

namespace ak {
namespace {

using test::LoopRun;
using test::run_with;
using test::ScriptedExecutor;
using test::start_loop;

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
