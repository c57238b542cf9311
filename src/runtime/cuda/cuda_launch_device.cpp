// The launcher's side of the CUDA backend: the judge's arena mapped (cuda_arena.h), the kernel
// stream, and the gate that holds it (so the judge can see work done outside call->stream).
#include <string>

#include "core/error.h"
#include "runtime/cuda/cuda_arena.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_handles.h"
#include "runtime/cuda/cuda_runtime.h"
#include "runtime/cuda/device_kernels.h"
#include "runtime/cuda/stream_gate.h"

namespace ak {
namespace {

class CudaLaunchDevice final : public LaunchDevice {
 public:
  ~CudaLaunchDevice() override {
    // The gate kernel reads mapped host memory that the gate frees: let it finish first.
    gate_.release();
    (void)cudaStreamSynchronize(stream_.get());
  }

  explicit CudaLaunchDevice(int device) : device_(device) {}

  std::byte* attach(const std::string& handle, size_t bytes) override {
    mapping_ = std::make_unique<cuda::ArenaMapping>(handle, bytes, device_);
    return static_cast<std::byte*>(mapping_->data());
  }

  // The gate kernel's module loads now (a first launch while held would wait on itself), one hold
  // and release runs through every call the checks make, and each kind of allocation a kernel may
  // make is made once: the driver opens what it needs for them (the stream-ordered pool, pinned
  // and managed memory, its PTX compiler) now, while the sandbox still lets it open files.
  void prepare_for_sandbox() override {
    AK_CUDA_CHECK(cuda::preload_device_kernels());
    AK_CUDA_CHECK(cuda::warm_ptx_compiler());
    hold_stream();
    release_stream();
    synchronize();
    void* memory = nullptr;
    AK_CUDA_CHECK(cudaMallocAsync(&memory, 1 << 20, stream_.get()));
    AK_CUDA_CHECK(cudaFreeAsync(memory, stream_.get()));
    AK_CUDA_CHECK(cudaMalloc(&memory, 1 << 20));
    AK_CUDA_CHECK(cudaFree(memory));
    AK_CUDA_CHECK(cudaMallocHost(&memory, 1 << 12));
    AK_CUDA_CHECK(cudaFreeHost(memory));
    AK_CUDA_CHECK(cudaMallocManaged(&memory, 1 << 12));
    AK_CUDA_CHECK(cudaFree(memory));
    synchronize();
  }

  void* stream() override { return stream_.get(); }

  void synchronize() override {
    if (gate_.held())
      throw Error(ErrorKind::Internal, "synchronize: the kernel stream is held; release_stream() first");
    AK_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    // A launch that failed without a fault (bad configuration, too many resources) shows up
    // only here if the kernel module did not report it.
    AK_CUDA_CHECK(cudaGetLastError());
    gate_.check_no_timeout();
  }

  bool asynchronous() const override { return true; }
  void hold_stream() override { gate_.hold(stream_.get()); }
  void release_stream() override { gate_.release(); }
  // The gate kernel, opened before it starts: it returns at once.
  void launch_nothing() override {
    gate_.hold(stream_.get());
    gate_.release();
  }
  void mark_batch_start() override { AK_CUDA_CHECK(cudaEventRecord(batch_start_.get(), stream_.get())); }
  void mark_batch_end() override { AK_CUDA_CHECK(cudaEventRecord(batch_end_.get(), stream_.get())); }
  double batch_device_us() override {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, batch_start_.get(), batch_end_.get()) == cudaSuccess) return 1000.0 * ms;
    (void)cudaGetLastError();  // a diagnostic's failure is not the next launch's error
    return -1;
  }

 private:
  cuda::Stream stream_;
  cuda::Event batch_start_, batch_end_;
  cuda::StreamGate gate_;
  int device_;
  std::unique_ptr<cuda::ArenaMapping> mapping_;
};

}  // namespace

std::unique_ptr<LaunchDevice> make_cuda_launch_device(int device) {
  AK_CUDA_CHECK(cudaSetDevice(device));
  return std::make_unique<CudaLaunchDevice>(device);
}

}  // namespace ak
