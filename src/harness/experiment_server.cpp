// The caller's side of the experiment server: one `autokernel worker --serve` process, restarted
// when it dies.
#include "harness/experiment_server.h"

#include <algorithm>
#include <optional>

#include "core/paths.h"
#include "core/subprocess.h"

namespace ak {
namespace {

// After the server said "prepared", its child has `timeout`; this covers killing, reaping and
// answering on a loaded machine.
constexpr std::chrono::seconds kAnswerGrace{30};
// Drawing a plan's inputs and references is the engine's work, not the kernel's: it gets its own
// allowance (minutes at GPU sizes on a loaded host), never the kernel's timeout.
constexpr std::chrono::seconds kPrepareLimit{1800};

ExperimentResult lost_result(Status status, const std::string& stage, std::string reason) {
  ExperimentResult result;
  result.status = status;
  result.stage = stage;
  result.reason = std::move(reason);
  return result;
}

}  // namespace

struct ExperimentServer::Impl {
  std::filesystem::path executable;
  std::unique_ptr<LineProcess> process;

  void start() {
    process =
        std::make_unique<LineProcess>(std::vector<std::string>{executable.string(), "worker", "--serve"});
  }

  // The result, or nothing when the server died (its end is then in `ended`). A server that
  // stops answering is killed and the experiment counts as TIMEOUT.
  std::optional<ExperimentResult> attempt(const ExperimentRequest& request, std::chrono::seconds timeout,
                                          const Progress& progress, std::string& stage, std::string& ended) {
    if (!process) start();
    stage = "prepare";
    const nlohmann::json message = {{"request", request}, {"timeout_s", timeout.count()}};
    auto deadline =
        std::chrono::steady_clock::now() + std::max(timeout, kPrepareLimit);  // preparing the cases
    if (process->send(message.dump())) {
      std::string line;
      for (LineRead read; (read = process->read_line(line, deadline)) != LineRead::Closed;) {
        if (read == LineRead::TimedOut) {
          process.reset();
          return lost_result(
              Status::Timeout, stage,
              "no answer within " + std::to_string(timeout.count()) + " s, killed during " + stage);
        }
        if (line == "prepared") {
          stage = "load";
          deadline = std::chrono::steady_clock::now() + timeout + kAnswerGrace;
        } else if (line.rfind("stage ", 0) == 0) {
          stage = line.substr(6);
          progress(stage);
        } else if (line.rfind("result ", 0) == 0) {
          return nlohmann::json::parse(line.substr(7)).get<ExperimentResult>();
        }
      }
    }
    ended = process->stop();
    process.reset();
    return std::nullopt;
  }
};

ExperimentServer::ExperimentServer(std::filesystem::path executable) : impl_(std::make_unique<Impl>()) {
  impl_->executable = executable.empty() ? self_executable() : std::move(executable);
  impl_->start();
}

ExperimentServer::~ExperimentServer() = default;  // LineProcess kills the server's group and reaps it

pid_t ExperimentServer::server_pid() const {
  return impl_->process ? impl_->process->pid() : 0;
}

ExperimentResult ExperimentServer::run(const ExperimentRequest& request, std::chrono::seconds timeout,
                                       const Progress& progress) {
  std::string stage, ended;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (auto result = impl_->attempt(request, timeout, progress, stage, ended)) return *result;
  }
  return lost_result(Status::Crash, stage,
                     "the experiment server ended twice (" + ended + ") during " + stage);
}

}  // namespace ak
