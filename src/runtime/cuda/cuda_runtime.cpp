// The judge's side of the CUDA backend: memory it owns or shares (CUDA IPC), copies on a stream
// of its own, the device kernels it needs to lay out fresh inputs and read sampled outputs, the
// L2 flush, and the ceilings. It never loads a kernel module.
#include "runtime/cuda/cuda_runtime.h"

#include <algorithm>
#include <optional>
#include <string>

#include "core/error.h"
#include "runtime/cuda/compare_kernels.h"
#include "runtime/cuda/cuda_arena.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_handles.h"
#include "runtime/cuda/device_kernels.h"

namespace ak {
namespace {

using cuda::DeviceBuffer;
using cuda::MappedHostMemory;
using cuda::Stream;

class CudaBuffer final : public Buffer {
 public:
  explicit CudaBuffer(size_t bytes) : memory_(bytes) {}
  void* data() const override { return memory_.data(); }
  size_t size() const override { return memory_.size(); }

 private:
  DeviceBuffer memory_;
};

// The span table in device memory, written once per set of spans; each read is one kernel
// writing straight into mapped host memory, then one wait.
class CudaGather final : public Gather {
 public:
  CudaGather(const std::vector<ByteSpan>& spans, cudaStream_t stream, int multiprocessors)
      : stream_(stream), multiprocessors_(multiprocessors) {
    reset(spans);
  }

  void reset(const std::vector<ByteSpan>& spans) override {
    std::vector<cuda::GatherSpan> table;
    uint32_t offset = 0;
    for (const auto& s : spans) {
      table.push_back({reinterpret_cast<const unsigned char*>(s.address), s.length, offset});
      offset += s.length;
    }
    count_ = table.size();
    bytes_.resize(offset);
    const size_t table_bytes = std::max<size_t>(1, table.size()) * sizeof(cuda::GatherSpan);
    if (!table_ || table_->size() < table_bytes) table_.emplace(table_bytes);
    if (!out_ || out_capacity_ < offset) {
      out_.reset();
      out_.emplace(std::max<size_t>(1, offset));
      out_capacity_ = std::max<size_t>(1, offset);
    }
    if (!table.empty()) {
      AK_CUDA_CHECK(cudaMemcpyAsync(table_->data(), table.data(), table.size() * sizeof(cuda::GatherSpan),
                                    cudaMemcpyHostToDevice, stream_));
      AK_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
  }

  const std::vector<std::byte>& read() override {
    AK_CUDA_CHECK(cuda::launch_gather(stream_, static_cast<const cuda::GatherSpan*>(table_->data()), count_,
                                      static_cast<unsigned char*>(out_->device()), multiprocessors_));
    AK_CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::copy_n(static_cast<const std::byte*>(out_->host()), bytes_.size(), bytes_.data());
    return bytes_;
  }

 private:
  cudaStream_t stream_;
  int multiprocessors_;
  size_t count_ = 0;
  std::optional<DeviceBuffer> table_;
  std::optional<MappedHostMemory> out_;
  size_t out_capacity_ = 0;
  std::vector<std::byte> bytes_;
};

class CudaRuntime final : public Runtime {
 public:
  explicit CudaRuntime(DeviceInfo info) : info_(std::move(info)) {}

  ~CudaRuntime() override { (void)cudaStreamSynchronize(stream_.get()); }

  const DeviceInfo& info() const override { return info_; }
  std::unique_ptr<Buffer> allocate(size_t bytes) override { return std::make_unique<CudaBuffer>(bytes); }
  std::unique_ptr<SharedArena> share(size_t bytes) override {
    return cuda::make_arena(bytes, cuda_current_device());
  }

  void upload(void* device_dst, const void* host_src, size_t bytes) override {
    if (bytes == 0) return;
    AK_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream_.get()));
    AK_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  void download(void* host_dst, const void* device_src, size_t bytes) override {
    if (bytes == 0) return;
    AK_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream_.get()));
    AK_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  void fill(void* device_dst, std::byte value, size_t bytes) override {
    if (bytes == 0) return;
    AK_CUDA_CHECK(cudaMemsetAsync(device_dst, std::to_integer<int>(value), bytes, stream_.get()));
    AK_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  void copy(void* device_dst, const void* device_src, size_t bytes) override {
    if (bytes == 0) return;
    AK_CUDA_CHECK(cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, stream_.get()));
    AK_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  void draw_elements(void* device_dst, const void* device_src, size_t element_bytes, size_t count,
                     size_t source_count, uint64_t key) override {
    AK_CUDA_CHECK(cuda::launch_draw_elements(stream_.get(), device_dst, device_src, element_bytes, count,
                                             source_count, key, info_.multiprocessors));
    AK_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  std::unique_ptr<Gather> prepare_gather(const std::vector<ByteSpan>& spans) override {
    return std::make_unique<CudaGather>(spans, stream_.get(), info_.multiprocessors);
  }

  OutputScan scan_output(const OutputScanJob& job) override {
    AK_CUDA_CHECK(cuda::launch_scan_output(stream_.get(), job, static_cast<unsigned>(size_of(job.dtype)),
                                           compare_parts<OutputScan>().device, info_.multiprocessors));
    AK_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    OutputScan scan;
    for (const OutputScan *p = compare_parts<OutputScan>().host, *end = p + compare_blocks(); p != end; ++p)
      merge_scan(scan, *p);
    return scan;
  }

  int64_t first_difference(const void* a, const void* b, size_t bytes) override {
    return first_mismatch(a, b, std::byte{0}, bytes);
  }

  int64_t first_byte_not(const void* data, std::byte value, size_t bytes) override {
    return first_mismatch(data, nullptr, value, bytes);
  }

  void flush_cache() override {
    // Lines a kernel marked persisting (an access-policy window) survive ordinary reads: make them
    // ordinary first, so that the flush evicts them too. L2 is one for every context on the GPU.
    AK_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
    const FlushBuffers& flush = flush_buffers();
    AK_CUDA_CHECK(cuda::launch_cache_flush(stream_.get(), flush.lines.data(), flush.lines.size(),
                                           static_cast<uint32_t*>(flush.sink.data()), info_.multiprocessors));
    AK_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  Ceilings measure_ceilings() override {
    Ceilings ceilings = cuda::measure_ceilings(stream_.get(), info_);
    AK_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    return ceilings;
  }

 private:
  struct FlushBuffers {
    explicit FlushBuffers(size_t bytes) : lines(bytes), sink(sizeof(uint32_t)) {}
    DeviceBuffer lines;
    DeviceBuffer sink;
  };

  // Twice the last-level cache, so a pass over it evicts everything a timed kernel could reuse.
  const FlushBuffers& flush_buffers() {
    if (!flush_) {
      const size_t bytes = std::max<size_t>(2 * info_.l2_bytes, size_t{1} << 20) / 16 * 16;
      flush_.emplace(bytes);
      AK_CUDA_CHECK(
          cuda::launch_fill_words(stream_.get(), flush_->lines.data(), bytes, 0x5eed, info_.multiprocessors));
      AK_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    }
    return *flush_;
  }

  unsigned compare_blocks() const { return cuda::compare_blocks(info_.multiprocessors); }

  // Where the comparison kernels write one partial per block: mapped host memory, read after the
  // stream's wait without a copy. Sized once for the largest partial.
  template <class Part>
  struct Parts {
    Part* device;
    const Part* host;
  };
  template <class Part>
  Parts<Part> compare_parts() {
    static_assert(sizeof(Part) <= sizeof(OutputScan));
    if (!compare_parts_) compare_parts_.emplace(compare_blocks() * sizeof(OutputScan));
    return {static_cast<Part*>(compare_parts_->device()), static_cast<const Part*>(compare_parts_->host())};
  }

  int64_t first_mismatch(const void* a, const void* b, std::byte value, size_t bytes) {
    if (bytes == 0) return -1;
    const auto parts = compare_parts<int64_t>();
    AK_CUDA_CHECK(cuda::launch_first_mismatch(stream_.get(), a, b, std::to_integer<unsigned char>(value),
                                              bytes, parts.device, info_.multiprocessors));
    AK_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    int64_t found = -1;
    for (unsigned block = 0; block < compare_blocks(); ++block)
      found = lowest_index(found, parts.host[block]);
    return found;
  }

  DeviceInfo info_;
  Stream stream_;
  std::optional<FlushBuffers> flush_;
  std::optional<MappedHostMemory> compare_parts_;
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

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

std::string cuda_device_name(int ordinal) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, ordinal) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  return prop.name;
}

std::string cuda_device_uuid(int ordinal) {
  cudaDeviceProp prop{};
  AK_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  return cuda::format_uuid(prop.uuid);
}

int cuda_current_device() {
  int device = 0;
  AK_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

std::unique_ptr<Runtime> make_cuda_runtime() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(ErrorKind::Unsupported, device_count_failure(status));
  }
  if (count == 0) throw Error(ErrorKind::Unsupported, device_count_failure(cudaErrorNoDevice));
  const int device = cuda_current_device();
  AK_CUDA_CHECK(cudaSetDevice(device));  // creates the primary context now, not inside a timing
  AK_CUDA_CHECK(cuda::preload_device_kernels());
  AK_CUDA_CHECK(cuda::preload_compare_kernels());
  return std::make_unique<CudaRuntime>(cuda::query_device_info(device));
}

}  // namespace ak
