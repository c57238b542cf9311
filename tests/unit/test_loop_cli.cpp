// `autokernel optimize` end to end on the host backend: keep/revert, faults, git, kill -9 and
// --resume, the agent proposer. The kernel is tests/kernels/loop_modes.cpp: a slow but correct
// starter whose @tune space also holds a crash, a hang, a wrong answer and a fast version.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <set>
#include <thread>

#include "cli_runner.h"
#include "core/paths.h"
#include "harness/results_log.h"
#include "loop/git_repo.h"
#include "loop/plan.h"
#include "loop_cheats.h"
#include "loop_workspace.h"

namespace ak {
namespace {

using test::expect_consistent;
using test::make_workspace;
using test::optimize_args;

TEST(LoopCli, ImprovesASlowStarterAndRecordsEveryFault) {
  const auto ws = make_workspace("loop-faults");
  auto args = optimize_args(ws);
  args.insert(args.end(), {"--strategy", "exhaustive", "--patience", "20"});
  const auto run = test::run_cli(args, 600);
  ASSERT_TRUE(run.ok()) << run.output;
  const auto state = test::json_of(run);
  const auto rows = read_results(ws / kResultsFile);
  ASSERT_EQ(rows.size(), 10u) << run.output;  // every point of the space once
  std::map<std::string, int> statuses;
  for (const auto& r : rows) statuses[r.at("status")] += 1;
  EXPECT_EQ(statuses["CRASH"], 2);
  EXPECT_EQ(statuses["TIMEOUT"], 2);
  EXPECT_EQ(statuses["FAIL"], 2);
  const auto& kernel = state.at("kernels").at(0);
  EXPECT_NE(kernel.at("best_config").get<std::string>().find("MODE=4"), std::string::npos);
  EXPECT_LT(kernel.at("best_us").get<double>(), kernel.at("baseline_us").get<double>() / 3);
  EXPECT_EQ(kernel.at("done"), kDoneExhausted);
  EXPECT_GE(kernel.at("kept").get<int>(), 1);
  EXPECT_EQ(read_text_file(ws / "kernels" / "sum" / "config"),
            kernel.at("best_config").get<std::string>() + "\n");
  expect_consistent(ws, state);

  // A kill right after a commit, before its row: --resume drops that commit.
  GitRepo repo(ws);
  write_file_atomically(ws / "kernels" / "sum" / "config", "MODE=0 REPEAT=8\n");
  repo.commit_all("exp 11 sum: a commit whose row was never written");
  const auto resumed = test::run_cli({"optimize", "--workspace", ws.string(), "--resume", "--json"}, 120);
  ASSERT_TRUE(resumed.ok()) << resumed.output;
  expect_consistent(ws, test::json_of(resumed));
  std::filesystem::remove_all(ws.parent_path());
}

TEST(LoopCli, TimesEveryKernelsBaselineBeforeSearchingAny) {
  auto ws = make_workspace("loop-baselines");
  std::filesystem::create_directories(ws / "kernels" / "other");
  std::filesystem::copy_file(test::kernel("loop_modes.cpp"), ws / "kernels" / "other" / "other.cpp");
  const Plan plan{"test",
                  false,
                  {{"sum", "reduce", "kernels/sum/sum.cpp", "48x1024", "fp32", 0.5},
                   {"other", "reduce", "kernels/other/other.cpp", "48x1024", "fp32", 0.1}}};
  write_file_atomically(ws / kPlanFile, nlohmann::json(plan).dump());
  auto args = optimize_args(ws);
  args.insert(args.end(), {"--strategy", "exhaustive", "--patience", "20", "--budget", "3"});
  const auto run = test::run_cli(args, 300);
  ASSERT_TRUE(run.ok()) << run.output;
  const auto rows = read_results(ws / kResultsFile);
  ASSERT_EQ(rows.size(), 3u) << run.output;
  EXPECT_EQ(rows[0].at("name"), "sum");
  EXPECT_EQ(rows[0].at("decision"), "baseline") << rows[0].at("reason");
  EXPECT_EQ(rows[1].at("name"), "other");
  EXPECT_EQ(rows[1].at("decision"), "baseline") << rows[1].at("reason");
  EXPECT_NE(rows[2].at("decision"), "baseline");
  // Then the Amdahl order: the larger share, the same code. A fifth of the share makes the order
  // stand even when a loaded machine's timing noise skews the two baselines' headroom.
  EXPECT_EQ(rows[2].at("name"), "sum")
      << "baselines " << rows[0].at("median_us") << " and " << rows[1].at("median_us") << " us";
  expect_consistent(ws, test::json_of(run));
  std::filesystem::remove_all(ws.parent_path());
}

TEST(LoopCli, KillNineMidExperimentThenResumeLosesNothing) {
  const auto ws = make_workspace("loop-kill");
  const auto pid_file = ws.parent_path() / "pid";
  std::string command = "echo $$ > '" + pid_file.string() + "'; exec '" + std::string(AK_CLI_PATH) + "'";
  for (const auto& a : optimize_args(ws)) command += " '" + a + "'";
  command += " --strategy exhaustive --patience 20";
  std::thread loop([&] { run_process({"/bin/sh", "-c", command}); });
  // Wait for a few experiments, then kill in the middle of the next (one of the hangs, or close).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (read_results(ws / kResultsFile).size() < 4 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const pid_t pid = std::stoi(read_text_file(pid_file));
  const int killed = ::kill(pid, SIGKILL);
  loop.join();  // before any assertion returns: a thread left joinable would abort the test process
  ASSERT_EQ(killed, 0);
  const size_t before = read_results(ws / kResultsFile).size();
  ASSERT_GE(before, 4u);
  ASSERT_LT(before, 10u) << "the run finished before the kill";

  auto args = std::vector<std::string>{"optimize", "--workspace", ws.string(), "--resume", "--json"};
  const auto run = test::run_cli(args, 600);
  ASSERT_TRUE(run.ok()) << run.output;
  const auto rows = read_results(ws / kResultsFile);
  EXPECT_EQ(rows.size(), 10u);
  std::set<std::string> configs;
  for (const auto& r : rows)
    EXPECT_TRUE(configs.insert(r.at("config")).second) << "tried twice: " << r.at("config");
  expect_consistent(ws, test::json_of(run));
  std::filesystem::remove_all(ws.parent_path());
}

TEST(LoopCli, AgentEditsAreCheckedKeptOrRevertedAndHangsTimeOut) {
  const auto ws = make_workspace("loop-agent");
  const test::AgentStateDir state("loop-agent-state");
  const auto counter = state.file("calls");
  const std::string agent =
      "sh '" + std::string(AK_TEST_KERNELS) + "/../loop_agents/scripted.sh' '" + counter.string() + "'";
  auto args = optimize_args(ws);
  // The timeout must outlast a slow start of the calls that do return: a call cut off before it
  // counts itself shifts the script, each later call doing the one before's part. (With 6 s, one
  // full CTest run on two cores once ended with no edit kept, as a shifted script would.)
  args.insert(args.end(), {"--agent-cmd", agent, "--agent-timeout", "15", "--patience", "3"});
  const auto run = test::run_cli(args, 600);
  ASSERT_TRUE(run.ok()) << run.output;
  const auto rows = read_results(ws / kResultsFile);
  std::string log;  // each row's outcome and time, and the agent's calls, for a failure's message
  for (const auto& r : rows)
    for (const char* column : {"status", "stage", "decision", "median_us", "reason"})
      log += (r.contains(column) ? r.at(column) : "?") + (std::string(column) == "reason" ? "\n" : " ");
  log += "agent calls: " + (std::filesystem::exists(counter) ? read_text_file(counter) : "none") + "\n";
  ASSERT_GE(rows.size(), 6u) << log << run.output;
  EXPECT_EQ(rows[0].at("decision"), "baseline") << log;
  EXPECT_EQ(rows[1].at("status"), "COMPILE_ERROR");  // the broken file
  EXPECT_EQ(rows[2].at("stage"), "agent");           // the agent that never returned
  EXPECT_NE(rows[2].at("reason").find("timeout"), std::string::npos);
  EXPECT_EQ(rows[3].at("decision"), "kept") << log;  // the faster starter
  const std::string source = read_text_file(ws / "kernels" / "sum" / "sum.cpp");
  EXPECT_NE(source.find("#define REPEAT 1\n"), std::string::npos);
  EXPECT_NE(source.find("ak_launch"), std::string::npos);
  expect_consistent(ws, test::json_of(run));
  std::filesystem::remove_all(ws.parent_path());
}

// An agent that submits cheats (a forged verdict, skipped timed work, a process started at load)
// gets none kept: each is recorded with the reason it failed, and the tree stays the starter's.
TEST(LoopCli, CheatsAnAgentSubmitsAreNeverKept) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the battery's hidden system calls are x86-64";
#endif
  const auto ws = make_workspace("loop-cheats");
  const test::AgentStateDir state("loop-agent-state");
  const auto counter = state.file("calls");
  const std::string agent =
      "sh '" + std::string(AK_TEST_KERNELS) + "/../loop_agents/cheating.sh' '" + counter.string() + "'";
  auto args = optimize_args(ws);
  args.insert(args.end(), {"--agent-cmd", agent, "--agent-timeout", "30", "--patience", "4"});
  const auto run = test::run_cli(args, 600);
  ASSERT_TRUE(run.ok()) << run.output;
  const auto rows = read_results(ws / kResultsFile);
  ASSERT_GE(rows.size(), 4u) << run.output;
  test::expect_cheats_rejected_and_none_kept(rows);
  EXPECT_EQ(read_text_file(ws / "kernels" / "sum" / "sum.cpp"),
            read_text_file(test::kernel("loop_modes.cpp")));
  expect_consistent(ws, test::json_of(run));
  std::filesystem::remove_all(ws.parent_path());
}

}  // namespace
}  // namespace ak
