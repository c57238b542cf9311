// The caller's side of the experiment server: one `autokernel worker --serve` process, restarted
// when it dies.
#include "harness/experiment_server.h"

#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>

#include "core/error.h"
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
  ServerPlacement placement;
  std::mutex process_mutex;  // over `process` changing and sends (prepare() comes from other threads)
  std::unique_ptr<LineProcess> process;
  std::atomic<pid_t> running{0};  // the server's pid, for abort() from another thread
  std::atomic<bool> aborted{false};

  void start() {
    std::lock_guard lock(process_mutex);
    process = std::make_unique<LineProcess>(
        std::vector<std::string>{executable.string(), "worker", "--serve"}, placement.env);
    running = process->pid();
    pin(process->pid());
  }

  // Before any request: the judges it forks and their launchers inherit the mask.
  void pin(pid_t pid) const {
    if (placement.cpus.empty()) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : placement.cpus) CPU_SET(cpu, &set);
    if (::sched_setaffinity(pid, sizeof set, &set) != 0)
      throw Error(ErrorKind::Io,
                  "cannot pin the experiment server to its cores: " + std::string(std::strerror(errno)));
  }

  // The result, or nothing when the server died (its end is then in `ended`). A server that
  // stops answering is killed and the experiment counts as TIMEOUT.
  std::optional<ExperimentResult> attempt(const ExperimentRequest& request, std::chrono::seconds timeout,
                                          const Progress& progress, std::string& stage, std::string& ended) {
    if (aborted) return lost_result(Status::Lost, stage, "aborted: the loop is stopping its workers");
    if (!process) start();
    stage = "prepare";
    const nlohmann::json message = {{"request", request}, {"timeout_s", timeout.count()}};
    auto deadline =
        std::chrono::steady_clock::now() + std::max(timeout, kPrepareLimit);  // preparing the cases
    if (send(message.dump())) {
      std::string line;
      for (LineRead read; (read = process->read_line(line, deadline)) != LineRead::Closed;) {
        if (read == LineRead::TimedOut) {
          running = 0;
          end();
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
    running = 0;
    ended = process->stop();
    end();
    return std::nullopt;
  }

  bool send(const std::string& line) {
    std::lock_guard lock(process_mutex);
    return process && process->send(line);
  }

  void end() {
    std::lock_guard lock(process_mutex);
    process.reset();
  }
};

ExperimentServer::ExperimentServer(std::filesystem::path executable, ServerPlacement placement)
    : impl_(std::make_unique<Impl>()) {
  impl_->executable = executable.empty() ? self_executable() : std::move(executable);
  impl_->placement = std::move(placement);
  impl_->start();
}

ExperimentServer::~ExperimentServer() = default;  // LineProcess kills the server's group and reaps it

pid_t ExperimentServer::server_pid() const {
  return impl_->process ? impl_->process->pid() : 0;
}

void ExperimentServer::prepare(const ExperimentRequest& request) {
  impl_->send(nlohmann::json{{"prepare", request}}.dump());
}

void ExperimentServer::abort() {
  impl_->aborted = true;
  if (const pid_t pid = impl_->running.load(); pid > 0) ::kill(-pid, SIGKILL);
}

ExperimentResult ExperimentServer::run(const ExperimentRequest& request, std::chrono::seconds timeout,
                                       const Progress& progress) {
  std::string stage, ended;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (auto result = impl_->attempt(request, timeout, progress, stage, ended)) return *result;
    if (impl_->aborted) return lost_result(Status::Lost, stage, "aborted: the loop is stopping its workers");
  }
  return lost_result(Status::Lost, stage,
                     "the experiment server ended twice (" + ended + ") during " + stage);
}

}  // namespace ak
