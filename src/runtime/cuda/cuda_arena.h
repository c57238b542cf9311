// The judge's shared arena on a GPU (how it is made: cuda_arena.cpp) and the launcher's mapping
// of it.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/cuda/cuda_handles.h"
#include "runtime/cuda/vmm_memory.h"
#include "runtime/runtime.h"

namespace ak::cuda {

// The handle of a VMM arena: this prefix and the launcher's number of the inherited descriptor.
inline constexpr std::string_view kVmmPrefix = "vmm-fd:";

// VMM memory where the device supports it, else a cudaMalloc shared through CUDA IPC;
// $AUTOKERNEL_ARENA (vmm or ipc) forces one. Throws Error(Usage) for another value and
// Error(Unsupported) for vmm on a device without it.
std::unique_ptr<SharedArena> make_arena(size_t bytes, int device);

// The launcher's side: the arena mapped from its handle ("vmm-fd:N" or a CUDA IPC handle in hex).
class ArenaMapping {
 public:
  ArenaMapping(const std::string& handle, size_t bytes, int device);
  void* data() const { return vmm_ ? vmm_->data() : ipc_->data(); }

 private:
  std::optional<IpcMapping> ipc_;
  std::optional<VmmMemory> vmm_;
};

}  // namespace ak::cuda
