// Host runtime: aligned heap buffers, synchronous "launches", a last-level-cache flush before
// every timing sample, and ceilings measured with a parallel copy and (when built with it)
// OpenBLAS sgemm.
#include "runtime/host/host_runtime.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "core/paths.h"
#include "runtime/host/host_ceilings.h"

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

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

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
    info_.name = cpu_model();
    info_.id = "host-" + content_hash({info_.name}).substr(0, 12);
    info_.arch = "native";
    info_.multiprocessors = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    info_.memory_bytes =
        static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
    info_.l2_bytes = last_level_cache_bytes();
    info_.driver = "host C++ compiler";
    flush_.resize(2 * info_.l2_bytes / sizeof(uint64_t), 1);
  }

  const DeviceInfo& info() const override { return info_; }
  std::unique_ptr<Buffer> allocate(size_t bytes) override { return std::make_unique<HostBuffer>(bytes); }
  void upload(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void fill(void* dst, std::byte value, size_t bytes) override {
    std::memset(dst, std::to_integer<int>(value), bytes);
  }
  void* stream() override { return nullptr; }
  void synchronize() override {}
  bool asynchronous() const override { return false; }
  void hold_stream() override {}
  void release_stream() override {}

  double time_sample(const std::function<void()>& enqueue) override {
    flush_cache();
    const auto start = std::chrono::steady_clock::now();
    enqueue();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  Ceilings measure_ceilings() override { return measure_host_ceilings(); }

 private:
  // Rewrites a buffer twice the size of the last-level cache, in parallel like the kernels, so
  // the next sample starts with cold caches.
  void flush_cache() {
    ++generation_;
    parallel_for(
        static_cast<int64_t>(flush_.size()),
        [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) flush_[i] += generation_;
        },
        1 << 16);
  }

  DeviceInfo info_;
  std::vector<uint64_t> flush_;
  uint64_t generation_ = 0;
};

}  // namespace

std::unique_ptr<Runtime> make_host_runtime() {
  return std::make_unique<HostRuntime>();
}

}  // namespace ak
