// Skinny products for decode, fp16/bf16 (kernels/cuda/matmul.cu with SKINNY = 1): C[M, N] =
// A[M, K] B for M = 1..32 (64 possible; B[K, N]: 1..8), where the product is one read of B and a tensor-core
// tile of 64 or 128 rows would be mostly padding. Memory-bound: each element of B is read once, in 16-byte
// loads that do not allocate in L1, so that L1 keeps A, which every warp of an SM reads.
//   NK  B a Linear's [N, K] weight (k contiguous). Up to M = simt_max_m on CUDA cores: a warp owns
//       R rows of B (R columns of C, R = 2, 4 at M > 4); each lane takes 8 consecutive k, the warp
//       256 per step, and the lanes' sums are added at the end by warp_sum (a fixed butterfly
//       order). Above it (matmul.cu's default: from M = 1) on the tensor cores
//       (cuda_gemm_skinny_mma.cuh): on CUDA cores M multiply-adds per element of B run out of FMA
//       issue before HBM runs out of bytes (H100, 4096 x 4096: 88.6 us at M = 16 against 17.8).
//   KN  B[K, N] (n contiguous). A block owns 256 columns of C, a lane 8 consecutive ones; warp w
//       reads rows 8w..8w+7 of every 64 rows of its K range. The warps' sums are added in shared
//       memory by a fixed tree (4 + 4, 2 + 2, 1 + 1 warps).
// Both cut K into contiguous splits (grid.y) when the columns alone give fewer than two blocks per
// SM: each split's partial sums go to a float workspace and sum_splits adds them in split order
// (cuda_gemm_splits.cuh). No atomics: repeated runs are bitwise equal. Needs 16-byte aligned
// rows of A and B, K a multiple of 8, and for KN N a multiple of 8; other calls get
// AK_ERR_UNSUPPORTED and take the tiled paths.
//       With RowLimits::staged, 17 to 64 rows go through shared memory instead
//       (cuda_gemm_skinny_staged.cuh: one block an SM per 32, 64 or 128 columns of C).
//   launch_skinny_gemm<T, L, Clusters>(p, c, ldc, stream, split_k, limits)
//     split_k: 0 chooses, n > 0 forces n; limits (RowLimits): the M each path takes
// C++17, header-only.
#pragma once

#include <limits.h>

#include <algorithm>
#include <type_traits>

#include "autokernel/cuda_gemm.cuh"
#include "autokernel/cuda_gemm_skinny_mma.cuh"
#include "autokernel/cuda_gemm_skinny_staged.cuh"
#include "autokernel/cuda_gemm_splits.cuh"
#include "autokernel/skinny_plan.h"

namespace ak_gemm::skinny {

constexpr int kVec = 8;                         // 16-bit elements in 16 bytes
constexpr int kStepNK = 32 * kVec;              // k a warp reads of each of its rows per step (NK)
constexpr int kColsKN = 32 * kVec;              // columns of C per block (KN)
constexpr int kRowsKN = kWarps * kVec;          // rows of B a block reads per step (KN)
constexpr int kMaxRowsNK = 16, kMaxRowsKN = 8;  // KN keeps 8 sums per row of A in registers

template <int MR>
constexpr int rows_per_warp() {
  return MR > 4 ? 4 : 2;
}

template <typename T>
__device__ __forceinline__ void unpack(uint4 raw, float (&out)[kVec]) {
  ak_cuda::Vec16<T>{raw}.to_floats(out);
}

template <typename T, int MR, int R>
__global__ void __launch_bounds__(kThreads) nk_kernel(const T* a, int64_t lda, const T* b, int64_t ldb, int m,
                                                      int n, int k, int chunk, T* c, int64_t ldc, float* ws) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int col0 = (blockIdx.x * kWarps + warp) * R;
  if (col0 >= n) return;  // the whole warp; nothing below synchronizes the block
  const int k_end = min(k, static_cast<int>(blockIdx.y) * chunk + chunk);
  const T* rows[R];
#pragma unroll
  for (int r = 0; r < R; ++r) rows[r] = b + static_cast<int64_t>(min(col0 + r, n - 1)) * ldb;
  float acc[R][MR] = {};
#pragma unroll 2
  for (int kk = blockIdx.y * chunk + lane * kVec; kk < k_end; kk += kStepNK) {
    float w[R][kVec];
#pragma unroll
    for (int r = 0; r < R; ++r) unpack<T>(load_streaming(rows[r] + kk), w[r]);
#pragma unroll
    for (int i = 0; i < MR; ++i) {
      if (i >= m) break;
      float x[kVec];
      unpack<T>(__ldg(reinterpret_cast<const uint4*>(a + i * lda + kk)), x);
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[r][i] = fmaf(x[e], w[r][e], acc[r][i]);
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < MR; ++i) {
      if (i >= m) break;
      const float sum = ak_cuda::warp_sum(acc[r][i]);
      if (lane == 0 && col0 + r < n) put(sum, i, col0 + r, n, c, ldc, ws, static_cast<int64_t>(m) * n);
    }
}

template <typename T, int MR>
__global__ void __launch_bounds__(kThreads) kn_kernel(const T* a, int64_t lda, const T* b, int64_t ldb, int m,
                                                      int n, int k, int chunk, T* c, int64_t ldc, float* ws) {
  __shared__ float share[kWarps / 2][MR][kColsKN];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int col = blockIdx.x * kColsKN + lane * kVec;
  const bool live = col < n;  // n is a multiple of 8: a lane's columns are all in or all out
  const int k_end = min(k, static_cast<int>(blockIdx.y) * chunk + chunk);
  float acc[MR][kVec] = {};
  for (int kk = blockIdx.y * chunk + warp * kVec; live && kk < k_end; kk += kRowsKN) {
    uint4 x[MR] = {};
#pragma unroll
    for (int i = 0; i < MR; ++i)
      if (i < m) x[i] = __ldg(reinterpret_cast<const uint4*>(a + i * lda + kk));
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      float w[kVec];
      unpack<T>(load_streaming(b + static_cast<int64_t>(kk + j) * ldb + col), w);
#pragma unroll
      for (int i = 0; i < MR; ++i) {
        if (i >= m) break;
        const float xi = to_float(reinterpret_cast<const T*>(&x[i])[j]);
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[i][e] = fmaf(xi, w[e], acc[i][e]);
      }
    }
  }
  // Warps [half, 2 half) hand their sums to warps [0, half): a fixed order, so fixed bits.
#pragma unroll
  for (int half = kWarps / 2; half >= 1; half /= 2) {
    if (warp >= half && warp < 2 * half)
#pragma unroll
      for (int i = 0; i < MR; ++i)
#pragma unroll
        for (int e = 0; e < kVec; ++e) share[warp - half][i][lane * kVec + e] = acc[i][e];
    __syncthreads();
    if (warp < half)
#pragma unroll
      for (int i = 0; i < MR; ++i)
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[i][e] += share[warp][i][lane * kVec + e];
    __syncthreads();
  }
  if (warp != 0 || !live) return;
#pragma unroll
  for (int i = 0; i < MR; ++i) {
    if (i >= m) break;
#pragma unroll
    for (int e = 0; e < kVec; ++e) put(acc[i][e], i, col + e, n, c, ldc, ws, static_cast<int64_t>(m) * n);
  }
}

// Which M each path takes (kernels/cuda/matmul.cu: SKINNY_SIMT_MAX_M, SKINNY_MAX_M).
struct RowLimits {
  int simt_max_m;   // B as [N, K]: CUDA cores up to this M (at most kMaxRowsNK), tensor cores above
  int max_m;        // the most rows taken (at most kMaxMmaCols for B as [N, K], kMaxRowsKN for B[K, N])
  bool staged;      // B as [N, K], M > kMaxRowsNK on the tensor cores: through shared memory
  int staged_rows;  // rows of W per block there: 32, 64 or 128; 0 chooses
};

template <typename T, BLayout L>
bool eligible(const GemmProblem<T, 1>& p, RowLimits limits) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    const int max_rows = std::min(limits.max_m, L == BLayout::NK ? kMaxMmaCols : kMaxRowsKN);
    if (p.m < 1 || p.m > max_rows || p.n < 1 || p.k % kVec != 0) return false;
    const bool a_ok = ak_cuda::can_vectorize(p.a, p.k, p.m == 1 ? p.k : p.lda);
    if constexpr (L == BLayout::NK)
      return a_ok && ak_cuda::can_vectorize(p.b[0], p.k, p.n == 1 ? p.k : p.ldb);
    else
      return a_ok && ak_cuda::can_vectorize(p.b[0], p.n, p.ldb);
  }
}

// f(std::integral_constant<int, MR>) with MR the least power of two from `from` that holds m rows
// (m <= kMaxRows, a power of two).
template <int kMaxRows, int from = 1, class F>
int with_rows(int m, F&& f) {
  if constexpr (from >= kMaxRows)
    return f(std::integral_constant<int, kMaxRows>{});
  else
    return m <= from ? f(std::integral_constant<int, from>{}) : with_rows<kMaxRows, 2 * from>(m, f);
}

// The kernels' one signature: (a, lda, b, ldb, m, n, k, chunk, c, ldc, workspace or null).
template <typename T>
using Kernel = void (*)(const T*, int64_t, const T*, int64_t, int, int, int, int, T*, int64_t, float*);

// kernel over `blocks` column blocks (smem_bytes of dynamic shared memory each), K cut into splits
// of `granule` multiples (each at least min_k unless forced): into C, or into the workspace and
// then added in split order.
template <typename T>
int launch_split(Kernel<T> kernel, const GemmProblem<T, 1>& p, T* c, int64_t ldc, cudaStream_t stream,
                 int split_k, int64_t blocks, int min_k, int granule, int smem_bytes = 0,
                 int blocks_per_sm = 2) {
  if (!allow_shared_memory(kernel, smem_bytes)) return AK_ERR_UNSUPPORTED;
  const int64_t sms = std::max(1, device_attribute(cudaDevAttrMultiProcessorCount));
  const int64_t slice = static_cast<int64_t>(p.m) * p.n;
  const Splits s = choose_splits(p.k, blocks, blocks_per_sm * sms, min_k, INT_MAX, granule, slice, split_k);
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(s.count));
  auto run = [&](float* ws) {
    kernel<<<grid, kThreads, smem_bytes, stream>>>(p.a, p.lda, p.b[0], p.ldb, p.m, p.n, p.k, s.chunk, c, ldc,
                                                   ws);
    return ak_cuda::check_launch();
  };
  if (s.count == 1) return run(nullptr);
  return with_split_workspace<T>(s.count, slice, p.n, p.m, p.n, c, ldc, stream, run);
}

// The shared-memory form at one height (32, 64, 128 or 256 rows of W per block) for NT operands
// of A: its ring (as deep as about 200 KB allows, up to 8 stages), shared memory and kernel.
template <typename T, int NT, int G, int WR>
struct StagedForm {
  using S = StagedLayout<NT, G, WR>;
  static constexpr int kRows = S::kRows;
  static constexpr int kRing = std::min(8, 200 * 1024 / (S::kStageElems * 2));
  static constexpr int kSmemBytes = staged_smem_bytes<NT, G, WR, kRing>();
  static constexpr Kernel<T> kernel = mma_staged_nk_kernel<T, NT, G, WR, kRing>;

  // How many clusters of `cluster` blocks (1 x cluster x 1) the device runs at once.
  static int clusters_that_fit(int cluster) {
    return ak_gemm::clusters_that_fit<kernel>(kThreads, kSmemBytes, dim3(1, static_cast<unsigned>(cluster)));
  }
};

// f(StagedForm<...>{}) for 32, 64, 128 or (Tall: plan_staged's, built only with clusters) 256 rows
// of W per block; AK_ERR_UNSUPPORTED for others.
template <typename T, int NT, bool Tall, class F>
int with_staged_form(int rows, F&& f) {
  switch (rows) {  // G 16-row tiles a warp, WR groups of warps along W's rows
    case 32: return f(StagedForm<T, NT, 2, 1>{});
    case 64: return f(StagedForm<T, NT, 4, 1>{});
    case 128: return f(StagedForm<T, NT, 4, 2>{});
    case 256:  // two k slices, two stages
      if constexpr (Tall) return f(StagedForm<T, NT, 4, 4>{});
      return AK_ERR_UNSUPPORTED;
    default: return AK_ERR_UNSUPPORTED;
  }
}

// plan_staged (skinny_plan.h) over this form's heights, asking the device how many clusters fit.
template <typename T, int NT>
StagedPlan plan_staged(const GemmProblem<T, 1>& p, int forced_rows) {
  constexpr int kHeights[] = {32, 64, 128, 256};
  StagedHeight heights[4];
  for (int h = 0; h < 4; ++h)
    with_staged_form<T, NT, true>(kHeights[h], [&](auto form) {
      heights[h] = {decltype(form)::kRows, decltype(form)::kRing};
      return AK_OK;
    });
  const auto fits = [](int rows, int cluster) {
    return with_staged_form<T, NT, true>(
        rows, [&](auto form) { return decltype(form)::clusters_that_fit(cluster); });
  };
  const int64_t sms = std::max(1, device_attribute(cudaDevAttrMultiProcessorCount));
  return skinny::plan_staged(p.n, p.k, 8 * NT, sms, kStagedK, forced_rows, heights, 4, fits);
}

// The planned cluster split: K's runs of one tile of W on the blocks of a cluster, their sums
// added in shared memory (no workspace, no second kernel).
template <typename T, int NT>
int launch_cluster_split(const GemmProblem<T, 1>& p, T* c, int64_t ldc, cudaStream_t stream,
                         const StagedPlan& plan) {
  return with_staged_form<T, NT, true>(plan.rows, [&](auto form) {
    using Form = decltype(form);
    if (!allow_shared_memory(Form::kernel, Form::kSmemBytes)) return AK_ERR_UNSUPPORTED;
    const dim3 grid(static_cast<unsigned>((p.n + plan.rows - 1) / plan.rows),
                    static_cast<unsigned>(plan.cluster));
    cudaLaunchAttribute attribute[1];  // K's splits of one tile of W are the blocks of a cluster
    const cudaLaunchConfig_t config =
        cluster_launch(grid, kThreads, Form::kSmemBytes, dim3(1, grid.y), stream, attribute);
    const cudaError_t rc = cudaLaunchKernelEx(&config, Form::kernel, p.a, p.lda, p.b[0], p.ldb, p.m, p.n, p.k,
                                              plan.chunk, c, ldc, static_cast<float*>(nullptr));
    if (rc == cudaSuccess) return AK_OK;
    (void)cudaGetLastError();
    return AK_ERR_LAUNCH;
  });
}

// The shared-memory form (cuda_gemm_skinny_staged.cuh) for 17 to 64 rows of A (NT operands): one
// block an SM, and by default the fewest rows of W per block (32, 64, 128) that leave no more
// blocks than SMs: no split where the columns fill the SMs, and where they do not, the fewest
// blocks to split. A split gives each stage of the ring a turn. Past 64 x 128 rows of W per SM
// (N > 16896 on 132 SMs) at more than 32 rows of A, the wgmma split-K is faster (64 x 32000 x
// 4096: 72.2 against 82.9 us on the H200): those calls go to it. With Clusters (Hopper's thread
// block clusters; SKINNY_CLUSTER) and no forced split, plan_staged's layout instead (256 rows of
// W a block among its heights), wherever one fits in a wave.
template <typename T, int NT, bool Clusters>
int launch_staged(const GemmProblem<T, 1>& p, T* c, int64_t ldc, cudaStream_t stream, int split_k,
                  int forced_rows) {
  const int64_t sms = std::max(1, device_attribute(cudaDevAttrMultiProcessorCount));
  if constexpr (Clusters) {
    if (split_k == 0 && cluster_code()) {
      const StagedPlan plan = plan_staged<T, NT>(p, forced_rows);
      if (plan.rows != 0 && plan.cluster > 1) {
        const int rc = launch_cluster_split<T, NT>(p, c, ldc, stream, plan);
        if (rc == AK_OK) return rc;  // else the device would not take the clusters: as without them
      } else if (plan.rows != 0) {
        forced_rows = plan.rows;
        split_k = 1;
      }
    }
  }
  if (forced_rows == 0 && NT > 4 && p.n > 128 * sms) return AK_ERR_UNSUPPORTED;
  int rows = forced_rows;
  if (rows == 0) rows = p.n <= 32 * sms ? 32 : p.n <= 64 * sms ? 64 : 128;
  return with_staged_form<T, NT, Clusters>(rows, [&](auto form) {
    using Form = decltype(form);
    return launch_split<T>(Form::kernel, p, c, ldc, stream, split_k, (p.n + Form::kRows - 1) / Form::kRows,
                           Form::kRing * kStagedK, kStagedK, Form::kSmemBytes, 1);
  });
}

template <typename T, BLayout L, bool Clusters = false>
int launch_skinny_gemm(const GemmProblem<T, 1>& p, T* c, int64_t ldc, cudaStream_t stream, int split_k,
                       RowLimits limits) {
  if (!eligible<T, L>(p, limits)) return AK_ERR_UNSUPPORTED;
  if constexpr (L == BLayout::NK) {
    if (limits.staged && p.m > kMaxRowsNK) {  // through shared memory: 4 or 8 operands of A
      return with_rows<kMaxMmaCols, 32>(p.m, [&](auto rows) {
        return launch_staged<T, decltype(rows)::value / 8, Clusters>(p, c, ldc, stream, split_k,
                                                                     limits.staged_rows);
      });
    }
    if (p.m > std::min(limits.simt_max_m, kMaxRowsNK)) {      // C^T = W A^T on the tensor cores
      return with_rows<kMaxMmaCols, 8>(p.m, [&](auto rows) {  // 8-column mma operands: rows / 8
        constexpr int NT = decltype(rows)::value / 8, kStepK = 32 * kMmaSteps<NT>;
        // A split gives each of a block's warps at least one turn.
        return launch_split<T>(mma_nk_kernel<T, NT>, p, c, ldc, stream, split_k,
                               (p.n + kMmaRows - 1) / kMmaRows, kWarps * kStepK, kStepK);
      });
    }
  }
  constexpr int kMaxRows = L == BLayout::NK ? kMaxRowsNK : kMaxRowsKN;
  return with_rows<kMaxRows>(p.m, [&](auto rows) {
    constexpr int MR = decltype(rows)::value;
    if constexpr (L == BLayout::NK) {
      constexpr int R = rows_per_warp<MR>();
      // A split pays for its partial sums from 2 steps of K (512 k a row).
      return launch_split<T>(nk_kernel<T, MR, R>, p, c, ldc, stream, split_k,
                             (p.n + kWarps * R - 1) / (kWarps * R), 2 * kStepNK, kStepNK);
    } else {
      // A split pays for its partial sums from 2 steps of K (128 rows).
      return launch_split<T>(kn_kernel<T, MR>, p, c, ldc, stream, split_k, (p.n + kColsKN - 1) / kColsKN,
                             2 * kRowsKN, kRowsKN);
    }
  });
}

}  // namespace ak_gemm::skinny
