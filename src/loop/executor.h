// Where the loop's experiments run. The driver (the loop, one process) proposes, decides keep or
// revert, commits and writes the results log; an executor only builds and measures:
//   build     lint + compile a candidate on a CPU (the content-addressed cache is shared)
//   measure   one experiment (stages, anti-cheat checks, timing) on one worker: a judge of its
//             own on its own GPU, nothing else timed on that GPU meanwhile
// Three kinds behind this interface (one table in executor.cpp):
//   local, one worker    the one-GPU loop (or the host backend)
//   local, N GPUs        `optimize --gpus all|0,2`: one experiment server per GPU, pinned to cores
//                        of its own; builds in a pool on the cores the measuring processes leave
//   ray                  `optimize --ray auto|ADDRESS`: one measuring actor per GPU of a Ray
//                        cluster, compile tasks on its CPUs (python -m autokernel_ray, spoken to
//                        in lines; ray_executor.cpp)
// A worker that dies under an experiment is restarted and the experiment run again; what cannot
// be run again comes back LOST with the reason, never PASS.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/evaluate.h"

namespace ak {

struct WorkerInfo {
  std::string name;   // "gpu0", "host0", "node-b/gpu1": what results.tsv and the report show
  std::string host;   // the machine it runs on
  int gpu = -1;       // the device ordinal on its host (-1: the host backend)
  std::string model;  // the GPU's (or CPU's) model: one kernel's experiments are compared on one
};

struct MeasureJob {
  uint64_t ticket = 0;
  ExperimentRequest request;  // its module: a path on the driver's machine
  std::chrono::seconds timeout{120};
  int worker = -1;      // -1: the first free worker; otherwise this worker only
  int not_worker = -1;  // with worker -1: any free worker but this one (a retry of what it lost)
};

struct MeasureDone {
  uint64_t ticket = 0;
  int worker = -1;
  ExperimentResult result;
  double seconds = 0;  // the job's wall time on its worker
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const std::vector<WorkerInfo>& workers() const = 0;
  // Lint and compile on a CPU. Never throws for the candidate's faults (BuiltCandidate::failure).
  virtual std::future<BuiltCandidate> build(const Candidate& candidate, const EvaluateOptions& options) = 0;
  // Queues a measurement; a job for a given worker waits for that one.
  virtual void submit(MeasureJob job) = 0;
  // The next job to finish, waiting at most `wait` (nothing when none finished by then). Throws
  // Error(Internal) when nothing is in flight.
  virtual std::optional<MeasureDone> next(std::chrono::milliseconds wait) = 0;
  virtual size_t in_flight() const = 0;
  // One line per worker: what it is doing now ("idle", "rmsnorm sweep"), for progress lines.
  virtual std::vector<std::string> activity() const = 0;
  // A hint that experiments of `request`'s plan come later: workers that can draw its inputs and
  // references ahead (while idle or waiting for a judge) do. Never throws.
  virtual void prepare(const ExperimentRequest& request) { (void)request; }
};

struct ExecutorOptions {
  std::string kind = "local";  // local or ray
  Backend backend = Backend::Host;
  std::vector<int> gpus;             // local CUDA: the device ordinals; empty: the one visible GPU
  int host_workers = 1;              // local host backend: measuring processes (a CPU is shared)
  std::string ray_address;           // ray: "auto", "local" (a cluster of this machine) or host:port
  std::string device_model;          // the driver's device, for the workers' model
  int build_jobs = 0;                // parallel builds; 0: the cores the measuring processes leave
  std::filesystem::path executable;  // the CLI the workers run; empty: this executable
};

// Throws Error(Usage) for a bad choice (no such GPU, a kind that does not exist) and Error(Io)
// when workers cannot be started.
std::unique_ptr<Executor> make_executor(const ExecutorOptions& options);

// "all" -> every GPU this process sees; "0,2" -> those. Throws Error(Usage) on anything else.
std::vector<int> parse_gpu_list(const std::string& text, int visible);

}  // namespace ak
