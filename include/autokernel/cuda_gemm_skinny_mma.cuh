// Skinny products on the tensor cores (cuda_gemm_skinny.cuh's NK path for M > SKINNY_SIMT_MAX_M):
// C[M, N] = A[M, K] W[N, K]^T for M = 1..64, fp16/bf16, computed as C^T = W A^T with mma.m16n8k16,
// W's rows as the 16-row operand and A's rows as 8-column ones (one to eight). On CUDA cores
// each element of W costs M multiply-adds plus an unpack of A, so from a few rows on the SM runs
// out of FMA issue before HBM runs out of bytes; here one mma covers 16 x 8 x 16.
//
// No shared memory on the way in: a dot product may take K in any order as long as both operands
// take the same one, so within each 32 k the fragments' k are permuted such that a lane's 16-byte
// load of a row (8 consecutive k) is exactly its part of two mma steps, for W and for A alike
// (permuted_fragments below). W is read once, in 16-byte loads that do not allocate in L1.
//
// A block owns 16 rows of W (16 columns of C); its 8 warps take turns over 128-k steps (64 at eight
// operands) of the block's K range, and their 16 x 16 sums are added in shared memory in warp order. K cut
// into splits (grid.y) as on CUDA cores. Repeated runs are bitwise equal. C++17, header-only; included by
// cuda_gemm_skinny.cuh.
#pragma once

#include "autokernel/cuda_gemm.cuh"
#include "autokernel/cuda_gemm_skinny_common.cuh"

namespace ak_gemm::skinny {

constexpr int kMmaRows = 16;     // rows of W per block
constexpr int kMaxMmaCols = 64;  // rows of A: up to eight 8-column mma operands

// 32-k steps of W a warp loads before its mma: 4, or 2 at eight operands (registers).
template <int NT>
constexpr int kMmaSteps = NT >= 8 ? 2 : 4;

// The mma fragments of 16 rows x 32 k, s = 0, 1 the two k16 steps, from 16-byte loads: `lo` of
// row g = lane / 4, `hi` of row g + 8, `x` of A's row g, each at k = 8 (lane % 4) of the 32. Logical
// k c of step s is physical k 8 (c % 8 / 2) + 4 s + 2 (c / 8) + c % 2 for both operands.
__device__ __forceinline__ void permuted_fragments(const uint4& lo, const uint4& hi, const uint4& x, int s,
                                                   uint32_t (&a)[4], uint32_t (&b)[2]) {
  a[0] = s == 0 ? lo.x : lo.z;
  a[1] = s == 0 ? hi.x : hi.z;
  a[2] = s == 0 ? lo.y : lo.w;
  a[3] = s == 0 ? hi.y : hi.w;
  b[0] = s == 0 ? x.x : x.z;
  b[1] = s == 0 ? x.y : x.w;
}

// NT: 8-column operands of A (1 for M <= 8, 2 up to 16, 4 up to 32, 8 up to 64). Registers are
// capped for two blocks an SM: with one (139 registers at NT = 4), 8 warps' loads of W in flight
// did not cover HBM's latency (H100, 32 x 4096 x 4096: 25.5 us against 21.6 with two).
template <typename T, int NT>
__global__ void __launch_bounds__(kThreads, 2)
    mma_nk_kernel(const T* a, int64_t lda, const T* w, int64_t ldw, int m, int n, int k, int chunk, T* c,
                  int64_t ldc, float* ws) {
  constexpr int S = kMmaSteps<NT>, kStepK = 32 * S;
  __shared__ float sums[kWarps][kMmaRows][8 * NT];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, tig = lane % 4;
  const int row0 = blockIdx.x * kMmaRows;
  const T* w_lo = w + static_cast<int64_t>(min(row0 + g, n - 1)) * ldw;  // rows past N: read, never stored
  const T* w_hi = w + static_cast<int64_t>(min(row0 + g + 8, n - 1)) * ldw;
  const int k_begin = blockIdx.y * chunk, k_end = min(k, k_begin + chunk);
  float acc[NT][4] = {};
#pragma unroll 1
  for (int k0 = k_begin + warp * kStepK; k0 < k_end; k0 += kWarps * kStepK) {
    // W's loads for all S steps first (HBM: the long wait), A's (L2) a step at a time.
    uint4 lo[S], hi[S];
#pragma unroll
    for (int u = 0; u < S; ++u) {
      const int kk = k0 + u * 32 + tig * 8;  // K is a multiple of 8: 8 k are all in or all out
      lo[u] = kk < k_end ? load_streaming(w_lo + kk) : uint4{};
      hi[u] = kk < k_end ? load_streaming(w_hi + kk) : uint4{};
    }
#pragma unroll
    for (int u = 0; u < S; ++u) {
      const int kk = k0 + u * 32 + tig * 8;
      uint4 x[NT];
#pragma unroll
      for (int t = 0; t < NT; ++t)
        x[t] = kk < k_end && g + 8 * t < m ? __ldg(reinterpret_cast<const uint4*>(a + (g + 8 * t) * lda + kk))
                                           : uint4{};
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          uint32_t fa[4], fb[2];
          permuted_fragments(lo[u], hi[u], x[t], s, fa, fb);
          mma_16816<T>(acc[t], fa, fb);
        }
    }
  }
  // acc[t]: rows g and g + 8 of W, columns 8 t + 2 tig + {0, 1} of A.
#pragma unroll
  for (int t = 0; t < NT; ++t)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      sums[warp][g][8 * t + 2 * tig + j] = acc[t][j];
      sums[warp][g + 8][8 * t + 2 * tig + j] = acc[t][2 + j];
    }
  __syncthreads();
  // One output a thread, in up to four rounds at NT = 8.
#pragma unroll
  for (int e = threadIdx.x; e < kMmaRows * 8 * NT; e += kThreads) {
    const int r = e % kMmaRows, i = e / kMmaRows;
    if (i < m && row0 + r < n) {
      float sum = sums[0][r][i];
#pragma unroll
      for (int v = 1; v < kWarps; ++v) sum += sums[v][r][i];
      put(sum, i, row0 + r, n, c, ldc, ws, static_cast<int64_t>(m) * n);
    }
  }
}

}  // namespace ak_gemm::skinny
