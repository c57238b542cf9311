#include "runtime/cuda/vmm_memory.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <utility>

#include "core/error.h"
#include "runtime/cuda/cuda_check.h"

namespace ak::cuda {
namespace {

// The driver calls this file makes, resolved once by name through the CUDA runtime.
#define AK_VMM_DRIVER_CALLS(X)     \
  X(cuGetErrorName)                \
  X(cuDeviceGet)                   \
  X(cuDeviceGetAttribute)          \
  X(cuMemGetAllocationGranularity) \
  X(cuMemCreate)                   \
  X(cuMemRelease)                  \
  X(cuMemAddressReserve)           \
  X(cuMemAddressFree)              \
  X(cuMemMap)                      \
  X(cuMemUnmap)                    \
  X(cuMemSetAccess)                \
  X(cuMemExportToShareableHandle)  \
  X(cuMemImportFromShareableHandle)

struct Driver {
#define AK_DRIVER_FIELD(name) decltype(&::name) name = nullptr;
  AK_VMM_DRIVER_CALLS(AK_DRIVER_FIELD)
#undef AK_DRIVER_FIELD
};

template <class Fn>
void resolve(Fn& fn, const char* name) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found{};
  AK_CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &address, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || address == nullptr)
    throw Error(ErrorKind::Launch, std::string("the CUDA driver has no ") + name);
  fn = reinterpret_cast<Fn>(address);
}

const Driver& driver() {
  static const Driver table = [] {
    Driver d;
#define AK_DRIVER_RESOLVE(name) resolve(d.name, #name);
    AK_VMM_DRIVER_CALLS(AK_DRIVER_RESOLVE)
#undef AK_DRIVER_RESOLVE
    return d;
  }();
  return table;
}

void check(CUresult status, const char* call) {
  if (status == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (driver().cuGetErrorName(status, &name) != CUDA_SUCCESS || name == nullptr) name = "unknown error";
  throw Error(ErrorKind::Launch, std::string(call) + ": " + name);
}

// A driver call whose failure throws Error(Launch) naming the call and the driver's error.
#define AK_DRIVER_CHECK(fn, ...) check(driver().fn(__VA_ARGS__), #fn)

CUmemAllocationProp properties(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

size_t granularity(int device) {
  const CUmemAllocationProp prop = properties(device);
  size_t bytes = 0;
  AK_DRIVER_CHECK(cuMemGetAllocationGranularity, &bytes, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  return bytes;
}

}  // namespace

bool VmmMemory::supported(int device) {
  CUdevice handle = 0;
  AK_DRIVER_CHECK(cuDeviceGet, &handle, device);
  int vmm = 0, descriptors = 0;
  AK_DRIVER_CHECK(cuDeviceGetAttribute, &vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                  handle);
  AK_DRIVER_CHECK(cuDeviceGetAttribute, &descriptors,
                  CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, handle);
  return vmm != 0 && descriptors != 0;
}

VmmMemory VmmMemory::create(size_t bytes, int device) {
  const size_t grain = granularity(device);
  VmmMemory memory;
  memory.bytes_ = (std::max<size_t>(bytes, 1) + grain - 1) / grain * grain;
  const CUmemAllocationProp prop = properties(device);
  CUmemGenericAllocationHandle handle = 0;
  AK_DRIVER_CHECK(cuMemCreate, &handle, memory.bytes_, &prop, 0);
  memory.handle_ = handle;
  memory.map(device, grain);
  int fd = -1;
  AK_DRIVER_CHECK(cuMemExportToShareableHandle, &fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  memory.fd_ = fd;
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // only the launcher gets it, by an explicit dup2
  return memory;
}

VmmMemory VmmMemory::import(int fd, size_t bytes, int device) {
  VmmMemory memory;
  memory.bytes_ = bytes;
  CUmemGenericAllocationHandle handle = 0;
  const CUresult status = driver().cuMemImportFromShareableHandle(
      &handle, reinterpret_cast<void*>(static_cast<intptr_t>(fd)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  ::close(fd);  // the handle keeps the memory; no descriptor of the judge's stays open here
  check(status, "cuMemImportFromShareableHandle");
  memory.handle_ = handle;
  memory.map(device, granularity(device));
  return memory;
}

void VmmMemory::map(int device, size_t alignment) {
  CUdeviceptr address = 0;
  AK_DRIVER_CHECK(cuMemAddressReserve, &address, bytes_, alignment, 0, 0);
  address_ = address;
  AK_DRIVER_CHECK(cuMemMap, address, bytes_, 0, handle_, 0);
  mapped_ = true;
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  AK_DRIVER_CHECK(cuMemSetAccess, address, bytes_, &access, 1);
}

VmmMemory::VmmMemory(VmmMemory&& other) noexcept
    : handle_(std::exchange(other.handle_, 0)),
      address_(std::exchange(other.address_, 0)),
      bytes_(other.bytes_),
      mapped_(std::exchange(other.mapped_, false)),
      fd_(std::exchange(other.fd_, -1)) {}

VmmMemory::~VmmMemory() {
  if (mapped_) {
    // Work of this context may still read the memory (the runtime's stream is synchronized later).
    (void)cudaDeviceSynchronize();
    (void)driver().cuMemUnmap(address_, bytes_);
  }
  if (address_ != 0) (void)driver().cuMemAddressFree(address_, bytes_);
  if (handle_ != 0) (void)driver().cuMemRelease(handle_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace ak::cuda
