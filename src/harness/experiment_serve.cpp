// The server's side of ExperimentServer (`autokernel worker --serve`): prepare, fork, wait, answer.
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

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

std::string plan_key(const ExperimentRequest& r) {
  return r.op + " " + r.problem.to_string() + " " + std::string(to_string(r.dtype)) +
         (r.quick ? " quick " : " ") + std::to_string(r.seed);
}

// Draws the plans the driver says come next ({"prepare": request}) on a thread of its own while
// the server waits for its judges, so that a worker's first experiment of a kernel does not wait
// seconds for its references (each server draws its own). It never drops a kept set to make
// room: a plan that does not fit is drawn when its experiment comes, as before.
class Preparer {
 public:
  ~Preparer() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      queue_.clear();
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void ahead(const ExperimentRequest& request) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(request);
    }
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    changed_.notify_all();
  }

  // Before the server draws `request`'s plan itself: taken off the queue, or waited for while
  // the thread is drawing it (never drawn twice at once).
  void claim(const ExperimentRequest& request) {
    const std::string key = plan_key(request);
    std::unique_lock lock(mutex_);
    std::erase_if(queue_, [&](const ExperimentRequest& r) { return plan_key(r) == key; });
    changed_.wait(lock, [&] { return drawing_ != key; });
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      const ExperimentRequest request = std::move(queue_.front());
      queue_.pop_front();
      drawing_ = plan_key(request);
      lock.unlock();
      try {
        keep_prepared_cases(find_op(request.op), experiment_input_sets(request), /*evict=*/false);
      } catch (const std::exception&) {
        // Its experiment meets the same error, where it is reported.
      }
      lock.lock();
      drawing_.clear();
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<ExperimentRequest> queue_;
  std::string drawing_;
  bool stopping_ = false;
  std::thread thread_;
};

ExperimentResult serve_one(const ExperimentRequest& request, std::chrono::seconds timeout, int out_fd,
                           Preparer& preparer) {
  try {
    preparer.claim(request);
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
  // The preparer's thread is between sets while the child is forked (it holds no lock then).
  DrawingPause paused;
  options.on_forked = [&] { paused.release(); };
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
  Preparer preparer;
  std::string line;
  while (requests.next(line) == LineRead::Line) {
    ExperimentResult result;
    if (line.rfind("{\"prepare\":", 0) == 0) {  // a hint: never answered, even when malformed
      try {
        preparer.ahead(nlohmann::json::parse(line).at("prepare").get<ExperimentRequest>());
      } catch (const std::exception&) {
      }
      continue;
    }
    try {
      const auto message = nlohmann::json::parse(line);
      const auto request = message.at("request").get<ExperimentRequest>();
      result =
          serve_one(request, std::chrono::seconds(message.at("timeout_s").get<int64_t>()), out_fd, preparer);
    } catch (const std::exception& e) {
      result = error_result(std::string("experiment server: ") + e.what());
    }
    if (!write_line(out_fd, "result " + nlohmann::json(result).dump())) return 1;
  }
  return 0;
}

}  // namespace ak
