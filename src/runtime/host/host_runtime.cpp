// Host runtime (the judge's side of the CPU as a device): aligned heap buffers for its own
// memory, a sealed memfd for memory shared with the launcher, a last-level-cache flush, and
// ceilings measured with a parallel copy and (when built with it) OpenBLAS sgemm.
#include "runtime/host/host_runtime.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/mix.h"
#include "core/parallel.h"
#include "core/paths.h"
#include "runtime/host/host_ceilings.h"
#include "runtime/host/host_compare.h"

namespace ak {
namespace {

class HostBuffer final : public Buffer {
 public:
  explicit HostBuffer(size_t bytes) : size_(bytes) {
    const size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    data_ = std::aligned_alloc(64, rounded);
    if (!data_) throw Error(ErrorKind::Launch, "aligned_alloc of " + std::to_string(bytes) + " bytes failed");
  }
  ~HostBuffer() override { std::free(data_); }
  void* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* data_;
  size_t size_;
};

// A memfd mapped here and, by its inherited descriptor, in the launcher. Sealed against
// shrinking: a kernel that truncated it would make every later read of the judge fault.
class HostArena final : public SharedArena {
 public:
  explicit HostArena(size_t bytes) : size_(std::max<size_t>(bytes, 4096)) {
    fd_ = ::memfd_create("autokernel-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd_ < 0) throw Error(ErrorKind::Io, std::string("memfd_create: ") + std::strerror(errno));
    if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0 ||
        ::fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
      const std::string why = std::strerror(errno);
      ::close(fd_);
      throw Error(ErrorKind::Io, "sizing the shared arena (" + std::to_string(size_) + " bytes): " + why);
    }
    void* mapped = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (mapped == MAP_FAILED) {
      const std::string why = std::strerror(errno);
      ::close(fd_);
      throw Error(ErrorKind::Io, "mmap of the shared arena: " + why);
    }
    data_ = static_cast<std::byte*>(mapped);
  }
  ~HostArena() override {
    ::munmap(data_, size_);
    ::close(fd_);
  }
  std::byte* data() const override { return data_; }
  size_t size() const override { return size_; }
  std::string handle() const override { return {}; }  // the descriptor's number alone
  int inherited_fd() const override { return fd_; }

 private:
  size_t size_;
  int fd_ = -1;
  std::byte* data_ = nullptr;
};

class HostGather final : public Gather {
 public:
  explicit HostGather(const std::vector<ByteSpan>& spans) { reset(spans); }
  void reset(const std::vector<ByteSpan>& spans) override {
    spans_ = spans;
    size_t total = 0;
    for (const auto& s : spans_) total += s.length;
    bytes_.resize(total);
  }
  const std::vector<std::byte>& read() override {
    std::byte* out = bytes_.data();
    for (const auto& s : spans_) out = std::copy_n(s.address, s.length, out);
    return bytes_;
  }

 private:
  std::vector<ByteSpan> spans_;
  std::vector<std::byte> bytes_;
};

}  // namespace

std::string host_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

namespace {

size_t last_level_cache_bytes() {
  size_t best = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text)) continue;
    size_t value = std::strtoull(text.c_str(), nullptr, 10);
    if (text.back() == 'K') value <<= 10;
    if (text.back() == 'M') value <<= 20;
    best = std::max(best, value);
  }
  return best ? best : size_t{32} << 20;
}

class HostRuntime final : public Runtime {
 public:
  HostRuntime() {
    info_.backend = Backend::Host;
    info_.name = host_cpu_model();
    info_.id = "host-" + content_hash({info_.name}).substr(0, 12);
    info_.arch = "native";
    info_.multiprocessors = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    info_.memory_bytes =
        static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
    info_.l2_bytes = last_level_cache_bytes();
    info_.driver = "host C++ compiler";
  }

  const DeviceInfo& info() const override { return info_; }
  std::unique_ptr<Buffer> allocate(size_t bytes) override { return std::make_unique<HostBuffer>(bytes); }
  std::unique_ptr<SharedArena> share(size_t bytes) override { return std::make_unique<HostArena>(bytes); }
  void upload(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void fill(void* dst, std::byte value, size_t bytes) override {
    std::memset(dst, std::to_integer<int>(value), bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }

  void draw_elements(void* dst, const void* src, size_t element_bytes, size_t count, size_t source_count,
                     uint64_t key) override {
    if (count == 0) return;
    if (source_count == 0 || element_bytes == 0 || element_bytes > 8)
      throw Error(ErrorKind::Internal, "draw_elements: no source or an element size it does not draw");
    auto* out = static_cast<std::byte*>(dst);
    const auto* in = static_cast<const std::byte*>(src);
    // A run of the destination is one piece of the source (drawn_position keeps the offset).
    const uint64_t run = draw_run_elements(element_bytes, source_count);
    const auto runs = static_cast<int64_t>((count + run - 1) / run);
    parallel_for(runs, [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        const uint64_t first = static_cast<uint64_t>(q) * run, n = std::min<uint64_t>(run, count - first);
        std::byte* to = out + first * element_bytes;
        const std::byte* from = in + drawn_position(key, first, source_count, run) * element_bytes;
        if (n * element_bytes == kDrawRunBytes)
          std::memcpy(to, from, kDrawRunBytes);  // a fixed size: inlined, not a call per run
        else
          std::memcpy(to, from, n * element_bytes);
      }
    });
  }

  std::unique_ptr<Gather> prepare_gather(const std::vector<ByteSpan>& spans) override {
    return std::make_unique<HostGather>(spans);
  }

  OutputScan scan_output(const OutputScanJob& job) override { return scan_output_on_host(job); }
  int64_t first_difference(const void* a, const void* b, size_t bytes) override {
    return first_difference_on_host(a, b, bytes);
  }
  int64_t first_byte_not(const void* data, std::byte value, size_t bytes) override {
    return first_byte_not_on_host(data, value, bytes);
  }

  // Reads a buffer twice the size of the last-level cache, in parallel like the kernels.
  void flush_cache() override {
    if (flush_.empty()) flush_.assign(2 * info_.l2_bytes / sizeof(uint64_t), 1);
    std::atomic<uint64_t> sum{0};
    parallel_for(
        static_cast<int64_t>(flush_.size()),
        [&](int64_t b, int64_t e) {
          uint64_t acc = 0;
          for (int64_t i = b; i < e; ++i) acc ^= flush_[static_cast<size_t>(i)];
          sum.fetch_xor(acc, std::memory_order_relaxed);
        },
        1 << 16);
    sink_ = sink_ ^ sum.load();
  }

  Ceilings measure_ceilings() override { return measure_host_ceilings(); }

 private:
  DeviceInfo info_;
  std::vector<uint64_t> flush_;
  volatile uint64_t sink_ = 0;  // keeps the flush's reads from being optimized away
};

}  // namespace

std::unique_ptr<Runtime> make_host_runtime() {
  return std::make_unique<HostRuntime>();
}

}  // namespace ak
