// Skinny products on the tensor cores through shared memory (cuda_gemm_skinny.cuh's NK path with
// SKINNY_STAGED = 1, for 17 to 64 rows of A): C[M, N] = A[M, K] W[N, K]^T, fp16/bf16, as C^T = W A^T
// with mma.m16n8k16 like cuda_gemm_skinny_mma.cuh, but with W's and A's tiles staged by cp.async.
//
// Why a second form: in the register form a block owns 16 rows of W and reads all of A's rows
// over its K range, so A's reads from L2 are M / 16 times W's bytes (twice at M = 32), and W's
// loads in flight cost registers. Here a block owns 64 rows of W: its 8 warps share each stage of
// A (A's reads fall to M / 64 of W's), and the ring of stages keeps W's copies in flight without
// registers.
//
// A block: 64 rows of W (four groups of 16, one per warp of each half), K in stages of 128 k
// (kStagedK), a ring of kStagedRing<NT> stages (W 64 x 128 and A 8 NT x 128 each, in the XOR
// swizzle of swizzled<128>); warps 0-3 take k 0-63 of each stage, warps 4-7 k 64-127, and the
// second half's sums are added to the first's in shared memory (a fixed order: repeated runs are
// bitwise equal). K cut into splits (grid.y) as the other skinny kernels. Rows of W past N read as
// zeros and are never stored. C++17, header-only; included by cuda_gemm_skinny.cuh.
#pragma once

#include "autokernel/cuda_gemm.cuh"
#include "autokernel/cuda_gemm_skinny_common.cuh"

namespace ak_gemm::skinny {

constexpr int kStagedRows = 64;  // rows of W per block
constexpr int kStagedK = 128;    // k per stage

// Stages in the ring: four at up to 32 rows of A (96 KB), three at 64 (96 KB), so that two blocks
// fit an SM.
template <int NT>
constexpr int kStagedRing = NT >= 8 ? 3 : 4;

template <int NT>
constexpr int staged_smem_bytes() {
  return kStagedRing<NT> * (kStagedRows + 8 * NT) * kStagedK * 2;
}

// NT: 8-column operands of A, 2, 4 or 8 (ldmatrix reads them in pairs).
template <typename T, int NT>
__global__ void __launch_bounds__(kThreads, 2)
    mma_staged_nk_kernel(const T* a, int64_t lda, const T* w, int64_t ldw, int m, int n, int k, int chunk,
                         T* c, int64_t ldc, float* ws) {
  static_assert(NT % 2 == 0, "A's operands are read in pairs");
  constexpr int kRing = kStagedRing<NT>, kWTile = kStagedRows * kStagedK, kStage = kWTile + 8 * NT * kStagedK;
  extern __shared__ __align__(128) unsigned char staged_smem[];
  T* const stages = reinterpret_cast<T*>(staged_smem);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, group = warp % 4, half = warp / 4;
  const int row0 = blockIdx.x * kStagedRows;
  const int k_begin = blockIdx.y * chunk, k_end = min(k, k_begin + chunk);
  const int steps = (k_end - k_begin + kStagedK - 1) / kStagedK;
  // Stage `step` of this block's K range into its place in the ring; past the end an empty group,
  // so that every thread's count of pending groups stays the same.
  const auto load = [&](int step) {
    if (step < steps) {
      T* stage = stages + (step % kRing) * kStage;
      const int k0 = k_begin + step * kStagedK;
      load_tile<T, kStagedRows, kStagedK, kThreads, true>(stage, w, ldw, row0, n, k0, k_end);
      load_tile<T, 8 * NT, kStagedK, kThreads, true>(stage + kWTile, a, lda, 0, m, k0, k_end);
    }
    cp_async_commit();
  };
#pragma unroll
  for (int s = 0; s + 1 < kRing; ++s) load(s);
  float acc[NT][4] = {};
#pragma unroll 1
  for (int step = 0; step < steps; ++step) {
    cp_async_wait<kRing - 2>();  // this step's stage has landed (for this thread's copies)
    __syncthreads();             // ... for every thread's, and every warp is done with step - 1's
    load(step + kRing - 1);      // into step - 1's place in the ring
    const T* wt = stages + (step % kRing) * kStage;
    const T* at = wt + kWTile;
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const int chunk0 = 8 * half + 2 * s;  // the first 8 k of this k16 step, in 16-byte chunks
      // W's rows 16 group + 0..15 as the A operand: matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15).
      uint32_t fw[4];
      ldmatrix_x4(fw, smem_addr(wt + swizzled<kStagedK>(16 * group + lane % 16, chunk0 + lane / 16)));
#pragma unroll
      for (int t = 0; t < NT; t += 2) {
        // A's rows 8 t .. 8 t + 15 as two B operands: matrices (rows 8t.. | 8(t+1)..) x (k lo | hi).
        uint32_t fa[4];
        ldmatrix_x4(
            fa, smem_addr(at + swizzled<kStagedK>(8 * (t + lane / 16) + lane % 8, chunk0 + (lane / 8) % 2)));
        const uint32_t b0[2] = {fa[0], fa[1]}, b1[2] = {fa[2], fa[3]};
        mma_16816<T>(acc[t], fw, b0);
        mma_16816<T>(acc[t + 1], fw, b1);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the ring is free: it now carries the second half's sums
  float* share = reinterpret_cast<float*>(staged_smem) + (group * 32 + lane) * NT * 4;
  if (half == 1) {
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) share[4 * t + e] = acc[t][e];
  }
  __syncthreads();
  if (half == 1) return;
    // acc[t][e]: row 16 group + lane / 4 (+ 8 for e >= 2) of the block's W, row 8 t + 2 (lane % 4) +
    // e % 2 of A.
#pragma unroll
  for (int t = 0; t < NT; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int w_row = row0 + 16 * group + lane / 4 + 8 * (e / 2), a_row = 8 * t + 2 * (lane % 4) + e % 2;
      if (a_row < m && w_row < n)
        put(acc[t][e] + share[4 * t + e], a_row, w_row, n, c, ldc, ws, int64_t{m} * n);
    }
}

}  // namespace ak_gemm::skinny
