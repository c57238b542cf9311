// The executor of one machine: a measuring worker per GPU (an experiment server started with
// CUDA_VISIBLE_DEVICES naming that GPU, its judges pinned to two physical cores of their own, on
// a thread of this process that feeds it), and a pool of compiler threads pinned to the other
// cores, where the servers also draw their references.
#include "loop/local_executor.h"

#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "core/cpu_topology.h"
#include "core/error.h"
#include "harness/experiment_server.h"
#include "loop/worker_pool.h"

namespace ak {
namespace {

std::string hostname() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "localhost";
}

// Compiler threads, each pinned to the build cores: the compilers they start inherit the mask.
class BuildPool {
 public:
  BuildPool(size_t threads, std::vector<int> cpus) : cpus_(std::move(cpus)) {
    for (size_t t = 0; t < std::max<size_t>(1, threads); ++t) threads_.emplace_back([this] { work(); });
  }
  ~BuildPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();  // a build in progress finishes: it fills the shared cache
  }
  BuildPool(const BuildPool&) = delete;
  BuildPool& operator=(const BuildPool&) = delete;

  std::future<BuiltCandidate> submit(Candidate candidate, EvaluateOptions options) {
    std::packaged_task<BuiltCandidate()> task(
        [candidate = std::move(candidate), options = std::move(options)] {
          return build_candidate(candidate, options);
        });
    auto future = task.get_future();
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
    return future;
  }

 private:
  void work() {
    if (!cpus_.empty()) pin_this_thread(cpus_);
    while (true) {
      std::packaged_task<BuiltCandidate()> task;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::vector<int> cpus_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<BuiltCandidate()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

class LocalExecutor final : public WorkerPool {
 public:
  explicit LocalExecutor(const ExecutorOptions& o) {
    const bool cuda = o.backend == Backend::Cuda;
    std::vector<int> gpus = o.gpus;
    if (cuda && gpus.empty()) gpus = {0};
    const int count = cuda ? static_cast<int>(gpus.size()) : std::max(1, o.host_workers);
    // The host backend's workers share one CPU (its kernels use every core): not pinned.
    const CorePlan cores = cuda ? plan_cores(physical_cores(), count) : CorePlan{};
    const std::string host = hostname();
    std::vector<WorkerInfo> infos;
    for (int w = 0; w < count; ++w) {
      WorkerInfo info;
      info.host = host;
      ServerPlacement placement;
      if (cuda) {
        info.gpu = gpus[static_cast<size_t>(w)];
        info.name = "gpu" + std::to_string(info.gpu);
        info.model = device_model(o.backend, info.gpu);
        if (const std::string sole = sole_device_visibility(o.backend, info.gpu); !sole.empty())
          placement.env = {{"CUDA_VISIBLE_DEVICES", sole}};
        if (cores.pinned()) {  // references drawn on the compilers' cores, judging on its own
          placement.cpus = cores.builds;
          placement.judge_cpus = cores.workers[static_cast<size_t>(w)];
        }
      } else {
        info.name = "host" + std::to_string(w);
        info.model = o.device_model.empty() ? device_model(o.backend, 0) : o.device_model;
      }
      if (!infos.empty() && info.model != infos.front().model)
        throw Error(ErrorKind::Usage, "the GPUs differ (" + infos.front().model + ", " + info.model +
                                          "): one kernel's experiments are compared on one GPU model; "
                                          "name GPUs of one model with --gpus");
      infos.push_back(info);
      servers_.push_back(std::make_unique<ExperimentServer>(o.executable, std::move(placement)));
    }
    const size_t build_threads =
        o.build_jobs > 0
            ? static_cast<size_t>(o.build_jobs)
            : (cores.pinned() ? cores.builds.size() : std::max(1u, std::thread::hardware_concurrency()));
    builds_ = std::make_unique<BuildPool>(build_threads, cores.builds);
    start_workers(std::move(infos));
  }

  ~LocalExecutor() override { stop_workers(); }

  std::future<BuiltCandidate> build(const Candidate& candidate, const EvaluateOptions& options) override {
    return builds_->submit(candidate, options);
  }

 private:
  ExperimentResult measure_on(size_t worker, const MeasureJob& job, const Progress& progress) override {
    return servers_[worker]->run(job.request, job.timeout, progress);
  }
  void abort_worker(size_t worker) override { servers_[worker]->abort(); }
  void prepare(const ExperimentRequest& request) override {
    for (auto& server : servers_) server->prepare(request);
  }

  std::vector<std::unique_ptr<ExperimentServer>> servers_;
  std::unique_ptr<BuildPool> builds_;
};

}  // namespace

std::unique_ptr<Executor> make_local_executor(const ExecutorOptions& options) {
  return std::make_unique<LocalExecutor>(options);
}

}  // namespace ak
