// Skinny products on the tensor cores through shared memory (cuda_gemm_skinny.cuh's NK path with
// SKINNY_STAGED = 1, for 17 to 64 rows of A): C[M, N] = A[M, K] W[N, K]^T, fp16/bf16, as C^T = W A^T
// with mma.m16n8k16 like cuda_gemm_skinny_mma.cuh, but with W's and A's tiles staged by cp.async.
//
// Why a second form: in the register form a block owns 16 rows of W and reads all of A's rows
// over its K range, so A's reads from L2 are M / 16 times W's bytes, and W's loads in flight cost
// registers. Here a block owns 32, 64 or 128 rows of W, one block an SM, with a ring of stages as
// deep as about 200 KB of shared memory allows (up to 8), which keeps W's copies in flight without
// registers.
//
// A block (StagedLayout<NT, G, WR>): W's rows in WR groups of G 16-row tiles, K in stages of 128 k
// (kStagedK), W's tile and A's 8 NT rows per stage in the XOR swizzle of swizzled<128>. The 8 warps
// split each stage's k: with WR = 1 every warp takes one k16 step over all the block's rows, so
// every byte of a stage is read from shared memory once (the two-blocks-an-SM form before it, four
// warps along W's rows, read A's tile four times and ran short of shared-memory bandwidth: 72% of
// L1's peak at 64 x 4096 x 4096). At the end the warps' sums go through shared memory and are added
// in slice order (repeated runs are bitwise equal). K cut into splits (grid.y) as the other skinny
// kernels. Rows of W past N read as zeros and are never stored. C++17, header-only; included by
// cuda_gemm_skinny.cuh.
#pragma once

#include <cooperative_groups.h>

#include <algorithm>

#include "autokernel/cuda_gemm.cuh"
#include "autokernel/cuda_gemm_skinny_common.cuh"

namespace ak_gemm::skinny {

constexpr int kStagedK = 128;  // k per stage

// A block's layout: W's rows in WR groups of G 16-row tiles (one group per warp), the kWarps / WR
// warps of each group splitting every stage's k between them; NT 8-column operands of A (2, 4 or
// 8: ldmatrix reads them in pairs).
template <int NT, int G, int WR>
struct StagedLayout {
  static_assert(NT % 2 == 0, "A's operands are read in pairs");
  static constexpr int kRows = 16 * G * WR;                        // rows of W per block
  static constexpr int kSlices = kWarps / WR;                      // warps along a stage's k
  static constexpr int kSteps = kStagedK / 16 / kSlices;           // k16 steps of a warp per stage
  static constexpr int kStageElems = (kRows + 8 * NT) * kStagedK;  // W's and A's tiles
  static constexpr int kPartials = kSlices * kRows * 8 * NT;       // floats of the warps' sums
  static_assert(kSteps >= 1 && kSlices * kSteps * 16 == kStagedK, "slices split a stage evenly");
};

template <int NT, int G, int WR, int RING>
constexpr int staged_smem_bytes() {
  using S = StagedLayout<NT, G, WR>;
  return std::max(RING * S::kStageElems * 2, S::kPartials * 4);
}

// The blocks of a cluster (1 x cluster x 1, grid.y = cluster: K's splits of one tile of W) each
// hold their block's sums at sums[0, outputs); block r adds the clusters' sums of its share of the
// outputs, block 0's first (a fixed order: repeated runs are bitwise equal), and stores them.
template <class Store>
__device__ __forceinline__ void sum_cluster(float* sums, int outputs, int cluster, const Store& store) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group blocks = cg::this_cluster();
  blocks.sync();  // every block's sums are in its shared memory (the arrive releases, the wait acquires)
  // Shares of ceil(outputs / cluster): a cluster of 3 or 7 blocks does not divide a tile's outputs.
  const int share = (outputs + cluster - 1) / cluster, rank = static_cast<int>(blocks.block_rank());
  const int end = min(outputs, (rank + 1) * share);
  for (int q = rank * share + static_cast<int>(threadIdx.x); q < end; q += kThreads) {
    float sum = *blocks.map_shared_rank(sums + q, 0);
    for (int r = 1; r < cluster; ++r) sum += *blocks.map_shared_rank(sums + q, r);
    store(q, sum);
  }
  blocks.sync();  // no block leaves while another reads its shared memory
#else
  __trap();  // launch_staged clusters only on sm_90 and later
#endif
}

template <typename T, int NT, int G, int WR, int RING>
__global__ void __launch_bounds__(kThreads, 1)
    mma_staged_nk_kernel(const T* a, int64_t lda, const T* w, int64_t ldw, int m, int n, int k, int chunk,
                         T* c, int64_t ldc, float* ws) {
  using S = StagedLayout<NT, G, WR>;
  constexpr int kWTile = S::kRows * kStagedK;
  extern __shared__ __align__(128) unsigned char staged_smem[];
  T* const stages = reinterpret_cast<T*>(staged_smem);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, group = warp % WR, slice = warp / WR;
  const int row0 = blockIdx.x * S::kRows;
  const int k_begin = blockIdx.y * chunk, k_end = min(k, k_begin + chunk);
  const int steps = (k_end - k_begin + kStagedK - 1) / kStagedK;
  // Stage `step` of this block's K range into its place in the ring; past the end an empty group,
  // so that every thread's count of pending groups stays the same.
  const auto load = [&](int step) {
    if (step < steps) {
      T* stage = stages + (step % RING) * S::kStageElems;
      const int k0 = k_begin + step * kStagedK;
      load_tile<T, S::kRows, kStagedK, kThreads, true>(stage, w, ldw, row0, n, k0, k_end);
      load_tile<T, 8 * NT, kStagedK, kThreads, true>(stage + kWTile, a, lda, 0, m, k0, k_end);
    }
    cp_async_commit();
  };
#pragma unroll
  for (int s = 0; s + 1 < RING; ++s) load(s);
  float acc[G][NT][4] = {};
#pragma unroll 1
  for (int step = 0; step < steps; ++step) {
    cp_async_wait<RING - 2>();  // this step's stage has landed (for this thread's copies)
    __syncthreads();            // ... for every thread's, and every warp is done with step - 1's
    load(step + RING - 1);      // into step - 1's place in the ring
    const T* wt = stages + (step % RING) * S::kStageElems;
    const T* at = wt + kWTile;
#pragma unroll
    for (int s = 0; s < S::kSteps; ++s) {
      const int chunk0 = 2 * (slice * S::kSteps + s);  // the first 8 k of this k16 step, in 16-byte chunks
      // A's rows 8 t .. 8 t + 15 as two B operands: matrices (rows 8t.. | 8(t+1)..) x (k lo | hi).
      uint32_t fa[NT / 2][4];
#pragma unroll
      for (int t = 0; t < NT; t += 2)
        ldmatrix_x4(fa[t / 2], smem_addr(at + swizzled<kStagedK>(8 * (t + lane / 16) + lane % 8,
                                                                 chunk0 + (lane / 8) % 2)));
#pragma unroll
      for (int g = 0; g < G; ++g) {
        // W's rows 16 (group G + g) + 0..15 as the A operand: matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15).
        uint32_t fw[4];
        ldmatrix_x4(fw,
                    smem_addr(wt + swizzled<kStagedK>(16 * (group * G + g) + lane % 16, chunk0 + lane / 16)));
#pragma unroll
        for (int t = 0; t < NT; t += 2) {
          const uint32_t b0[2] = {fa[t / 2][0], fa[t / 2][1]}, b1[2] = {fa[t / 2][2], fa[t / 2][3]};
          mma_16816<T>(acc[g][t], fw, b0);
          mma_16816<T>(acc[g][t + 1], fw, b1);
        }
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the ring is free: it now carries the warps' sums
  // Warp (group, slice)'s sums at [slice][group][(g NT + t) 4 + e][lane]: lanes write consecutive
  // words, and one index q of a slice names the same output in every slice.
  constexpr int kOutputs = S::kRows * 8 * NT, kPerWarp = G * NT * 4 * 32;
  float* const partial = reinterpret_cast<float*>(staged_smem);
  float* const mine = partial + slice * kOutputs + group * kPerWarp + lane;
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) mine[((g * NT + t) * 4 + e) * 32] = acc[g][t][e];
  __syncthreads();
  // acc[g][t][e] of lane l: row 16 (group G + g) + l / 4 (+ 8 for e >= 2) of the block's W, row
  // 8 t + 2 (l % 4) + e % 2 of A.
  const auto store = [&](int q, float sum) {
    const int l = q % 32, e = q / 32 % 4, t = q / 128 % NT, tile = q / (128 * NT);
    const int w_row = row0 + 16 * tile + l / 4 + 8 * (e / 2), a_row = 8 * t + 2 * (l % 4) + e % 2;
    if (a_row < m && w_row < n) put(sum, a_row, w_row, n, c, ldc, ws, int64_t{m} * n);
  };
  // K's splits are the blocks of one cluster (no workspace): their sums meet in shared memory.
  const int cluster = ws == nullptr ? static_cast<int>(gridDim.y) : 1;
  // The slices' sums added in slice order: a fixed order, so repeated runs are bitwise equal.
  for (int q = threadIdx.x; q < kOutputs; q += kThreads) {
    float sum = partial[q];
#pragma unroll
    for (int s = 1; s < S::kSlices; ++s) sum += partial[s * kOutputs + q];
    if (cluster > 1)
      partial[q] = sum;  // only this thread reads or writes index q of any slice
    else
      store(q, sum);
  }
  if (cluster > 1) sum_cluster(partial, kOutputs, cluster, store);
}

}  // namespace ak_gemm::skinny
