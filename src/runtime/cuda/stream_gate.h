// Holds a stream behind a one-thread "gate" kernel that spins on a flag in mapped host memory,
// so work enqueued after it cannot start until the host opens the gate (nvbench's blocking
// kernel). Each hold has a generation and the host opens it by raising a monotonic counter, so
// a new hold can never re-close an older gate that has not yet seen its release.
//
// Hazards, all of which turn into a wait of kTimeoutNs and then Error(Timeout), never a hang:
//  - the first launch of a kernel whose module is not loaded yet (lazy loading) while held:
//    launch every kernel once before holding the stream;
//  - cudaFree or any other device-wide synchronization while held (this is why buffers of the
//    runtime open the gate before they free);
//  - a launch whose threads need more local memory (register spills) than the context's
//    per-thread stack holds: the driver grows the stack first, which waits for running work
//    (the Triton launcher grows it when it loads a cubin, in ak_prepare);
//  - CUDA_LAUNCH_BLOCKING=1, which makes the gate's own launch wait for the gate.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/cuda/cuda_handles.h"
#include "runtime/cuda/device_kernels.h"

namespace ak::cuda {

class StreamGate {
 public:
  static constexpr uint64_t kTimeoutNs = 10'000'000'000ULL;

  StreamGate();
  // Opens any gate still closed, so its kernel exits.
  ~StreamGate();
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;

  // Enqueues a closed gate on `stream`. Throws Error(Internal) if a hold is already open and
  // Error(Launch/Crash) if the gate kernel does not launch.
  void hold(cudaStream_t stream);
  // Opens the current gate. Harmless when nothing is held.
  void release() noexcept;
  bool held() const { return held_; }

  // Throws Error(Timeout) once for each gate that opened itself by its timeout since the last
  // call: whatever was timed or checked behind it ran before the host let it.
  void check_no_timeout();

 private:
  MappedHostMemory memory_;
  GateFlags* host_flags_;
  GateFlags* device_flags_;
  uint32_t generation_ = 0;
  uint32_t reported_timeout_ = 0;
  bool held_ = false;
};

}  // namespace ak::cuda
