// Split-K for the matrix products of kernels/cuda/matmul.cu (fp32's FFMA paths in
// cuda_gemm_fp32.cuh, fp16/bf16's wgmma in cuda_gemm_sm90.cuh): K is cut into contiguous chunks,
// each computed by its own blocks into a float workspace, and sum_splits adds the chunks' partial
// sums in split order 0, 1, 2, ... and rounds each output once into C. No atomics: repeated runs
// are bitwise equal.
//   choose_splits          how many chunks, from the blocks one split gives against a wave
//   sum_splits<T>          the second kernel
//   with_split_workspace   a stream-ordered workspace around the first kernel and sum_splits
// C++17, header-only.
#pragma once

#include <algorithm>

#include "autokernel/cuda_gemm.cuh"

namespace ak_gemm {

constexpr int64_t kMaxSplits = 1024;
constexpr int64_t kMaxWorkspaceBytes = int64_t{256} << 20;
constexpr int kSumThreads = 256;

// c[row, col] = sum over s of ws[s * slice + row * ldw + col], s in increasing order, rounded once.
template <typename T>
__global__ void __launch_bounds__(kSumThreads)
    sum_splits(const float* ws, int splits, int64_t slice, int64_t ldw, int m, int n, T* c, int64_t ldc) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * kSumThreads + threadIdx.x;
  if (e >= static_cast<int64_t>(m) * n) return;
  const int64_t row = e / n, col = e % n;
  const float* p = ws + row * ldw + col;
  float sum = p[0];
  for (int s = 1; s < splits; ++s) sum += p[s * slice];
  c[row * ldc + col] = from_float<T>(sum);
}

struct Splits {
  int count, chunk;  // chunk: K elements (or k-tiles) per split, a multiple of the granule
};

// `blocks`: blocks of one split; `target`: blocks worth launching to fill the device; `min_k`:
// the fewest K elements that pay for a split's partial sums; `max_chain`: the most K elements one
// split sums (accuracy; overrides min_k); `slice`: workspace floats per split; `forced`: the
// caller's count, 0 to choose. Every split gets at least one granule: none is empty.
inline Splits choose_splits(int k, int64_t blocks, int64_t target, int min_k, int max_chain, int granule,
                            int64_t slice, int forced) {
  int64_t count = forced;
  if (forced <= 0) {
    // Whole waves only: a partial last wave costs as much as a full one.
    const int64_t fill =
        std::min<int64_t>(blocks * 2 <= target ? target / blocks : 1, std::max(1, k / min_k));
    count = std::max<int64_t>(fill, (k + int64_t{max_chain} - 1) / max_chain);
  }
  count = std::min(count, kMaxSplits);
  count = std::min(count,
                   std::max<int64_t>(1, kMaxWorkspaceBytes / (slice * static_cast<int64_t>(sizeof(float)))));
  const int64_t per = (k + count - 1) / count;
  const int64_t chunk = (per + granule - 1) / granule * granule;
  return {static_cast<int>((k + chunk - 1) / chunk), static_cast<int>(chunk)};
}

// launch(ws) writes split s's partial sums at ws + s * slice (rows of ldw floats); then
// sum_splits folds them into C. The workspace comes from the stream-ordered pool and goes back
// after sum_splits has read it. AK_ERR_LAUNCH when it cannot be had.
template <typename T, class Launch>
int with_split_workspace(int splits, int64_t slice, int64_t ldw, int m, int n, T* c, int64_t ldc,
                         cudaStream_t stream, Launch&& launch) {
  const size_t bytes = static_cast<size_t>(splits) * slice * sizeof(float);
  return ak_cuda::with_workspace(bytes, stream, [&](void* ws) {
    float* w = static_cast<float*>(ws);
    const int rc = launch(w);
    if (rc != AK_OK) return rc;
    const int64_t blocks = (static_cast<int64_t>(m) * n + kSumThreads - 1) / kSumThreads;
    sum_splits<T>
        <<<static_cast<unsigned>(blocks), kSumThreads, 0, stream>>>(w, splits, slice, ldw, m, n, c, ldc);
    return ak_cuda::check_launch();
  });
}

}  // namespace ak_gemm
