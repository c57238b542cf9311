// The CUDA runtime (the judge's side) and launch device (the launcher's) on a real GPU (label
// gpu). Every test skips when no GPU answers. Test kernels are PTX loaded through the runtime
// API, so this file needs only the host compiler.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/mix.h"
#include "runtime/cuda/cuda_arena.h"
#include "runtime/cuda/cuda_runtime.h"

namespace ak {
namespace {

// spin_ns(duration): one thread waits `duration` ns of GPU time. store_one(address): writes 1
// there, so a bad address faults.
constexpr char kTestPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64

.visible .entry spin_ns(.param .u64 duration)
{
  .reg .u64 %rd<5>;
  .reg .pred %p;
  ld.param.u64 %rd1, [duration];
  mov.u64 %rd2, %globaltimer;
WAIT:
  mov.u64 %rd3, %globaltimer;
  sub.u64 %rd4, %rd3, %rd2;
  setp.lt.u64 %p, %rd4, %rd1;
  @%p bra WAIT;
  ret;
}

.visible .entry store_one(.param .u64 address)
{
  .reg .u64 %rd1;
  .reg .u32 %r1;
  ld.param.u64 %rd1, [address];
  mov.u32 %r1, 1;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

#define ASSERT_CUDA(call) \
  ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(cudaGetLastError())

class TestKernels {
 public:
  TestKernels() {
    status_ = cudaLibraryLoadData(&library_, kTestPtx, nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (status_ == cudaSuccess) status_ = cudaLibraryGetKernel(&spin_, library_, "spin_ns");
    if (status_ == cudaSuccess) status_ = cudaLibraryGetKernel(&store_, library_, "store_one");
  }
  ~TestKernels() {
    if (library_) (void)cudaLibraryUnload(library_);
  }
  cudaError_t status() const { return status_; }

  cudaError_t spin(void* stream, uint64_t nanoseconds) const {
    void* args[] = {&nanoseconds};
    return cudaLaunchKernel(reinterpret_cast<const void*>(spin_), dim3(1), dim3(1), args, 0,
                            static_cast<cudaStream_t>(stream));
  }
  cudaError_t store(void* stream, uintptr_t address) const {
    void* args[] = {&address};
    return cudaLaunchKernel(reinterpret_cast<const void*>(store_), dim3(1), dim3(1), args, 0,
                            static_cast<cudaStream_t>(stream));
  }

 private:
  cudaError_t status_ = cudaSuccess;
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t spin_ = nullptr;
  cudaKernel_t store_ = nullptr;
};

class CudaRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
    runtime_ = make_cuda_runtime();
  }
  std::unique_ptr<Runtime> runtime_;
};

std::vector<unsigned char> pattern(size_t bytes) {
  std::vector<unsigned char> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<unsigned char>(1 + (i * 131 + i / 251) % 255);
  return data;
}

TEST(CudaArch, NamesArchSpecificTargetsOnlyFor90And100) {
  EXPECT_EQ(cuda::arch_name(9, 0), "sm_90a");
  EXPECT_EQ(cuda::arch_name(10, 0), "sm_100a");
  EXPECT_EQ(cuda::arch_name(8, 0), "sm_80");
  EXPECT_EQ(cuda::arch_name(8, 9), "sm_89");
  EXPECT_EQ(cuda::arch_name(12, 0), "sm_120");
}

TEST_F(CudaRuntimeTest, DescribesTheDevice) {
  const DeviceInfo& info = runtime_->info();
  EXPECT_EQ(info.backend, Backend::Cuda);
  EXPECT_FALSE(info.name.empty());
  EXPECT_EQ(info.id.rfind("GPU-", 0), 0u) << info.id;
  EXPECT_EQ(info.id.size(), 40u) << info.id;
  EXPECT_EQ(info.arch.rfind("sm_", 0), 0u) << info.arch;
  EXPECT_GT(info.multiprocessors, 0);
  EXPECT_GT(info.memory_bytes, size_t{1} << 30);
  EXPECT_GT(info.l2_bytes, 0u);
  EXPECT_GE(info.shared_memory_per_block, size_t{48} << 10);
  EXPECT_NE(info.driver.find("runtime"), std::string::npos) << info.driver;
}

TEST_F(CudaRuntimeTest, UploadAndDownloadRoundTrip) {
  const size_t bytes = (size_t{1} << 20) + 3;
  const std::vector<unsigned char> sent = pattern(bytes);
  auto buffer = runtime_->allocate(bytes);
  ASSERT_EQ(buffer->size(), bytes);
  runtime_->upload(buffer->data(), sent.data(), bytes);
  std::vector<unsigned char> received(bytes, 0);
  runtime_->download(received.data(), buffer->data(), bytes);
  EXPECT_EQ(received, sent);
}

// The judge rebuilds a drawn element on the host (drawn_inputs.h): the device must draw exactly
// the element the host formula names, for every element size, with runs and one by one.
TEST_F(CudaRuntimeTest, DrawElementsTakesTheElementsTheHostFormulaNamesAndGatherReadsSpans) {
  const std::vector<unsigned char> source = pattern(4096 + 8);
  auto src = runtime_->allocate(source.size()), dst = runtime_->allocate(source.size());
  runtime_->upload(src->data(), source.data(), source.size());
  std::vector<unsigned char> got(source.size());
  for (const size_t element : {1u, 2u, 4u, 8u})
    for (const size_t source_count : {size_t{1}, size_t{3}, source.size() / element}) {
      const size_t count = source.size() / element;
      const uint64_t key = 0x1234567 + element * 31 + source_count;
      runtime_->draw_elements(dst->data(), src->data(), element, count, source_count, key);
      runtime_->download(got.data(), dst->data(), count * element);
      const uint64_t run = draw_run_elements(element, source_count);
      for (size_t i = 0; i < count; ++i) {
        const uint64_t from = drawn_position(key, i, source_count, run);
        ASSERT_LT(from, source_count);
        ASSERT_TRUE(std::equal(got.begin() + i * element, got.begin() + (i + 1) * element,
                               source.begin() + from * element))
            << "element " << i << " of size " << element << " from " << source_count;
      }
    }

  const auto* base = static_cast<const std::byte*>(dst->data());
  auto gather = runtime_->prepare_gather({{base + 1, 2}, {base + 100, 4}, {base + 239, 1}});
  const std::vector<std::byte>& bytes = gather->read();
  ASSERT_EQ(bytes.size(), 7u);
  EXPECT_EQ(std::to_integer<unsigned char>(bytes[0]), got[1]);
  EXPECT_EQ(std::to_integer<unsigned char>(bytes[2]), got[100]);
  EXPECT_EQ(std::to_integer<unsigned char>(bytes[6]), got[239]);
}

// The default arena is cuMemCreate memory passed as a descriptor (on any GPU with VMM): a second
// mapping made from that descriptor, as the launcher makes it, sees the judge's bytes.
TEST_F(CudaRuntimeTest, SharedArenaIsVmmMemoryThatAMappingOfItsDescriptorSees) {
  auto arena = runtime_->share(size_t{1} << 20);
  EXPECT_GE(arena->size(), size_t{1} << 20);
  ASSERT_EQ(arena->handle(), std::string(cuda::kVmmPrefix));
  ASSERT_GE(arena->inherited_fd(), 0);
  std::vector<unsigned char> sent(4096), received(4096);
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<unsigned char>(i * 7 + 3);
  runtime_->upload(arena->data() + 8192, sent.data(), sent.size());
  const cuda::ArenaMapping mapping(arena->handle() + std::to_string(::dup(arena->inherited_fd())),
                                   arena->size(), cuda_current_device());
  ASSERT_NE(mapping.data(), static_cast<void*>(arena->data()));
  runtime_->download(received.data(), static_cast<std::byte*>(mapping.data()) + 8192, received.size());
  EXPECT_EQ(received, sent);
}

// AUTOKERNEL_ARENA=ipc: a cudaMalloc exported through CUDA IPC, its handle as hex; another value
// is a usage error.
TEST_F(CudaRuntimeTest, SharedArenaThroughCudaIpcWhenAsked) {
  ::setenv("AUTOKERNEL_ARENA", "ipc", 1);
  auto arena = runtime_->share(size_t{1} << 20);
  ::setenv("AUTOKERNEL_ARENA", "shm", 1);
  EXPECT_THROW(runtime_->share(size_t{1} << 20), Error);
  ::unsetenv("AUTOKERNEL_ARENA");
  EXPECT_EQ(arena->handle().size(), 2 * sizeof(cudaIpcMemHandle_t));
  EXPECT_EQ(arena->inherited_fd(), -1);
  std::vector<unsigned char> back(sizeof(cudaIpcMemHandle_t));
  cuda::from_hex(arena->handle(), back.data(), back.size());
  EXPECT_EQ(cuda::to_hex(back.data(), back.size()), arena->handle());
  EXPECT_THROW(cuda::from_hex("zz", back.data(), 1), Error);
}

class CudaLaunchDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
    runtime_ = make_cuda_runtime();
    device_ = make_cuda_launch_device(cuda_current_device());
    device_->prepare_for_sandbox();
  }
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<LaunchDevice> device_;
};

TEST_F(CudaLaunchDeviceTest, HeldStreamRunsNothingUntilReleased) {
  EXPECT_TRUE(device_->asynchronous());
  EXPECT_NE(device_->stream(), nullptr);
  const size_t bytes = size_t{4} << 20;
  auto buffer = runtime_->allocate(bytes);
  const std::vector<unsigned char> before(bytes, 0xab);
  runtime_->upload(buffer->data(), before.data(), bytes);
  // A first memset outside the hold, as the harness warms every kernel up before holding.
  ASSERT_CUDA(cudaMemsetAsync(buffer->data(), 0xab, bytes, static_cast<cudaStream_t>(device_->stream())));
  device_->synchronize();

  device_->hold_stream();
  ASSERT_CUDA(cudaMemsetAsync(buffer->data(), 0x5c, bytes, static_cast<cudaStream_t>(device_->stream())));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::vector<unsigned char> seen(bytes, 0);
  runtime_->download(seen.data(), buffer->data(), bytes);
  EXPECT_EQ(seen, before) << "the memset ran while the stream was held";
  EXPECT_THROW(device_->synchronize(), Error) << "synchronize() while held must refuse, not wait";
  device_->release_stream();
  device_->synchronize();
  runtime_->download(seen.data(), buffer->data(), bytes);
  EXPECT_EQ(seen, std::vector<unsigned char>(bytes, 0x5c));
}

TEST_F(CudaRuntimeTest, CeilingsAreMeasured) {
  const Ceilings c = runtime_->measure_ceilings();
  EXPECT_GT(c.copy_gbps, 10.0);
  EXPECT_LT(c.copy_gbps, 100'000.0);
  EXPECT_GT(c.matrix_tflops, 0.1);
  EXPECT_EQ(c.matrix_how.rfind("cuBLAS ", 0), 0u) << c.matrix_how;
  ASSERT_FALSE(c.measured_at.empty());
  EXPECT_EQ(c.measured_at.back(), 'Z') << c.measured_at;
}

// Exits 42 when synchronize() reports the fault of `store_one(0x10)` as Error(Crash).
[[noreturn]] void fault_and_exit() {
  auto device = make_cuda_launch_device(cuda_current_device());
  TestKernels kernels;
  if (kernels.status() != cudaSuccess || kernels.store(device->stream(), 0x10) != cudaSuccess) std::_Exit(2);
  try {
    device->synchronize();
  } catch (const Error& e) {
    std::_Exit(e.kind() == ErrorKind::Crash ? 42 : 3);
  }
  std::_Exit(4);
}

TEST(CudaRuntimeDeathTest, DeviceFaultIsACrash) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
  // A fault poisons the whole context, so it happens in a fresh process ("threadsafe" re-runs
  // this test alone in a new executable instead of forking a process that holds a context).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fault_and_exit(), ::testing::ExitedWithCode(42), "");
}

}  // namespace
}  // namespace ak
