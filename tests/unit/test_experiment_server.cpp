// The experiment server (`autokernel worker --serve`) on the host backend: the same results as
// the one-process-per-experiment worker, a crash or a hang costs only that experiment, prepared
// cases are reused across experiments of one plan, a dead server is restarted, and no process
// is left behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <iostream>
#include <thread>

#include "cli_runner.h"
#include "core/registry.h"
#include "harness/experiment_server.h"
#include "harness/stages.h"
#include "runtime/compiler.h"

namespace ak::test {
namespace {

using namespace std::chrono_literals;

ExperimentRequest request_for(const std::string& source, const std::string& op, const std::string& shape,
                              DType dtype = DType::F16, bool quick = false) {
  ExperimentRequest r;
  r.op = op;
  r.backend = Backend::Host;
  r.module = build_module({source, {}, Backend::Host, "", 300s}).module;
  r.problem = parse_problem(shape);
  r.dtype = dtype;
  r.quick = quick;
  r.timing.max_seconds = 0.2;
  return r;
}

// Quick (smoke and the primary problem) unless the test compares every stage: a new plan's
// sweep takes the longest to prepare.
ExperimentRequest reduce_request(const std::string& test_kernel, DType dtype = DType::F16,
                                 bool quick = true) {
  return request_for(kernel(test_kernel), "reduce", "96x1000", dtype, quick);
}

const Progress kQuiet = [](std::string_view) {};

// The same experiment through `autokernel bench`, which runs it in a fresh worker (run_isolated).
nlohmann::json isolated(const std::string& test_kernel, const std::string& dtype) {
  const auto dir = scratch_dir("server-bench");
  const ProcessResult run =
      run_cli({"bench", kernel(test_kernel), "--op", "reduce", "--backend", "host", "--shape", "96x1000",
               "--dtype", dtype, "--json", "--max-time", "0.2", "--results", (dir / "results.tsv").string()});
  return json_of(run);
}

// Processes whose parent is `pid`, from /proc.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    const size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int parent = 0;
    if (std::sscanf(text.c_str() + close + 1, " %c %d", &state, &parent) == 2 && parent == pid)
      children.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return children;
}

// Gone, or a zombie of some other parent: either way it runs no more.
bool ended(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  const size_t close = text.rfind(')');
  return close == std::string::npos || text.substr(close + 2, 1) == "Z";
}

// What an experiment costs outside its child (the judge): drawing the plan's cases and their
// references, the fork and the answer.
double outside_the_child(ExperimentServer& server, const ExperimentRequest& request, std::string& log) {
  const auto start = std::chrono::steady_clock::now();
  const ExperimentResult r = server.run(request, 300s, kQuiet);
  EXPECT_EQ(r.status, Status::Pass) << r.reason;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log += "\n" + std::to_string(wall) + " s wall, " + std::to_string(r.total_seconds) + " s in the child";
  return wall - r.total_seconds;
}

TEST(ExperimentServer, GivesTheSameResultsAsIsolatedWorkers) {
  ExperimentServer server(AK_CLI_PATH);
  const std::vector<std::pair<std::string, DType>> runs = {{"good_reduce.cpp", DType::F16},
                                                           {"wrong_values.cpp", DType::F16},
                                                           {"nondeterministic.cpp", DType::F32}};
  for (const auto& [file, dtype] : runs) {
    const ExperimentResult served = server.run(reduce_request(file, dtype, false), 180s, kQuiet);
    const nlohmann::json expected = isolated(file, std::string(to_string(dtype)));
    ASSERT_TRUE(expected.is_object()) << file;
    EXPECT_EQ(nlohmann::json(served.status), expected["status"]) << file;
    EXPECT_EQ(served.stage, expected["stage"].get<std::string>()) << file;
    EXPECT_EQ(served.reason, expected["reason"].get<std::string>()) << file;
    ASSERT_EQ(served.stages.size(), expected["stages"].size()) << file;
    for (size_t i = 0; i < served.stages.size(); ++i) {
      EXPECT_EQ(served.stages[i].stage, expected["stages"][i]["stage"].get<std::string>()) << file;
      EXPECT_EQ(served.stages[i].checks, expected["stages"][i]["checks"].get<int>()) << file;
      EXPECT_EQ(served.stages[i].passed, expected["stages"][i]["passed"].get<bool>()) << file;
      EXPECT_DOUBLE_EQ(served.stages[i].worst_norm_error, expected["stages"][i]["worst_norm_error"]) << file;
    }
  }
}

TEST(ExperimentServer, CarriesOnAfterACrash) {
  ExperimentServer server(AK_CLI_PATH);
  const pid_t pid = server.server_pid();
  std::vector<std::string> stages;
  const ExperimentResult crashed =
      server.run(reduce_request("segfaults.cpp"), 180s, [&](std::string_view s) { stages.emplace_back(s); });
  EXPECT_EQ(crashed.status, Status::Crash);
  EXPECT_EQ(crashed.stage, "smoke");
  EXPECT_EQ(crashed.reason, "the kernel's process ended (killed by SIGSEGV)");
  EXPECT_EQ(stages, std::vector<std::string>{"smoke"});
  EXPECT_EQ(server.run(reduce_request("good_reduce.cpp"), 180s, kQuiet).status, Status::Pass);
  EXPECT_EQ(server.server_pid(), pid);  // the crash took only the kernel's process
}

TEST(ExperimentServer, TimesOutAHangAndCarriesOn) {
  ExperimentServer server(AK_CLI_PATH);
  const ExperimentRequest hang = reduce_request("hangs.cpp");
  server.run(reduce_request("good_reduce.cpp"), 180s, kQuiet);  // the plan's cases: prepared before the clock
  // 8 s: the hanging module's build and load come first, and on a loaded two-core machine (the
  // suite's nvcc tests beside it) they took more than 3 s, so the timeout struck during load.
  const auto start = std::chrono::steady_clock::now();
  const ExperimentResult hung = server.run(hang, 8s, kQuiet);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  EXPECT_EQ(hung.status, Status::Timeout);
  EXPECT_EQ(hung.stage, "smoke");
  EXPECT_EQ(hung.reason, "no answer within 8 s, killed during smoke");
  EXPECT_EQ(server.run(reduce_request("good_reduce.cpp"), 180s, kQuiet).status, Status::Pass);
  EXPECT_TRUE(children_of(server.server_pid()).empty());
}

TEST(ExperimentServer, ReusesThePreparedCasesOfAPlan) {
  ExperimentServer server(AK_CLI_PATH);
  // Every stage: the sweep's many problems take far longer to draw and reference than to check.
  const ExperimentRequest request = reduce_request("good_reduce.cpp", DType::F16, false);
  std::string log;
  // The child's own time follows the machine's load (ctest runs other tests beside this one), so
  // it is left out of the comparison.
  const double first = outside_the_child(server, request, log);
  const double second = outside_the_child(server, request, log);
  EXPECT_LT(second, 0.5 * first) << log;
  std::cout << "experiments on one plan:" << log << "\n";
}

// The driver names the kernels to come: a server draws their plans while idle, and its first
// experiment of one then waits for no references. A hint that cannot be drawn is never answered.
TEST(ExperimentServer, DrawsAPlanAheadWhenAskedTo) {
  const ExperimentRequest request = reduce_request("good_reduce.cpp", DType::F16, false);
  std::string log;
  ExperimentServer cold(AK_CLI_PATH), warm(AK_CLI_PATH);
  ExperimentRequest unknown = request;
  unknown.op = "no_such_op";
  warm.prepare(unknown);
  warm.prepare(request);
  const auto hinted_at = std::chrono::steady_clock::now();
  const double first = outside_the_child(cold, request, log);
  std::this_thread::sleep_until(hinted_at + std::chrono::duration<double>(2 * first + 1));
  const double ahead = outside_the_child(warm, request, log);
  EXPECT_LT(ahead, 0.5 * first) << log;
  std::cout << "a plan drawn cold, then ahead:" << log << "\n";
}

// Its children are forked while it draws another plan ahead: none may inherit a held lock.
TEST(ExperimentServer, ForksSafelyWhileDrawingAhead) {
  ExperimentServer server(AK_CLI_PATH);
  const ExperimentRequest request = reduce_request("good_reduce.cpp");
  ExperimentRequest other = reduce_request("good_reduce.cpp", DType::F32, false);
  for (int round = 0; round < 3; ++round) {
    other.seed = static_cast<uint64_t>(100 + round);
    server.prepare(other);
    const ExperimentResult r = server.run(request, 60s, kQuiet);
    EXPECT_EQ(r.status, Status::Pass) << round << ": " << r.reason;
  }
}

TEST(ExperimentServer, RestartsAServerThatDied) {
  ExperimentServer server(AK_CLI_PATH);
  const pid_t first = server.server_pid();
  ASSERT_GT(first, 0);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  const ExperimentResult r = server.run(reduce_request("good_reduce.cpp"), 180s, kQuiet);
  EXPECT_EQ(r.status, Status::Pass) << r.reason;
  EXPECT_NE(server.server_pid(), first);
  EXPECT_GT(server.server_pid(), 0);
}

TEST(ExperimentServer, LeavesNoProcessBehind) {
  pid_t server_pid = 0, orphan = 0;
  {
    ExperimentServer server(AK_CLI_PATH);
    server_pid = server.server_pid();
    EXPECT_EQ(server.run(reduce_request("good_reduce.cpp"), 180s, kQuiet).status, Status::Pass);
    EXPECT_TRUE(children_of(server_pid).empty());  // each experiment's child was reaped
    // Kill the server while its child hangs: the child must not outlive it.
    const ExperimentResult hung = server.run(reduce_request("hangs.cpp"), 8s, [&](std::string_view stage) {
      if (stage != "smoke" || orphan != 0) return;
      const auto children = children_of(server.server_pid());
      ASSERT_EQ(children.size(), 1u);
      orphan = children.front();
      ::kill(server.server_pid(), SIGKILL);
    });
    EXPECT_EQ(hung.status, Status::Timeout);  // the experiment ran again on a new server and hung again
    ASSERT_GT(orphan, 0);
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!ended(orphan) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
    EXPECT_TRUE(ended(orphan));
    server_pid = server.server_pid();
  }
  EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(server_pid)));  // killed and reaped
}

TEST(ExperimentServer, KeepsEveryCaseOfThePlanPrepared) {
  ExperimentRequest request;
  request.op = "reduce";
  request.problem = parse_problem("96x1000");
  const auto sets = experiment_input_sets(request);
  ASSERT_GT(sets.size(), 64u);  // more than the cache's usual bound
  const Op& op = find_op("reduce");
  keep_prepared_cases(op, sets);
  std::vector<std::shared_ptr<const PreparedCase>> first;
  for (const auto& set : sets) first.push_back(prepare_case(op, set));
  for (size_t i = 0; i < sets.size(); ++i) EXPECT_EQ(prepare_case(op, sets[i]), first[i]) << i;
  // The timing's source set is new to the stages, and every check's second set follows its first.
  EXPECT_EQ(sets.back().seed, request.seed + 1'000'001);
  EXPECT_NE(sets[sets.size() - 2].seed, request.seed + 1'000'001);
  EXPECT_EQ(sets[1].seed, sets[0].seed + 1);
}

// A suite loop takes each kernel in turn: its sets must still be there when its turn comes back.
TEST(ExperimentServer, KeepsEarlierPlansWhileTheyFit) {
  ExperimentRequest reduce, rmsnorm;
  reduce.op = "reduce";
  reduce.problem = parse_problem("96x1000");
  rmsnorm.op = "rmsnorm";
  rmsnorm.problem = parse_problem("64x512");
  const auto reduce_sets = experiment_input_sets(reduce), rmsnorm_sets = experiment_input_sets(rmsnorm);
  keep_prepared_cases(find_op("reduce"), reduce_sets);
  const auto first = prepare_case(find_op("reduce"), reduce_sets.front());
  keep_prepared_cases(find_op("rmsnorm"), rmsnorm_sets);
  const auto rms_first = prepare_case(find_op("rmsnorm"), rmsnorm_sets.back());
  keep_prepared_cases(find_op("reduce"), reduce_sets);
  EXPECT_EQ(prepare_case(find_op("reduce"), reduce_sets.front()), first);  // not drawn again
  EXPECT_EQ(prepare_case(find_op("rmsnorm"), rmsnorm_sets.back()), rms_first);
}

}  // namespace
}  // namespace ak::test
