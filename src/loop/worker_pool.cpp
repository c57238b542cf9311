#include "loop/worker_pool.h"

#include "core/error.h"

namespace ak {

WorkerPool::~WorkerPool() {
  stop_workers();
}

void WorkerPool::start_workers(std::vector<WorkerInfo> infos) {
  infos_ = std::move(infos);
  doing_.assign(infos_.size(), "idle");
  for (size_t w = 0; w < infos_.size(); ++w) threads_.emplace_back([this, w] { serve(w); });
}

void WorkerPool::stop_workers() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  work_.notify_all();
  for (size_t w = 0; w < threads_.size(); ++w) abort_worker(w);
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void WorkerPool::submit(MeasureJob job) {
  if (job.worker >= static_cast<int>(infos_.size()))
    throw Error(ErrorKind::Internal,
                "a job for worker " + std::to_string(job.worker) + " of " + std::to_string(infos_.size()));
  {
    std::lock_guard lock(mutex_);
    queued_.push_back(std::move(job));
    ++running_;
  }
  work_.notify_all();
}

std::optional<MeasureDone> WorkerPool::next(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  if (running_ == 0 && done_.empty()) throw Error(ErrorKind::Internal, "next() with nothing in flight");
  if (!finished_.wait_for(lock, wait, [this] { return !done_.empty(); })) return std::nullopt;
  MeasureDone done = std::move(done_.front());
  done_.pop_front();
  return done;
}

size_t WorkerPool::in_flight() const {
  std::lock_guard lock(mutex_);
  return running_ + done_.size();
}

std::vector<std::string> WorkerPool::activity() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> lines;
  for (size_t w = 0; w < infos_.size(); ++w) lines.push_back(infos_[w].name + ": " + doing_[w]);
  return lines;
}

// The first queued job this worker may take: one named for it, else one for any worker that does
// not exclude it.
bool WorkerPool::take(size_t worker, MeasureJob& job) {
  const int self = static_cast<int>(worker);
  for (int pass = 0; pass < 2; ++pass)
    for (auto it = queued_.begin(); it != queued_.end(); ++it)
      if (pass == 0 ? it->worker == self : it->worker < 0 && it->not_worker != self) {
        job = std::move(*it);
        queued_.erase(it);
        return true;
      }
  return false;
}

void WorkerPool::serve(size_t worker) {
  while (true) {
    MeasureJob job;
    const auto doing = [&](std::string_view stage) {
      return job.request.op + " " + job.request.problem.to_string() + " " + std::string(stage);
    };
    {
      std::unique_lock lock(mutex_);
      work_.wait(lock, [&] { return stopping_ || take(worker, job); });
      if (stopping_) return;
      doing_[worker] = doing("prepare");
    }
    const auto start = std::chrono::steady_clock::now();
    ExperimentResult result = measure_on(worker, job, [&](std::string_view stage) {
      std::lock_guard lock(mutex_);
      doing_[worker] = doing(stage);
    });
    MeasureDone done{job.ticket, static_cast<int>(worker), std::move(result),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
    {
      std::lock_guard lock(mutex_);
      doing_[worker] = "idle";
      --running_;
      done_.push_back(std::move(done));
    }
    finished_.notify_all();
  }
}

}  // namespace ak
