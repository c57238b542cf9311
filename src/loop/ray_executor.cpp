// The executor on a Ray cluster. Ray's C++ API is experimental, so the cluster is driven from a
// small Python side process (python -m autokernel_ray, python/autokernel_ray/) that this one
// speaks to in JSON lines on its stdin and stdout:
//   side -> {"op": "ready", "workers": [{"name", "host", "gpu", "model"}...]}   once, at the start
//   us   -> {"op": "measure", "id", "worker", "request", "timeout_s"}         a job for one actor
//   us   -> {"op": "build", "id", "source_name", "source_text", "defines", "backend", "arch",
//            "timeout_s"}                                                        a compile task
//   side -> {"op": "stage", "worker", "stage"}  progress;  {"op": "done", "id", "result"}
//           {"op": "built", "id", "ok", "module", "cached", "seconds", "log", "failure"}
//   side -> {"op": "error", "reason"}  (then it exits)     us -> {"op": "quit"}
// One measuring actor per GPU (num_gpus=1, restarted when it dies) runs the same judge as the
// local executor (`autokernel worker --serve` on its node); compile tasks run on CPUs and send
// the module back, which the side process stores on this machine and ships to the actor that
// measures it. Workers of a GPU model other than this machine's are left out, and said so.
#include "loop/ray_executor.h"

#include <atomic>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/paths.h"
#include "core/python.h"
#include "core/subprocess.h"
#include "loop/worker_pool.h"

namespace ak {
namespace {

// Connecting, starting the actors and (for "local") a whole Ray instance of this machine.
constexpr std::chrono::seconds kStartLimit{300};
// Preparing a plan's references on the actor's node happens before the kernel's own timeout.
constexpr std::chrono::seconds kPrepareAllowance{1800};

using Json = nlohmann::json;

ExperimentResult lost(std::string reason) {
  ExperimentResult result;
  result.status = Status::Lost;
  result.stage = "ray";
  result.reason = std::move(reason);
  return result;
}

class RayExecutor final : public WorkerPool {
 public:
  explicit RayExecutor(const ExecutorOptions& o) {
    std::string tried;
    const auto python = find_python("ray", tried);
    if (!python)
      throw Error(ErrorKind::Unsupported, "--ray needs a Python with Ray (tried " + tried +
                                              "): scripts/install-python.sh installs it into .venv");
    const std::filesystem::path cli = o.executable.empty() ? self_executable() : o.executable;
    std::vector<std::string> argv{*python,
                                  "-m",
                                  "autokernel_ray",
                                  "--address",
                                  o.ray_address,
                                  "--cli",
                                  cli.string(),
                                  "--backend",
                                  std::string(to_string(o.backend)),
                                  "--host-workers",
                                  std::to_string(std::max(1, o.host_workers))};
    std::string path = (project_dir() / "python").string();
    if (const char* existing = std::getenv("PYTHONPATH"); existing && *existing)
      path += ":" + std::string(existing);
    side_ =
        std::make_unique<LineProcess>(argv, EnvOverrides{{"PYTHONPATH", path}, {"PYTHONUNBUFFERED", "1"}});
    start_workers(wait_ready(o.device_model));
    reader_ = std::thread([this] { read_answers(); });
  }

  ~RayExecutor() override {
    stop_workers();
    {
      std::lock_guard lock(mutex_);
      quitting_ = true;
      side_->send(Json{{"op", "quit"}}.dump());
    }
    // Ray's own processes (a local instance, the actors) end with the side process's shutdown;
    // after a grace period the side process's group is killed whatever it is doing.
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
         std::chrono::steady_clock::now() < deadline && !side_closed_;)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    side_->stop();
    if (reader_.joinable()) reader_.join();
  }

  std::future<BuiltCandidate> build(const Candidate& candidate, const EvaluateOptions& options) override {
    auto promise = std::make_shared<std::promise<BuiltCandidate>>();
    auto future = promise->get_future();
    Json defines = Json::array();
    for (const auto& [name, value] : candidate.defines) defines.push_back({name, value});
    ask({{"op", "build"},
         {"source_name", candidate.source.filename().string()},
         {"source_text", read_text_file(candidate.source)},
         {"defines", defines},
         {"backend", std::string(to_string(options.request.backend))},
         {"arch", options.arch},
         {"timeout_s", options.compile_timeout.count()}},
        [promise](const Json& answer) { promise->set_value(built_from(answer)); });
    return future;
  }

 private:
  static BuiltCandidate built_from(const Json& answer) {
    BuiltCandidate built;
    if (answer.value("ok", false)) {
      built.build = BuildResult{answer.at("module").get<std::string>(), answer.value("cached", false),
                                answer.value("seconds", 0.0), answer.value("log", "")};
    } else if (answer.contains("failure")) {
      built.failure = answer.at("failure").get<ExperimentResult>();
    } else {
      built.failure = lost(answer.value("lost", "the build task was lost"));
      built.failure.stage = "compile";
    }
    return built;
  }

  // The side process's first line: the workers, of this machine's model only.
  std::vector<WorkerInfo> wait_ready(const std::string& model) {
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + kStartLimit;
    while (true) {
      const LineRead read = side_->read_line(line, deadline);
      if (read != LineRead::Line)
        throw Error(ErrorKind::Io,
                    read == LineRead::TimedOut
                        ? "Ray did not start its workers in " + std::to_string(kStartLimit.count()) + " s"
                        : "the Ray side process ended: " + side_->stop());
      Json message = Json::parse(line, nullptr, false);
      if (message.is_discarded()) continue;  // Ray's own chatter
      if (message.value("op", "") == "error")
        throw Error(ErrorKind::Io, "ray: " + message.value("reason", ""));
      if (message.value("op", "") != "ready") continue;
      std::vector<WorkerInfo> workers;
      std::vector<std::string> left_out;
      for (const Json& w : message.at("workers")) {
        WorkerInfo info{w.value("name", ""), w.value("host", ""), w.value("gpu", -1), w.value("model", "")};
        remote_index_.push_back(w.value("index", 0));
        if (!model.empty() && info.model != model) {
          left_out.push_back(info.name + " (" + info.model + ")");
          remote_index_.pop_back();
          continue;
        }
        workers.push_back(std::move(info));
      }
      for (const auto& name : left_out)
        std::cerr << "ray: " << name << " left out: not this machine's " << model << std::endl;
      if (workers.empty()) throw Error(ErrorKind::Usage, "the Ray cluster has no worker with a " + model);
      return workers;
    }
  }

  // Sends a request; `handler` gets its answer (or {"lost": why}) on the reader's thread.
  void ask(Json message, std::function<void(const Json&)> handler) {
    std::lock_guard lock(mutex_);
    const uint64_t id = next_id_++;
    message["id"] = id;
    if (side_closed_) {
      handler(Json{{"lost", "the Ray side process has ended"}});
      return;
    }
    handlers_[id] = std::move(handler);
    side_->send(message.dump());
  }

  ExperimentResult measure_on(size_t worker, const MeasureJob& job, const Progress& progress) override {
    auto promise = std::make_shared<std::promise<ExperimentResult>>();
    auto future = promise->get_future();
    {
      std::lock_guard lock(mutex_);
      progress_[worker] = progress;
    }
    ask({{"op", "measure"},
         {"worker", remote_index_[worker]},
         {"request", job.request},
         {"timeout_s", job.timeout.count()}},
        [promise](const Json& answer) {
          promise->set_value(answer.contains("result")
                                 ? answer.at("result").get<ExperimentResult>()
                                 : lost(answer.value("lost", "the measurement was lost")));
        });
    // The actor keeps its own limits; this one only covers a side process that stops answering.
    if (future.wait_for(kPrepareAllowance + 2 * job.timeout) != std::future_status::ready)
      return lost("no answer from the Ray worker in time");
    ExperimentResult result = future.get();
    std::lock_guard lock(mutex_);
    progress_.erase(worker);
    return result;
  }

  // Stopping a worker ends the whole cluster connection (the destructor's): nothing to do alone.
  void abort_worker(size_t) override {
    std::lock_guard lock(mutex_);
    fail_all("aborted: the loop is stopping its workers");
  }

  void fail_all(const std::string& reason) {  // with mutex_ held
    for (auto& [id, handler] : handlers_) handler(Json{{"lost", reason}});
    handlers_.clear();
  }

  void read_answers() {
    std::string line;
    while (side_->read_line(line, Deadline::max()) == LineRead::Line) {
      Json message = Json::parse(line, nullptr, false);
      if (message.is_discarded()) continue;
      const std::string op = message.value("op", "");
      std::lock_guard lock(mutex_);
      if (op == "stage") {
        for (size_t w = 0; w < remote_index_.size(); ++w)
          if (remote_index_[w] == message.value("worker", -1) && progress_.count(w))
            progress_[w](message.value("stage", ""));
        continue;
      }
      const auto it = handlers_.find(message.value("id", uint64_t{0}));
      if (it == handlers_.end()) continue;
      it->second(message);
      handlers_.erase(it);
    }
    std::lock_guard lock(mutex_);
    side_closed_ = true;
    fail_all(quitting_ ? "aborted: the loop is stopping its workers" : "the Ray side process ended");
  }

  std::unique_ptr<LineProcess> side_;
  std::thread reader_;
  std::mutex mutex_;
  std::map<uint64_t, std::function<void(const Json&)>> handlers_;
  std::map<size_t, Progress> progress_;
  std::vector<int> remote_index_;  // our worker index -> the side process's
  uint64_t next_id_ = 1;
  std::atomic<bool> side_closed_{false};
  bool quitting_ = false;
};

}  // namespace

std::unique_ptr<Executor> make_ray_executor(const ExecutorOptions& options) {
  return std::make_unique<RayExecutor>(options);
}

}  // namespace ak
