#include "runtime/cuda/vmm_memory.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "runtime/cuda/cuda_check.h"

namespace ak::cuda {
namespace {

struct Driver {
  decltype(&cuGetErrorName) error_name = nullptr;
  decltype(&cuDeviceGet) device_get = nullptr;
  decltype(&cuDeviceGetAttribute) attribute = nullptr;
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
  decltype(&cuMemExportToShareableHandle) export_handle = nullptr;
  decltype(&cuMemImportFromShareableHandle) import_handle = nullptr;
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
    resolve(d.error_name, "cuGetErrorName");
    resolve(d.device_get, "cuDeviceGet");
    resolve(d.attribute, "cuDeviceGetAttribute");
    resolve(d.granularity, "cuMemGetAllocationGranularity");
    resolve(d.create, "cuMemCreate");
    resolve(d.release, "cuMemRelease");
    resolve(d.reserve, "cuMemAddressReserve");
    resolve(d.address_free, "cuMemAddressFree");
    resolve(d.map, "cuMemMap");
    resolve(d.unmap, "cuMemUnmap");
    resolve(d.set_access, "cuMemSetAccess");
    resolve(d.export_handle, "cuMemExportToShareableHandle");
    resolve(d.import_handle, "cuMemImportFromShareableHandle");
    return d;
  }();
  return table;
}

void check(CUresult status, const char* call) {
  if (status == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (driver().error_name(status, &name) != CUDA_SUCCESS || name == nullptr) name = "unknown error";
  throw Error(ErrorKind::Launch, std::string(call) + ": " + name);
}

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
  check(driver().granularity(&bytes, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
        "cuMemGetAllocationGranularity");
  return bytes;
}

}  // namespace

bool VmmMemory::supported(int device) {
  CUdevice handle = 0;
  check(driver().device_get(&handle, device), "cuDeviceGet");
  int vmm = 0, descriptors = 0;
  check(driver().attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, handle),
        "cuDeviceGetAttribute");
  check(driver().attribute(&descriptors, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                           handle),
        "cuDeviceGetAttribute");
  return vmm != 0 && descriptors != 0;
}

VmmMemory VmmMemory::create(size_t bytes, int device) {
  const size_t grain = granularity(device);
  VmmMemory memory;
  memory.bytes_ = (std::max<size_t>(bytes, 1) + grain - 1) / grain * grain;
  const CUmemAllocationProp prop = properties(device);
  CUmemGenericAllocationHandle handle = 0;
  check(driver().create(&handle, memory.bytes_, &prop, 0), "cuMemCreate");
  memory.handle_ = handle;
  memory.map(device);
  int fd = -1;
  check(driver().export_handle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        "cuMemExportToShareableHandle");
  memory.fd_ = fd;
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // only the launcher gets it, by an explicit dup2
  return memory;
}

VmmMemory VmmMemory::import(int fd, size_t bytes, int device) {
  VmmMemory memory;
  memory.bytes_ = bytes;
  CUmemGenericAllocationHandle handle = 0;
  const CUresult status = driver().import_handle(&handle, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                                 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  ::close(fd);  // the handle keeps the memory; no descriptor of the judge's stays open here
  check(status, "cuMemImportFromShareableHandle");
  memory.handle_ = handle;
  memory.map(device);
  return memory;
}

void VmmMemory::map(int device) {
  CUdeviceptr address = 0;
  check(driver().reserve(&address, bytes_, granularity(device), 0, 0), "cuMemAddressReserve");
  address_ = address;
  check(driver().map(address, bytes_, 0, handle_, 0), "cuMemMap");
  mapped_ = true;
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(driver().set_access(address, bytes_, &access, 1), "cuMemSetAccess");
}

VmmMemory::VmmMemory(VmmMemory&& other) noexcept
    : handle_(other.handle_),
      address_(other.address_),
      bytes_(other.bytes_),
      mapped_(other.mapped_),
      fd_(other.fd_) {
  other.handle_ = 0;
  other.address_ = 0;
  other.mapped_ = false;
  other.fd_ = -1;
}

VmmMemory::~VmmMemory() {
  // Work of this context may still read the memory (the runtime's stream is synchronized later).
  if (mapped_) (void)cudaDeviceSynchronize();
  if (mapped_) (void)driver().unmap(address_, bytes_);
  if (address_ != 0) (void)driver().address_free(address_, bytes_);
  if (handle_ != 0) (void)driver().release(handle_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace ak::cuda
