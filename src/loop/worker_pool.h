// The scheduling both executors share (executor.h): a thread of this process per measuring
// worker, each taking the first queued job meant for it or for any worker, running it to the
// end on its worker (one experiment at a time, so nothing else is timed on that GPU meanwhile),
// and queuing what it came to for the driver. A kind of executor says only how one worker runs
// one job (measure_on) and how to stop it (abort_worker).
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "loop/executor.h"

namespace ak {

class WorkerPool : public Executor {
 public:
  ~WorkerPool() override;  // call stop_workers() first from the derived destructor
  const std::vector<WorkerInfo>& workers() const override { return infos_; }
  void submit(MeasureJob job) override;
  std::optional<MeasureDone> next(std::chrono::milliseconds wait) override;
  size_t in_flight() const override;
  std::vector<std::string> activity() const override;

 protected:
  // Starts a thread per entry of `infos` (the workers must be ready to measure).
  void start_workers(std::vector<WorkerInfo> infos);
  // Ends every worker thread: the jobs in progress are aborted (abort_worker), the queued dropped.
  void stop_workers();
  virtual ExperimentResult measure_on(size_t worker, const MeasureJob& job, const Progress& progress) = 0;
  virtual void abort_worker(size_t worker) = 0;

 private:
  bool take(size_t worker, MeasureJob& job);
  void serve(size_t worker);

  std::vector<WorkerInfo> infos_;
  std::vector<std::string> doing_;
  mutable std::mutex mutex_;
  std::condition_variable work_, finished_;
  std::deque<MeasureJob> queued_;
  std::deque<MeasureDone> done_;
  size_t running_ = 0;  // queued or being measured
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ak
