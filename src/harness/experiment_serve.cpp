// The server's side of ExperimentServer (`autokernel worker --serve`): prepare, fork, wait, answer.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/cpu_topology.h"
#include "core/registry.h"
#include "core/subprocess.h"
#include "harness/experiment_server.h"

namespace ak {
namespace {

// The child's side: run_experiment on the cases this process prepared before it forked, on the
// cores set apart for judging (AUTOKERNEL_JUDGE_CPUS) where the server was given some: the server
// draws its references on the compilers' cores, the judge times on cores of its own.
std::string experiment_in_child(const ExperimentRequest& request) {
  if (const char* cpus = std::getenv(kJudgeCpusVariable); cpus && *cpus)
    pin_this_thread(parse_cpu_list(cpus));
  const ExperimentResult result = run_experiment(
      request, [](std::string_view stage) { write_line(STDOUT_FILENO, "stage " + std::string(stage)); });
  return nlohmann::json(result).dump();
}

ExperimentResult serve_one(const ExperimentRequest& request, std::chrono::seconds timeout, int out_fd) {
  try {
    keep_prepared_cases(find_op(request.op), experiment_input_sets(request));
  } catch (const std::exception&) {
    // An unknown op: the child meets the same error and reports it as run_isolated's worker would.
  }
  write_line(out_fd, "prepared");

  std::string stage = "load";
  ProcessOptions options;
  options.timeout = timeout;
  options.on_line = [&](std::string_view line) {
    if (line.rfind("stage ", 0) == 0) {
      stage = line.substr(6);
      write_line(out_fd, line);
    }
  };
  const ProcessResult run = run_forked([&] { return experiment_in_child(request); }, options);
  ExperimentResult result = isolated_outcome(run, run.answer, stage, timeout);
  // The judge process's own start and end, device teardown included: on the loop's clock too.
  if (run.ok()) result.exit_seconds = std::max(0.0, run.seconds - result.total_seconds);
  return result;
}

ExperimentResult error_result(const std::string& reason) {
  ExperimentResult result;
  result.status = Status::Error;
  result.stage = "load";
  result.reason = reason;
  return result;
}

}  // namespace

int serve_experiments(int in_fd, int out_fd) {
  LineReader requests(in_fd);
  std::string line;
  while (requests.next(line) == LineRead::Line) {
    ExperimentResult result;
    try {
      const auto message = nlohmann::json::parse(line);
      const auto request = message.at("request").get<ExperimentRequest>();
      result = serve_one(request, std::chrono::seconds(message.at("timeout_s").get<int64_t>()), out_fd);
    } catch (const std::exception& e) {
      result = error_result(std::string("experiment server: ") + e.what());
    }
    if (!write_line(out_fd, "result " + nlohmann::json(result).dump())) return 1;
  }
  return 0;
}

}  // namespace ak
