#include "runtime/cuda/cuda_handles.h"

#include <cstring>
#include <utility>

#include "runtime/cuda/cuda_check.h"

namespace ak::cuda {

Stream::Stream() {
  AK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  // Returns at once; the driver frees the stream after the work on it completes.
  if (stream_) (void)cudaStreamDestroy(stream_);
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
