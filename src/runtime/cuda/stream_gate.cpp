#include "runtime/cuda/stream_gate.h"

#include <atomic>
#include <string>

#include "core/error.h"
#include "runtime/cuda/cuda_check.h"

namespace ak::cuda {

StreamGate::StreamGate()
    : memory_(sizeof(GateFlags)),
      host_flags_(static_cast<GateFlags*>(memory_.host())),
      device_flags_(static_cast<GateFlags*>(memory_.device())) {}

StreamGate::~StreamGate() {
  release();
}

void StreamGate::hold(cudaStream_t stream) {
  if (held_) throw Error(ErrorKind::Internal, "hold_stream: the kernel stream is already held");
  const uint32_t next = generation_ + 1;
  AK_CUDA_CHECK(launch_gate(stream, device_flags_, next, kTimeoutNs));
  generation_ = next;
  held_ = true;
}

void StreamGate::release() noexcept {
  // A release store: the gate kernel re-reads the flag over the bus until it sees the value.
  std::atomic_ref<uint32_t>(host_flags_->released).store(generation_, std::memory_order_release);
  held_ = false;
}

void StreamGate::check_no_timeout() {
  const uint32_t timed_out =
      std::atomic_ref<uint32_t>(host_flags_->timed_out).load(std::memory_order_acquire);
  if (timed_out == reported_timeout_) return;
  reported_timeout_ = timed_out;
  throw Error(ErrorKind::Timeout,
              "stream gate " + std::to_string(timed_out) + " opened by its " +
                  std::to_string(kTimeoutNs / 1'000'000'000ULL) +
                  " s safety timeout, before release_stream(): the work behind it ran unheld (a first "
                  "launch of a not yet loaded kernel, a launch that grows the per-thread stack for "
                  "its spills, or a device-wide synchronization, while the stream was held?)");
}

}  // namespace ak::cuda
