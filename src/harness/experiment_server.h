// A long-lived experiment worker: `autokernel worker --serve` reads requests on its stdin and
// answers each with a result line. It prepares every input set and float64 reference of a
// request's plan once (experiment_input_sets: the very cases run_experiment draws, same seeds,
// same checks) and keeps them while the plan (op, problem, dtype, quick, seed) stays the same;
// then it forks one child per experiment: the child initialises the device, loads the module,
// runs the stages and the timing on the inherited cases, and exits. A crash or a hang kills only
// that child (CRASH / TIMEOUT on its result); the server stays up with its prepared cases, and
// the caller carries on. The server itself never touches the device, so forking it is safe.
//
// Results are the same as run_isolated's for the same request; only the wall time differs.
//
// Protocol, one line each: the request {"request": ExperimentRequest, "timeout_s": N}; the
// server answers "prepared" once the cases are ready, "stage NAME" as the child goes, and last
// "result " followed by the ExperimentResult's JSON. {"prepare": ExperimentRequest} asks it to draw
// that plan on a thread of its own meanwhile (never answered).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include "core/subprocess.h"
#include "harness/experiment.h"

namespace ak {

// Where a server runs: variables for its environment (CUDA_VISIBLE_DEVICES names its GPU), the CPU
// cores the server itself is pinned to (it draws the references there), and those its judges and
// their launchers are pinned to (AUTOKERNEL_JUDGE_CPUS, which the forked judge applies).
struct ServerPlacement {
  EnvOverrides env;
  std::vector<int> cpus;        // empty: not pinned
  std::vector<int> judge_cpus;  // empty: the server's
};

class ExperimentServer {
 public:
  // Spawns the server process: `EXECUTABLE worker --serve`, this executable when empty (tests
  // name the CLI). Throws Error(Io) when it cannot be started.
  explicit ExperimentServer(std::filesystem::path executable = {}, ServerPlacement placement = {});
  ~ExperimentServer();  // ends the server and any child it has running; never throws
  ExperimentServer(const ExperimentServer&) = delete;
  ExperimentServer& operator=(const ExperimentServer&) = delete;

  // One experiment; the child is killed after `timeout`, and preparing the cases must fit in
  // `timeout` too. Never throws for the kernel's faults; if the server itself dies it is
  // restarted and the experiment is run again once; a second death is LOST.
  ExperimentResult run(const ExperimentRequest& request, std::chrono::seconds timeout,
                       const Progress& progress);

  // From any thread: asks the server to draw `request`'s plan (its inputs and references) while
  // it is otherwise idle or waiting for a judge, ahead of the experiments that will need it. A
  // hint: no answer, lost if the server restarts.
  void prepare(const ExperimentRequest& request);

  // From another thread: ends the server and the experiment it is running now; run() then returns
  // LOST ("aborted") at once and starts nothing again. For a driver that stops its workers.
  void abort();

  pid_t server_pid() const;  // of the server process now running (0: none, restarted on the next run)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The server's side: answers requests from in_fd on out_fd until in_fd closes (returns 0) or
// out_fd's reader has gone (returns 1). Forks from the calling thread: call it from a
// single-threaded process that has not touched a device.
int serve_experiments(int in_fd, int out_fd);

}  // namespace ak
