#include "runtime/host/host_ceilings.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "core/parallel.h"
#include "core/paths.h"

#ifdef AK_WITH_BLAS
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                       const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
                       const float* beta, float* c, const int* ldc);
#endif

namespace ak {
namespace {

template <typename F>
double median_seconds(int repeats, F&& body) {
  std::vector<double> samples;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

double copy_gbps() {
  const size_t bytes = size_t{256} << 20;
  std::vector<char> src(bytes), dst(bytes);
  std::mt19937 rng(7);
  for (size_t i = 0; i < bytes; i += 4096) src[i] = static_cast<char>(rng());  // not zeros, pages touched
  std::memset(dst.data(), 1, bytes);
  const int64_t chunk = 1 << 20;
  auto copy = [&] {
    parallel_for(static_cast<int64_t>(bytes / chunk), [&](int64_t b, int64_t e) {
      std::memcpy(dst.data() + b * chunk, src.data() + b * chunk, static_cast<size_t>((e - b) * chunk));
    });
  };
  copy();
  return 2.0 * static_cast<double>(bytes) / median_seconds(7, copy) / 1e9;
}

#ifdef AK_WITH_BLAS
double sgemm_tflops(int n) {
  std::vector<float> a(static_cast<size_t>(n) * n), b(a.size()), c(a.size());
  std::mt19937 rng(11);
  std::normal_distribution<float> dist;
  for (auto* v : {&a, &b})
    for (float& x : *v) x = dist(rng);
  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&] { sgemm_("N", "N", &n, &n, &n, &one, a.data(), &n, b.data(), &n, &zero, c.data(), &n); };
  gemm();
  return 2.0 * n * static_cast<double>(n) * n / median_seconds(3, gemm) / 1e12;
}
#endif

}  // namespace

Ceilings measure_host_ceilings() {
  Ceilings c;
  c.copy_gbps = copy_gbps();
#ifdef AK_WITH_BLAS
  c.matrix_tflops = sgemm_tflops(1536);
  c.matrix_how = "BLAS sgemm fp32 1536^3";
#else
  c.matrix_how = "not measured: built without BLAS";
#endif
  c.measured_at = utc_timestamp();
  return c;
}

}  // namespace ak
