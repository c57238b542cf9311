// The judge's handle on the launcher: the one process that loads a kernel module and runs its
// host code, sandboxed (harness/sandbox.h). The judge (this process) owns the device memory,
// writes the inputs, poisons the outputs, reads them back itself and keeps the clock; the
// launcher only maps the shared arena, runs ak_launch on the calls the judge defines and answers
// in a fixed vocabulary that carries no verdict ("ready", "loaded", "done", "enqueued", "rc N I",
// "fault ..."). Anything else on the channel fails the experiment: only the kernel's code could
// have written it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "runtime/runtime.h"

namespace ak {

// One ak_call in the launcher's terms: tensors by their offset in the shared arena.
struct CallLayout {
  struct Tensor {
    size_t offset;
    TensorSpec spec;
  };
  std::vector<Tensor> inputs, outputs;
  std::vector<double> scalars;
  std::optional<Tensor> workspace;  // ak_call::workspace, when the signature gives one
};

class Launcher {
 public:
  // Starts `autokernel launcher` on the arena and waits until it has mapped it and entered the
  // sandbox. Throws Error(Crash) if it dies first. `executable`: this one when empty (tests, whose
  // own binary is not the CLI, name the CLI).
  Launcher(Backend backend, const SharedArena& arena, const std::filesystem::path& executable = {});
  ~Launcher();  // kills and reaps it
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // dlopen in the launcher: Error(Io) when it cannot be loaded, Error(Validation) without
  // ak_launch, Error(Crash) when the module's load-time code ended the process.
  void load(const std::filesystem::path& module);
  int define(const CallLayout& call);

  // Runs the calls in order on the kernel stream and waits for all of them: Error(Launch) when
  // ak_launch returns non-zero, Error(Crash) on a device fault or when the launcher dies.
  void run(const std::vector<int>& ids);
  // The same in two halves, for the judge's clock: `spin` polls instead of sleeping in poll().
  void start_run(const std::vector<int>& ids);
  // An empty batch, with the launcher's own smallest device work in place of the calls.
  void start_empty_run() { send("run nothing"); }
  // Returns the launcher's own device time of the batch (its CUDA events; negative when it gave
  // none): what the kernel's process says, a diagnostic beside the judge's clock, never a verdict.
  double finish_run(bool spin);

  // Holds the kernel stream, enqueues the call and returns once ak_launch has returned; release()
  // opens the stream and waits for the work. Between the two the judge looks at the outputs.
  void hold(int id);
  void release();

  bool asynchronous() const { return backend_ == Backend::Cuda; }
  pid_t pid() const { return pid_; }
  // The last lines the launcher (the kernel's code included) printed.
  std::string log_tail(size_t lines) const;

 private:
  void send(const std::string& line);
  std::string expect(std::initializer_list<std::string_view> replies, bool spin = false,
                     std::chrono::seconds limit = std::chrono::hours(24));
  [[noreturn]] void ended();

  Backend backend_;
  pid_t pid_ = -1;
  int channel_ = -1;
  int log_ = -1;
  std::string pending_;
  int next_id_ = 0;
};

}  // namespace ak
