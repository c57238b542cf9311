// fp32 matrix products for kernels/cuda/matmul.cu: FFMA only (no TF32), C++17, header-only.
//
// C[m, n] = sum_k A[m, k] * B[k, n] (B as BLayout::KN) through one of three paths, picked by
// launch_matmul:
//   gemm_kernel<Vec>     128 x 128 x 16 tiles, 256 threads of 8 x 8 outputs (rows 4 ty + {0..3}
//                        and 64 + 4 ty + {0..3}, columns the same in tx) so that every shared
//                        memory read is a float4; A stored k-major, two shared buffers with one
//                        barrier per k-tile: the next tile is on its way (A into registers, B by
//                        cp.async with Vec) while the current one is computed. Vec: float4
//                        global loads and stores (rows_vectorizable: 16-byte aligned rows, K and
//                        N multiples of 4), else element loads.
//   matvec_kernel<Vec>   N == 1: memory-bound; a warp per 4 rows of A, so each piece of x feeds
//                        4 rows, float4 loads when rows and x are 16-byte aligned and x is
//                        contiguous, 4 partial sums per lane, then a warp butterfly.
//   vecmat_kernel<Vec>   M == 1: memory-bound; a block per 128 columns of B (32 if not float4),
//                        its 8 warps on interleaved rows of B, added in warp order at the end.
// Split-K: each path can cut K into contiguous chunks, one per blockIdx.y. That fills the device
// when the output alone gives too few blocks, and bounds the fp32 chain behind each output (a
// single thread summing K = 1M products drifts by ~2e-4 relative). The splits write partial sums
// to a workspace and sum_splits adds them in split order (cuda_gemm_splits.cuh, shared with the
// wgmma path). choose_splits picks the count, or takes the caller's (SPLIT_K), within kMaxSplits
// and kMaxWorkspaceBytes; one split writes C directly and allocates nothing.
#pragma once

#include <algorithm>

#include "autokernel/cuda_gemm.cuh"
#include "autokernel/cuda_gemm_splits.cuh"

namespace ak_gemm {
namespace fp32 {

constexpr int kThreads = 256, kWarps = kThreads / 32;

// Where a kernel's sums go: C itself with one split, else split blockIdx.y's slice of the
// workspace.
struct Out {
  float* base;
  int64_t split_stride;  // elements from one split's slice to the next (0 for C)
  int64_t ld;            // row stride in elements
  bool vec4;             // base 16-byte aligned and ld a multiple of 4

  __device__ __forceinline__ float* slice() const { return base + blockIdx.y * split_stride; }
};

// This block's part of [0, k): chunks of `chunk` elements, one per blockIdx.y, the last short.
struct KRange {
  int begin, end;
};
__device__ __forceinline__ KRange split_range(int k, int chunk) {
  const int begin = static_cast<int>(blockIdx.y) * chunk;  // < k: no split is empty
  return {begin, chunk < k - begin ? begin + chunk : k};
}

__device__ __forceinline__ void dot4(float (&acc)[4], const float4& a, const float4& x) {
  acc[0] = fmaf(a.x, x.x, acc[0]);
  acc[1] = fmaf(a.y, x.y, acc[1]);
  acc[2] = fmaf(a.z, x.z, acc[2]);
  acc[3] = fmaf(a.w, x.w, acc[3]);
}

// ---- GEMM ---------------------------------------------------------------------------------------

constexpr int kBM = 128, kBN = 128, kBK = 16;
constexpr int kLdA = kBM + 4;  // the pad keeps k-rows 16-byte aligned and halves store conflicts

// The k-tile at k0 (k < k_end), zeros outside: A into registers, and B, with Vec, straight into
// the shared buffer `bs` by cp.async (fewer live registers), else into registers too. Vec: A as 4
// threads per row, one float4 each, rows t / 4 and 64 + t / 4; B as 32 threads per k-row, k-rows
// t / 32 and 8 + t / 32. Elements: A as 16 threads per row, 16 rows apart; B as 128 threads per
// k-row, 2 k-rows apart.
template <bool Vec>
__device__ __forceinline__ void gemm_fetch(const GemmProblem<float, 1>& p, int m0, int n0, int k0, int k_end,
                                           float (&ra)[8], float (&rb)[8], float (*bs)[kBN]) {
  const int t = static_cast<int>(threadIdx.x);
  if constexpr (Vec) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int row = m0 + t / 4 + 64 * i, k = k0 + 4 * (t % 4);
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (row < p.m && k < k_end)
        v = __ldg(reinterpret_cast<const float4*>(p.a + static_cast<int64_t>(row) * p.lda + k));
      ra[4 * i] = v.x;
      ra[4 * i + 1] = v.y;
      ra[4 * i + 2] = v.z;
      ra[4 * i + 3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int kr = t / 32 + 8 * i, k = k0 + kr, n = n0 + 4 * (t % 32);
      const bool valid = k < k_end && n < p.n;
      cp_async16(smem_addr(&bs[kr][4 * (t % 32)]),
                 valid ? p.b[0] + static_cast<int64_t>(k) * p.ldb + n : p.b[0], valid);
    }
    cp_async_commit();
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int row = m0 + t / 16 + 16 * i, k = k0 + t % 16;
      ra[i] = (row < p.m && k < k_end) ? __ldg(p.a + static_cast<int64_t>(row) * p.lda + k) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int k = k0 + t / 128 + 2 * i, n = n0 + t % 128;
      rb[i] = (k < k_end && n < p.n) ? __ldg(p.b[0] + static_cast<int64_t>(k) * p.ldb + n) : 0.0f;
    }
  }
}

// The registers of gemm_fetch into the shared buffers (A transposed: as[k][m]); with Vec, waits
// for the cp.async of B as well.
template <bool Vec>
__device__ __forceinline__ void gemm_stash(float (*as)[kLdA], float (*bs)[kBN], const float (&ra)[8],
                                           const float (&rb)[8]) {
  const int t = static_cast<int>(threadIdx.x);
  if constexpr (Vec) {
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) as[4 * (t % 4) + j][t / 4 + 64 * i] = ra[4 * i + j];
    cp_async_wait<0>();
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) as[t % 16][t / 16 + 16 * i] = ra[i];
#pragma unroll
    for (int i = 0; i < 8; ++i) bs[t / 128 + 2 * i][t % 128] = rb[i];
  }
}

// One 128 x 128 tile of C (blockIdx.x, grouped by tile_of) over split blockIdx.y's K range.
template <bool Vec>
__global__ void __launch_bounds__(kThreads, 2)
    gemm_kernel(const GemmProblem<float, 1> p, int chunk, const Out out) {
  __shared__ __align__(16) float as[2][kBK][kLdA];
  __shared__ __align__(16) float bs[2][kBK][kBN];
  const TileCoord tile = tile_of(static_cast<int>(blockIdx.x), (p.m + kBM - 1) / kBM, (p.n + kBN - 1) / kBN);
  const int m0 = tile.m * kBM, n0 = tile.n * kBN;
  const int t = static_cast<int>(threadIdx.x), ty = t / 16, tx = t % 16;
  const KRange kr = split_range(p.k, chunk);

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  float ra[8], rb[8];  // rb: unused with Vec
  gemm_fetch<Vec>(p, m0, n0, kr.begin, kr.end, ra, rb, bs[0]);
  gemm_stash<Vec>(as[0], bs[0], ra, rb);
  __syncthreads();
  int buf = 0;
#pragma unroll 1
  for (int k0 = kr.begin; k0 < kr.end; k0 += kBK) {
    const bool more = k0 + kBK < kr.end;
    // The other buffer was last read before the previous barrier: free to refill.
    if (more) gemm_fetch<Vec>(p, m0, n0, k0 + kBK, kr.end, ra, rb, bs[buf ^ 1]);
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&as[buf][k][4 * ty]);
      const float4 a1 = *reinterpret_cast<const float4*>(&as[buf][k][64 + 4 * ty]);
      const float4 b0 = *reinterpret_cast<const float4*>(&bs[buf][k][4 * tx]);
      const float4 b1 = *reinterpret_cast<const float4*>(&bs[buf][k][64 + 4 * tx]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (more) gemm_stash<Vec>(as[buf ^ 1], bs[buf ^ 1], ra, rb);
    __syncthreads();
    buf ^= 1;
  }

  float* c = out.slice();
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = m0 + 64 * (i / 4) + 4 * ty + i % 4;
    if (row >= p.m) continue;
    float* crow = c + static_cast<int64_t>(row) * out.ld;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = n0 + 64 * h + 4 * tx;
      if (out.vec4 && col + 3 < p.n) {
        *reinterpret_cast<float4*>(crow + col) =
            make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (col + j < p.n) crow[col + j] = acc[i][4 * h + j];
      }
    }
  }
}

// ---- N == 1: y = A x ----------------------------------------------------------------------------

constexpr int kMvRows = 4;  // rows per warp: each piece of x, once loaded, feeds this many

template <bool Vec>
__global__ void __launch_bounds__(kThreads)
    matvec_kernel(const float* a, int64_t lda, const float* x, int64_t incx, int m, int k, int chunk,
                  const Out out) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * kWarps + warp) * kMvRows;
  if (row0 >= m) return;  // whole warps leave; nothing below synchronizes the block
  const KRange kr = split_range(k, chunk);
  // Rows past the end read the last row again (cached) and are not stored.
  const float* rows[kMvRows];
#pragma unroll
  for (int r = 0; r < kMvRows; ++r) rows[r] = a + (row0 + r < m ? row0 + r : m - 1) * lda;
  float acc[kMvRows][4];
#pragma unroll
  for (int r = 0; r < kMvRows; ++r)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[r][j] = 0.0f;

  if constexpr (Vec) {
    // A is read once: streaming loads keep x, which every row group reads, in the caches.
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const int end = kr.end / 4;
    int v = kr.begin / 4 + lane;
#pragma unroll 1
    for (; v + 32 < end; v += 64) {
      const float4 x0 = __ldg(x4 + v), x1 = __ldg(x4 + v + 32);
      float4 a0[kMvRows], a1[kMvRows];
#pragma unroll
      for (int r = 0; r < kMvRows; ++r) {
        a0[r] = __ldcs(reinterpret_cast<const float4*>(rows[r]) + v);
        a1[r] = __ldcs(reinterpret_cast<const float4*>(rows[r]) + v + 32);
      }
#pragma unroll
      for (int r = 0; r < kMvRows; ++r) {
        dot4(acc[r], a0[r], x0);
        dot4(acc[r], a1[r], x1);
      }
    }
    if (v < end) {
      const float4 x0 = __ldg(x4 + v);
#pragma unroll
      for (int r = 0; r < kMvRows; ++r)
        dot4(acc[r], __ldcs(reinterpret_cast<const float4*>(rows[r]) + v), x0);
    }
  } else {
#pragma unroll 4
    for (int kk = kr.begin + lane; kk < kr.end; kk += 32) {
      const float xv = __ldg(x + static_cast<int64_t>(kk) * incx);
#pragma unroll
      for (int r = 0; r < kMvRows; ++r) acc[r][0] = fmaf(__ldcs(rows[r] + kk), xv, acc[r][0]);
    }
  }

#pragma unroll
  for (int r = 0; r < kMvRows; ++r) {
    const float sum = ak_cuda::warp_sum((acc[r][0] + acc[r][1]) + (acc[r][2] + acc[r][3]));
    if (lane == 0 && row0 + r < m) out.slice()[(row0 + r) * out.ld] = sum;
  }
}

// ---- M == 1: y = a B ----------------------------------------------------------------------------

template <bool Vec>
__device__ __forceinline__ void load_cols(const float* p, float (&v)[Vec ? 4 : 1]) {
  if constexpr (Vec) {
    const float4 f = __ldcs(reinterpret_cast<const float4*>(p));
    v[0] = f.x;
    v[1] = f.y;
    v[2] = f.z;
    v[3] = f.w;
  } else {
    v[0] = __ldcs(p);
  }
}

// Warp w sums rows kr.begin + w, + 8 + w, ... of B for its lanes' columns; the 8 warps' sums are
// then added in warp order.
template <bool Vec>
__global__ void __launch_bounds__(kThreads)
    vecmat_kernel(const float* a, const float* b, int64_t ldb, int n, int k, int chunk, const Out out) {
  constexpr int kCols = Vec ? 4 : 1, kSpan = 32 * kCols;
  __shared__ float part[kWarps][kSpan];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int col = static_cast<int>(blockIdx.x) * kSpan + lane * kCols;
  const KRange kr = split_range(k, chunk);
  float acc[kCols];
#pragma unroll
  for (int c = 0; c < kCols; ++c) acc[c] = 0.0f;
  if (col < n) {  // with Vec, N is a multiple of 4: the whole float4 is in
    const float* bc = b + col;
    int kk = kr.begin + warp;
#pragma unroll 1
    for (; kk + 3 * kWarps < kr.end; kk += 4 * kWarps) {
      float rows[4][kCols], av[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        load_cols<Vec>(bc + static_cast<int64_t>(kk + u * kWarps) * ldb, rows[u]);
        av[u] = __ldg(a + kk + u * kWarps);
      }
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int c = 0; c < kCols; ++c) acc[c] = fmaf(av[u], rows[u][c], acc[c]);
    }
#pragma unroll 1
    for (; kk < kr.end; kk += kWarps) {
      float row[kCols];
      load_cols<Vec>(bc + static_cast<int64_t>(kk) * ldb, row);
      const float av = __ldg(a + kk);
#pragma unroll
      for (int c = 0; c < kCols; ++c) acc[c] = fmaf(av, row[c], acc[c]);
    }
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c) part[warp][lane * kCols + c] = acc[c];
  __syncthreads();
  if (warp == 0 && col < n) {
    float* dst = out.slice() + col;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      float sum = part[0][lane * kCols + c];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) sum += part[w][lane * kCols + c];
      dst[c] = sum;
    }
  }
}

// ---- Splits -------------------------------------------------------------------------------------

// Runs launch(out) into C directly with one split; otherwise into a stream-ordered workspace of
// splits x slice floats (rows of ldw) that sum_splits then folds into C (cuda_gemm_splits.cuh).
template <class Launch>
int run_splits(int splits, int64_t slice, int64_t ldw, int m, int n, float* c, int64_t ldc,
               cudaStream_t stream, Launch&& launch) {
  if (splits <= 1) return launch(Out{c, 0, ldc, ak_cuda::is_aligned16(c) && ldc % 4 == 0});
  return with_split_workspace(splits, slice, ldw, m, n, c, ldc, stream, [&](float* w) {
    return launch(Out{w, slice, ldw, ldw % 4 == 0 && slice % 4 == 0});
  });
}

// C (row stride ldc) = A B for fp32 p; split_k > 0 forces that many K splits (SPLIT_K).
inline int launch_matmul(const GemmProblem<float, 1>& p, float* c, int64_t ldc, int split_k,
                         cudaStream_t stream) {
  const int sm_attr = device_attribute(cudaDevAttrMultiProcessorCount);
  const int64_t sms = sm_attr > 0 ? sm_attr : 1;
  if (p.n == 1) {
    const int64_t blocks = (static_cast<int64_t>(p.m) + kWarps * kMvRows - 1) / (kWarps * kMvRows);
    // A warp's lanes keep 4 sums each: a chain of chunk / 128 products (chunk / 32 unvectorized).
    const Splits s = choose_splits(p.k, blocks, 8 * sms, 2048, 65536, 128, p.m, split_k);
    const bool vec = p.k % 4 == 0 && p.lda % 4 == 0 && p.ldb == 1 && ak_cuda::is_aligned16(p.a) &&
                     ak_cuda::is_aligned16(p.b[0]);
    const auto kernel = vec ? matvec_kernel<true> : matvec_kernel<false>;
    return run_splits(s.count, p.m, 1, p.m, 1, c, ldc, stream, [&](const Out& out) {
      kernel<<<dim3(static_cast<unsigned>(blocks), s.count), kThreads, 0, stream>>>(p.a, p.lda, p.b[0], p.ldb,
                                                                                    p.m, p.k, s.chunk, out);
      return ak_cuda::check_launch();
    });
  }
  if (p.m == 1) {
    const bool vec = p.n % 4 == 0 && p.ldb % 4 == 0 && ak_cuda::is_aligned16(p.b[0]);
    const int span = vec ? 128 : 32;
    const int64_t blocks = (static_cast<int64_t>(p.n) + span - 1) / span;
    // A thread's chain is chunk / 8 products.
    const Splits s = choose_splits(p.k, blocks, 8 * sms, 64, 16384, kWarps, p.n, split_k);
    const auto kernel = vec ? vecmat_kernel<true> : vecmat_kernel<false>;
    return run_splits(s.count, p.n, p.n, 1, p.n, c, ldc, stream, [&](const Out& out) {
      kernel<<<dim3(static_cast<unsigned>(blocks), s.count), kThreads, 0, stream>>>(p.a, p.b[0], p.ldb, p.n,
                                                                                    p.k, s.chunk, out);
      return ak_cuda::check_launch();
    });
  }
  const int64_t tiles = static_cast<int64_t>((p.m + kBM - 1) / kBM) * ((p.n + kBN - 1) / kBN);
  if (tiles > INT_MAX) return AK_ERR_UNSUPPORTED;
  const int64_t ldw = (static_cast<int64_t>(p.n) + 3) / 4 * 4;
  // Two blocks per SM (__launch_bounds__) make one wave; a thread's chain is the whole chunk.
  const Splits s = choose_splits(p.k, tiles, 2 * sms, 128, 32768, kBK, p.m * ldw, split_k);
  const auto kernel = rows_vectorizable(p, BLayout::KN) ? gemm_kernel<true> : gemm_kernel<false>;
  return run_splits(s.count, p.m * ldw, ldw, p.m, p.n, c, ldc, stream, [&](const Out& out) {
    kernel<<<dim3(static_cast<unsigned>(tiles), s.count), kThreads, 0, stream>>>(p, s.chunk, out);
    return ak_cuda::check_launch();
  });
}

}  // namespace fp32
}  // namespace ak_gemm
