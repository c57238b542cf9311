// `autokernel optimize` with several measuring workers, end to end on the host backend: two
// experiment servers of one machine (--workers 2), one of them killed under an experiment, and a
// Ray cluster of this machine (--ray local) with two actors, one of them killed likewise. The decisions,
// commits and the results log stay the driver's: experiments numbered once each, nothing lost.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <set>
#include <thread>

#include "cli_runner.h"
#include "core/python.h"
#include "loop_workspace.h"

namespace ak {
namespace {

// The children of `pid` (from /proc), for finding the experiment servers of a run.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> children;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream in(task.path() / "children");
    for (pid_t child = 0; in >> child;) children.push_back(child);
  }
  return children;
}

std::string command_line(pid_t pid) {
  std::string text = read_text_file("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : text)
    if (c == '\0') c = ' ';
  return text;
}

std::set<std::string> workers_of(const std::vector<ResultRecord>& rows) {
  std::set<std::string> workers;
  for (const auto& row : rows)
    if (!row.at("worker").empty()) workers.insert(row.at("worker"));
  return workers;
}

// `optimize` on the workspace with the test's usual arguments and `extra`, on a thread, its pid
// written to `pid_file`; the result lands in `run`.
std::thread optimize_in_background(const std::filesystem::path& ws, const std::string& extra,
                                   const std::filesystem::path& pid_file, ProcessResult& run) {
  std::string command = "echo $$ > '" + pid_file.string() + "'; exec '" + std::string(AK_CLI_PATH) + "'";
  for (const auto& a : test::optimize_args(ws)) command += " '" + a + "'";
  command += " " + extra;
  return std::thread([command, &run] {
    ProcessOptions options;
    options.timeout = std::chrono::minutes(15);
    run = run_process({"/bin/sh", "-c", command}, options);
  });
}

TEST(LoopWorkers, TwoHostWorkersMeasureAtOnceAndAKilledServerLosesNothing) {
  const auto ws = test::make_workspace("loop-workers");
  const auto pid_file = ws.parent_path() / "pid";
  ProcessResult run;
  std::thread loop =
      optimize_in_background(ws, "--strategy exhaustive --patience 20 --workers 2", pid_file, run);
  // Once the loop is under way, kill one experiment server: its experiment runs again.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (read_results(ws / kResultsFile).size() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const pid_t driver = std::stoi(read_text_file(pid_file));
  std::vector<pid_t> servers;
  for (pid_t child : children_of(driver))
    if (command_line(child).find("worker --serve") != std::string::npos) servers.push_back(child);
  ASSERT_EQ(servers.size(), 2u) << "one experiment server per worker";
  ::kill(-servers.front(), SIGKILL);
  loop.join();
  ASSERT_TRUE(run.ok()) << run.output;
  const auto rows = read_results(ws / kResultsFile);
  ASSERT_EQ(rows.size(), 10u) << run.output;  // every point of the space once
  EXPECT_EQ(workers_of(rows), (std::set<std::string>{"host0", "host1"}));
  std::map<std::string, int> statuses;
  for (const auto& r : rows) statuses[r.at("status")] += 1;
  EXPECT_EQ(statuses["PASS"], 4) << run.output;
  EXPECT_EQ(statuses["CRASH"] + statuses["TIMEOUT"] + statuses["FAIL"], 6);
  test::expect_consistent(ws, test::json_of(run));
}

// How many processes of a Ray instance run on this machine now.
int ray_processes() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ignored;
    const std::string cmd = [&] {
      try {
        return command_line(std::stoi(name));
      } catch (const std::exception&) {
        return std::string();
      }
    }();
    if (cmd.find("raylet") != std::string::npos || cmd.find("gcs_server") != std::string::npos ||
        cmd.find("ray::Measurer") != std::string::npos)
      ++count;
  }
  return count;
}

// What a Ray run leaves in the temporary directory when it does not clean up: its local
// cluster's files, the actors' modules, compile tasks' build directories.
std::set<std::string> run_files() {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path())) {
    const std::string name = entry.path().filename();
    if (name.rfind("autokernel-ray-", 0) == 0 || name.rfind("autokernel-build-", 0) == 0) names.insert(name);
  }
  return names;
}

// An actor (its process is "ray::Measurer") that is running an experiment: its experiment server
// has a judge child. 0 when none is.
pid_t busy_actor() {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    try {
      const pid_t pid = std::stoi(name);
      if (command_line(pid).find("ray::Measurer") == std::string::npos) continue;
      for (pid_t server : children_of(pid))
        if (command_line(server).find("worker --serve") != std::string::npos && !children_of(server).empty())
          return pid;
    } catch (const std::exception&) {
      // a process that ended while we looked
    }
  }
  return 0;
}

// Two actors on a Ray cluster of this machine; one is killed under an experiment: Ray restarts
// it, the driver runs that experiment again on the other, and the run ends with every row.
TEST(LoopWorkers, ARayClusterMeasuresOnItsActorsSurvivesOneDyingAndLeavesNoProcessBehind) {
  std::string tried;
  if (!find_python("ray", tried)) GTEST_SKIP() << "no Python with Ray (" << tried << ")";
  const int before = ray_processes();
  const auto files_before = run_files();
  const auto ws = test::make_workspace("loop-ray");
  ProcessResult run;
  // The fifth point of the space hangs until its timeout: the experiments after it go to the other actor.
  std::thread loop = optimize_in_background(
      ws, "--strategy exhaustive --patience 20 --budget 7 --ray local --workers 2 --timeout 20",
      ws.parent_path() / "pid", run);
  pid_t killed = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (!killed && std::chrono::steady_clock::now() < deadline) {
    if (read_results(ws / kResultsFile).size() >= 1 && (killed = busy_actor()) != 0) ::kill(killed, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  loop.join();
  EXPECT_NE(killed, 0) << "no actor was seen at work";
  ASSERT_TRUE(run.ok()) << run.output;
  const auto rows = read_results(ws / kResultsFile);
  ASSERT_EQ(rows.size(), 7u) << run.output;
  EXPECT_EQ(rows[0].at("decision"), "baseline") << rows[0].at("reason");
  for (const auto& row : rows) EXPECT_NE(row.at("status"), "LOST") << row.at("reason");
  const auto workers = workers_of(rows);
  EXPECT_EQ(workers.size(), 2u) << run.output;
  for (const auto& worker : workers) EXPECT_NE(worker.find("/cpu"), std::string::npos) << worker;
  test::expect_consistent(ws, test::json_of(run));
  EXPECT_EQ(ray_processes(), before) << "Ray's processes outlived the run";
  EXPECT_EQ(run_files(), files_before) << "the run left files in " << std::filesystem::temp_directory_path();
}

TEST(LoopWorkers, BadWorkerChoicesAreOneLineErrors) {
  const auto ws = test::make_workspace("loop-workers-bad");
  for (const auto& extra : std::vector<std::vector<std::string>>{
           {"--gpus", "0"}, {"--workers", "0"}, {"--ray", "local", "--gpus", "all"}}) {
    auto args = test::optimize_args(ws);
    args.insert(args.end(), extra.begin(), extra.end());
    const auto run = test::run_cli(args, 60);
    EXPECT_GT(run.exit_code, 0) << extra.front() << "\n" << run.output;
    EXPECT_NE(run.output.find(extra.front()), std::string::npos) << run.output;
  }
}

}  // namespace
}  // namespace ak
