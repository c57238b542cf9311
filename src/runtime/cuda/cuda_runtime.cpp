#include "runtime/cuda/cuda_runtime.h"

#include <algorithm>
#include <optional>
#include <string>

#include "core/error.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_handles.h"
#include "runtime/cuda/device_kernels.h"
#include "runtime/cuda/stream_gate.h"

namespace ak {
namespace {

using cuda::DeviceBuffer;
using cuda::Event;
using cuda::Stream;
using cuda::StreamGate;

// A buffer handed to the harness. cudaFree waits for the device to go idle, which a held gate
// never does: open the gate first, so freeing (say, while an exception unwinds) cannot stall.
class GatedBuffer final : public Buffer {
 public:
  GatedBuffer(size_t bytes, std::shared_ptr<StreamGate> gate) : gate_(std::move(gate)), memory_(bytes) {}
  ~GatedBuffer() override { gate_->release(); }
  void* data() const override { return memory_.data(); }
  size_t size() const override { return memory_.size(); }

 private:
  std::shared_ptr<StreamGate> gate_;
  DeviceBuffer memory_;
};

// Opens the gate when a timed region is left by an exception.
class ReleaseOnExit {
 public:
  explicit ReleaseOnExit(StreamGate& gate) : gate_(gate) {}
  ~ReleaseOnExit() { gate_.release(); }
  ReleaseOnExit(const ReleaseOnExit&) = delete;
  ReleaseOnExit& operator=(const ReleaseOnExit&) = delete;

 private:
  StreamGate& gate_;
};

class CudaRuntime final : public Runtime {
 public:
  explicit CudaRuntime(DeviceInfo info) : info_(std::move(info)), gate_(std::make_shared<StreamGate>()) {}

  ~CudaRuntime() override {
    // The gate kernel reads mapped host memory that the gate frees: let it finish first.
    gate_->release();
    (void)cudaStreamSynchronize(kernel_stream_.get());
  }

  const DeviceInfo& info() const override { return info_; }

  std::unique_ptr<Buffer> allocate(size_t bytes) override {
    return std::make_unique<GatedBuffer>(bytes, gate_);
  }

  void upload(void* device_dst, const void* host_src, size_t bytes) override {
    if (bytes == 0) return;
    AK_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, copy_stream_.get()));
    AK_CUDA_CHECK(cudaStreamSynchronize(copy_stream_.get()));
  }

  void download(void* host_dst, const void* device_src, size_t bytes) override {
    if (bytes == 0) return;
    AK_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, copy_stream_.get()));
    AK_CUDA_CHECK(cudaStreamSynchronize(copy_stream_.get()));
  }

  void fill(void* device_dst, std::byte value, size_t bytes) override {
    if (bytes == 0) return;
    AK_CUDA_CHECK(cudaMemsetAsync(device_dst, std::to_integer<int>(value), bytes, copy_stream_.get()));
    AK_CUDA_CHECK(cudaStreamSynchronize(copy_stream_.get()));
  }

  void* stream() override { return kernel_stream_.get(); }

  void synchronize() override {
    require_unheld("synchronize");
    AK_CUDA_CHECK(cudaStreamSynchronize(kernel_stream_.get()));
    // A launch that failed without a fault (bad configuration, too many resources) shows up
    // only here if the kernel module did not report it.
    AK_CUDA_CHECK(cudaGetLastError());
    gate_->check_no_timeout();
  }

  bool asynchronous() const override { return true; }

  void hold_stream() override { gate_->hold(kernel_stream_.get()); }
  void release_stream() override { gate_->release(); }

  double time_sample(const std::function<void()>& enqueue) override {
    require_unheld("time_sample");
    const cudaStream_t stream = kernel_stream_.get();
    const FlushBuffers& flush = flush_buffers();
    gate_->hold(stream);
    {
      // Everything from the flush to the stop mark is queued before the gate opens, so it runs
      // back to back on the device, with no host latency inside the marks.
      ReleaseOnExit release(*gate_);
      AK_CUDA_CHECK(cuda::launch_cache_flush(stream, flush.lines.data(), flush.lines.size(),
                                             static_cast<uint32_t*>(flush.sink.data()),
                                             info_.multiprocessors));
      AK_CUDA_CHECK(cudaEventRecord(start_.get(), stream));
      enqueue();
      AK_CUDA_CHECK(cudaGetLastError());
      AK_CUDA_CHECK(cudaEventRecord(stop_.get(), stream));
    }
    AK_CUDA_CHECK(cudaEventSynchronize(stop_.get()));
    gate_->check_no_timeout();
    float milliseconds = 0;
    AK_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start_.get(), stop_.get()));
    return static_cast<double>(milliseconds) * 1e-3;
  }

  Ceilings measure_ceilings() override {
    require_unheld("measure_ceilings");
    Ceilings ceilings = cuda::measure_ceilings(kernel_stream_.get(), info_);
    AK_CUDA_CHECK(cudaStreamSynchronize(kernel_stream_.get()));
    return ceilings;
  }

 private:
  struct FlushBuffers {
    explicit FlushBuffers(size_t bytes) : lines(bytes), sink(sizeof(uint32_t)) {}
    DeviceBuffer lines;
    DeviceBuffer sink;
  };

  void require_unheld(const char* what) const {
    if (gate_->held())
      throw Error(ErrorKind::Internal,
                  std::string(what) + ": the kernel stream is held; release_stream() first");
  }

  // Twice the last-level cache, so a pass over it evicts everything a timed kernel could reuse.
  // Allocated and filled on first use, never while the stream is held.
  const FlushBuffers& flush_buffers() {
    if (!flush_) {
      const size_t bytes = std::max<size_t>(2 * info_.l2_bytes, size_t{1} << 20) / 16 * 16;
      flush_.emplace(bytes);
      AK_CUDA_CHECK(cuda::launch_fill_words(kernel_stream_.get(), flush_->lines.data(), bytes, 0x5eed,
                                            info_.multiprocessors));
      AK_CUDA_CHECK(cudaStreamSynchronize(kernel_stream_.get()));
    }
    return *flush_;
  }

  DeviceInfo info_;
  Stream kernel_stream_;
  Stream copy_stream_;
  std::shared_ptr<StreamGate> gate_;
  Event start_;
  Event stop_;
  std::optional<FlushBuffers> flush_;
};

std::string device_count_failure(cudaError_t status) {
  return std::string("no CUDA GPU: cudaGetDeviceCount: ") + cudaGetErrorString(status);
}

}  // namespace

bool cuda_device_present() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // do not leave the failure for an unrelated later check
    return false;
  }
  return count > 0;
}

std::unique_ptr<Runtime> make_cuda_runtime() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(ErrorKind::Unsupported, device_count_failure(status));
  }
  if (count == 0) throw Error(ErrorKind::Unsupported, device_count_failure(cudaErrorNoDevice));
  int device = 0;
  AK_CUDA_CHECK(cudaGetDevice(&device));
  AK_CUDA_CHECK(cudaSetDevice(device));  // creates the primary context now, not inside a timing
  AK_CUDA_CHECK(cuda::preload_device_kernels());
  return std::make_unique<CudaRuntime>(cuda::query_device_info(device));
}

}  // namespace ak
