// RAII owners of CUDA handles. Constructors throw ak::Error naming the failing call; destructors
// release and never throw (a failed release is ignored: the error, if it is a device fault,
// surfaces at the next checked call).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace ak::cuda {

// A stream that does not synchronize with the legacy default stream.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) = delete;

  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Device memory from cudaMalloc (256-byte aligned). Zero bytes hold no allocation.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// Memory another process exported through CUDA IPC, mapped here (cudaIpcOpenMemHandle of the
// handle's hex text; closed with cudaIpcCloseMemHandle).
class IpcMapping {
 public:
  explicit IpcMapping(const std::string& hex);
  ~IpcMapping();
  IpcMapping(const IpcMapping&) = delete;
  IpcMapping& operator=(const IpcMapping&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
};

// Page-locked host memory mapped into the device's address space: the host writes it and a
// running kernel sees the write.
class MappedHostMemory {
 public:
  explicit MappedHostMemory(size_t bytes);
  ~MappedHostMemory();
  MappedHostMemory(const MappedHostMemory&) = delete;
  MappedHostMemory& operator=(const MappedHostMemory&) = delete;

  void* host() const { return host_; }
  void* device() const { return device_; }

 private:
  void* host_ = nullptr;
  void* device_ = nullptr;
};

class CublasHandle {
 public:
  CublasHandle();
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace ak::cuda
