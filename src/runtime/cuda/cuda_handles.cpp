#include "runtime/cuda/cuda_handles.h"

#include <cstring>
#include <string>
#include <utility>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_runtime.h"

namespace ak::cuda {

Stream::Stream() {
  AK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  // Returns at once; the driver frees the stream after the work on it completes.
  if (stream_) (void)cudaStreamDestroy(stream_);
}

IpcMapping::IpcMapping(const std::string& hex) {
  cudaIpcMemHandle_t handle;
  from_hex(hex, &handle, sizeof handle);
  AK_CUDA_CHECK(cudaIpcOpenMemHandle(&data_, handle, cudaIpcMemLazyEnablePeerAccess));
}

IpcMapping::~IpcMapping() {
  (void)cudaIpcCloseMemHandle(data_);
}

Event::Event() {
  AK_CUDA_CHECK(cudaEventCreate(&event_));
}

Event::~Event() {
  if (event_) (void)cudaEventDestroy(event_);
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

DeviceBuffer::DeviceBuffer(size_t bytes) : size_(bytes) {
  if (bytes > 0) AK_CUDA_CHECK(cudaMalloc(&data_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (data_) (void)cudaFree(data_);
}

MappedHostMemory::MappedHostMemory(size_t bytes) {
  AK_CUDA_CHECK(cudaHostAlloc(&host_, bytes, cudaHostAllocMapped));
  std::memset(host_, 0, bytes);
  const cudaError_t status = cudaHostGetDevicePointer(&device_, host_, 0);
  if (status != cudaSuccess) {
    (void)cudaFreeHost(host_);
    check(status, "cudaHostGetDevicePointer(&device_, host_, 0)", __FILE__, __LINE__);
  }
}

MappedHostMemory::~MappedHostMemory() {
  if (host_) (void)cudaFreeHost(host_);
}

CublasHandle::CublasHandle() {
  AK_CUDA_CHECK(cublasCreate(&handle_));
}

CublasHandle::~CublasHandle() {
  if (handle_) (void)cublasDestroy(handle_);
}

}  // namespace ak::cuda

namespace ak::cuda {

std::string to_hex(const void* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (size_t i = 0; i < size; ++i) {
    const auto b = static_cast<const unsigned char*>(bytes)[i];
    hex += kDigits[b >> 4];
    hex += kDigits[b & 15];
  }
  return hex;
}

void from_hex(const std::string& hex, void* bytes, size_t size) {
  auto digit = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw Error(ErrorKind::Usage, "IPC handle: '" + hex.substr(0, 16) + "...' is not hex");
  };
  if (hex.size() != 2 * size)
    throw Error(ErrorKind::Usage, "IPC handle: " + std::to_string(hex.size()) + " hex digits, expected " +
                                      std::to_string(2 * size));
  for (size_t i = 0; i < size; ++i)
    static_cast<unsigned char*>(bytes)[i] =
        static_cast<unsigned char>(digit(hex[2 * i]) * 16 + digit(hex[2 * i + 1]));
}

}  // namespace ak::cuda
