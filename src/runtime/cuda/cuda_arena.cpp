// The judge's shared arena on a GPU, and the launcher's mapping of it.
//
// By default the arena is physical memory from the driver's VMM API (cuMemCreate), exported as
// a POSIX file descriptor that the launcher inherits and maps. A cudaMalloc exported through
// CUDA IPC (cudaIpcGetMemHandle) is the fallback where the device has no VMM or descriptor
// handles, and AUTOKERNEL_ARENA=ipc or vmm forces one: on an H100 (driver 580) kernels run up to
// 60% slower in the launcher on the IPC arena than on the VMM arena or on the launcher's own
// memory — rmsnorm 8192^2 fp16 145.7 against 92.5 us by the launcher's own events, at the same
// layout (docs/benchmarks.md, 2026-11-24 fourth session). Either way the judge makes the memory,
// before any kernel code is loaded; the launcher only maps it.
#include "runtime/cuda/cuda_arena.h"

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_runtime.h"

namespace ak::cuda {
namespace {

class IpcArena final : public SharedArena {
 public:
  explicit IpcArena(size_t bytes) : memory_(std::max<size_t>(bytes, 256)) {
    cudaIpcMemHandle_t handle;
    AK_CUDA_CHECK(cudaIpcGetMemHandle(&handle, memory_.data()));
    handle_ = to_hex(&handle, sizeof handle);
  }
  std::byte* data() const override { return static_cast<std::byte*>(memory_.data()); }
  size_t size() const override { return memory_.size(); }
  std::string handle() const override { return handle_; }

 private:
  DeviceBuffer memory_;
  std::string handle_;
};

class VmmArena final : public SharedArena {
 public:
  VmmArena(size_t bytes, int device) : memory_(VmmMemory::create(bytes, device)) {}
  std::byte* data() const override { return static_cast<std::byte*>(memory_.data()); }
  size_t size() const override { return memory_.size(); }
  std::string handle() const override { return std::string(kVmmPrefix); }
  int inherited_fd() const override { return memory_.exported_fd(); }

 private:
  VmmMemory memory_;
};

}  // namespace

std::unique_ptr<SharedArena> make_arena(size_t bytes, int device) {
  const char* text = std::getenv("AUTOKERNEL_ARENA");
  const std::string kind = text != nullptr ? text : "";
  if (kind == "ipc") return std::make_unique<IpcArena>(bytes);
  if (kind == "vmm") {
    if (!VmmMemory::supported(device))
      throw Error(ErrorKind::Unsupported, "AUTOKERNEL_ARENA=vmm: device " + std::to_string(device) +
                                              " has no virtual memory management with descriptor handles");
    return std::make_unique<VmmArena>(bytes, device);
  }
  if (!kind.empty()) throw Error(ErrorKind::Usage, "AUTOKERNEL_ARENA must be vmm or ipc, not '" + kind + "'");
  if (VmmMemory::supported(device)) return std::make_unique<VmmArena>(bytes, device);
  return std::make_unique<IpcArena>(bytes);
}

ArenaMapping::ArenaMapping(const std::string& handle, size_t bytes, int device) {
  if (handle.starts_with(kVmmPrefix)) {
    int fd = -1;
    try {
      fd = std::stoi(handle.substr(kVmmPrefix.size()));
    } catch (const std::exception&) {
      throw Error(ErrorKind::Usage, "arena handle '" + handle + "' names no descriptor");
    }
    vmm_.emplace(VmmMemory::import(fd, bytes, device));
  } else {
    ipc_.emplace(handle);
  }
}

}  // namespace ak::cuda
