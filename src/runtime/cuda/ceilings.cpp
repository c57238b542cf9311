// The roofline's two ceilings, measured on this device: a large device-to-device copy, counting
// bytes read plus bytes written, and a large cuBLAS matrix product on random fp16 and bf16 data
// (never zeros: they run faster than real data). Each is the median of timed repeats after
// warm-ups, timed with events on the given stream.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_handles.h"
#include "runtime/cuda/cuda_runtime.h"
#include "runtime/cuda/device_kernels.h"

namespace ak::cuda {
namespace {

constexpr int kCopyWarmups = 3;
constexpr int kCopyRepeats = 20;
constexpr int kMatrixWarmups = 3;
constexpr int kMatrixRepeats = 10;
constexpr size_t kMaxCopyBytes = size_t{1} << 30;

// Median milliseconds of `repeats` runs of `work`, each between its own pair of events.
double median_ms(cudaStream_t stream, int warmups, int repeats, const std::function<void()>& work) {
  for (int i = 0; i < warmups; ++i) work();
  std::vector<Event> starts(repeats), stops(repeats);
  for (int i = 0; i < repeats; ++i) {
    AK_CUDA_CHECK(cudaEventRecord(starts[i].get(), stream));
    work();
    AK_CUDA_CHECK(cudaEventRecord(stops[i].get(), stream));
  }
  AK_CUDA_CHECK(cudaEventSynchronize(stops.back().get()));
  std::vector<double> ms(repeats);
  for (int i = 0; i < repeats; ++i) {
    float elapsed = 0;
    AK_CUDA_CHECK(cudaEventElapsedTime(&elapsed, starts[i].get(), stops[i].get()));
    ms[i] = elapsed;
  }
  std::nth_element(ms.begin(), ms.begin() + repeats / 2, ms.end());
  return ms[repeats / 2];
}

double measure_copy_gbps(cudaStream_t stream, const DeviceInfo& info) {
  const size_t bytes = std::min(kMaxCopyBytes, info.memory_bytes / 8) / (1 << 20) * (1 << 20);
  DeviceBuffer source(bytes), destination(bytes);
  AK_CUDA_CHECK(launch_fill_words(stream, source.data(), bytes, 0xc0b1, info.multiprocessors));
  const double ms = median_ms(stream, kCopyWarmups, kCopyRepeats, [&] {
    AK_CUDA_CHECK(
        cudaMemcpyAsync(destination.data(), source.data(), bytes, cudaMemcpyDeviceToDevice, stream));
  });
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

// The largest n of 8192, 4096, 2048, 1024 whose three n x n 16-bit matrices take at most half
// of the free memory.
int matrix_size() {
  size_t free_bytes = 0, total_bytes = 0;
  AK_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  for (int n : {8192, 4096, 2048})
    if (3 * size_t{2} * n * n <= free_bytes / 2) return n;
  return 1024;
}

struct MatrixRate {
  double tflops = 0;
  std::string how;
};

MatrixRate measure_matrix(cudaStream_t stream, const DeviceInfo& info) {
  const int n = matrix_size();
  const size_t count = size_t{1} * n * n;
  DeviceBuffer a(2 * count), b(2 * count), c(2 * count);
  CublasHandle handle;
  AK_CUDA_CHECK(cublasSetStream(handle.get(), stream));
  const float alpha = 1.0f, beta = 0.0f;

  MatrixRate best;
  const struct {
    HalfKind kind;
    cudaDataType type;
    const char* name;
  } variants[] = {{HalfKind::F16, CUDA_R_16F, "fp16"}, {HalfKind::BF16, CUDA_R_16BF, "bf16"}};
  for (const auto& v : variants) {
    AK_CUDA_CHECK(launch_fill_uniform(stream, a.data(), count, v.kind, 0xa11ce, info.multiprocessors));
    AK_CUDA_CHECK(launch_fill_uniform(stream, b.data(), count, v.kind, 0xb0b, info.multiprocessors));
    const double ms = median_ms(stream, kMatrixWarmups, kMatrixRepeats, [&] {
      AK_CUDA_CHECK(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.data(), v.type, n,
                                 b.data(), v.type, n, &beta, c.data(), v.type, n, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT));
    });
    const double tflops = 2.0 * n * static_cast<double>(n) * n / (ms * 1e-3) / 1e12;
    if (tflops > best.tflops)
      best = {tflops, std::string("cuBLAS ") + v.name + " " + std::to_string(n) + "^3"};
  }
  // The handle and buffers go away next; let the products finish first.
  AK_CUDA_CHECK(cudaStreamSynchronize(stream));
  return best;
}

std::string iso_utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

Ceilings measure_ceilings(cudaStream_t stream, const DeviceInfo& info) {
  Ceilings ceilings;
  ceilings.copy_gbps = measure_copy_gbps(stream, info);
  const MatrixRate matrix = measure_matrix(stream, info);
  ceilings.matrix_tflops = matrix.tflops;
  ceilings.matrix_how = matrix.how;
  ceilings.measured_at = iso_utc_now();
  return ceilings;
}

}  // namespace ak::cuda
