// Device memory from the driver's virtual memory management API (cuMemCreate): physical memory
// whose page granularity the allocator states, shareable through a POSIX file descriptor. The
// judge's arena can be made of it (AUTOKERNEL_ARENA=vmm) in place of a cudaMalloc exported by
// CUDA IPC; the launcher maps it from the descriptor it inherits. The driver's entry points are
// resolved at run time through the CUDA runtime, so nothing links libcuda.
#pragma once

#include <cstddef>

namespace ak::cuda {

class VmmMemory {
 public:
  // Whether `device` has the VMM API with POSIX file descriptor handles.
  static bool supported(int device);
  // New physical memory of at least `bytes` (rounded up to the device's recommended granularity),
  // mapped read-write into this process for `device`.
  static VmmMemory create(size_t bytes, int device);
  // Maps the memory another process exported as `fd`; takes ownership of the descriptor.
  static VmmMemory import(int fd, size_t bytes, int device);

  VmmMemory(VmmMemory&& other) noexcept;
  VmmMemory& operator=(VmmMemory&&) = delete;
  VmmMemory(const VmmMemory&) = delete;
  VmmMemory& operator=(const VmmMemory&) = delete;
  ~VmmMemory();

  void* data() const { return reinterpret_cast<void*>(address_); }
  size_t size() const { return bytes_; }
  // A descriptor for the same memory (owned by this object: closed with it); -1 after import.
  int exported_fd() const { return fd_; }

 private:
  VmmMemory() = default;
  void map(int device, size_t alignment);

  unsigned long long handle_ = 0;   // CUmemGenericAllocationHandle
  unsigned long long address_ = 0;  // CUdeviceptr
  size_t bytes_ = 0;
  bool mapped_ = false;
  int fd_ = -1;
};

}  // namespace ak::cuda
