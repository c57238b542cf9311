// fp32 GEMM on CUDA cores for kernels/cuda/fused_mlp.cu (its fp32 path) and kernels/cuda/matmul.cu
// (fp32 with B as a Linear's [N, K] weight): FFMA, 128 x (128 / NB) x 8 tiles, 8 x (8 / NB)
// outputs per thread, either layout of B, NB right-hand matrices sharing a tile, the epilogue
// functors of cuda_gemm.cuh. C++17, header-only. Deterministic: one thread's fixed-order sum per
// output.
#pragma once

#include "autokernel/cuda_gemm.cuh"

namespace ak_gemm {

// ---- fp32 path (FFMA) ---------------------------------------------------------------------------

// 256 threads as 16 x 16; thread (ty, tx) owns rows ty + 16 i (i < 8) and, per matrix, the
// column pairs 2 tx + 32 j + {0, 1} (j < 4 / NB). The next k-tile is read into registers while
// the current one is computed from shared memory.
template <BLayout L, int NB>
struct SimtTile {
  static constexpr int kThreads = 256, kBM = 128, kBN = 128 / NB, kBK = 8;
  static constexpr int kPairs = 4 / NB;  // column pairs per thread and matrix
  static constexpr int kALoads = kBM * kBK / kThreads, kBLoads = kBN * kBK / kThreads;
};

template <BLayout L, int NB>
__device__ __forceinline__ void simt_fetch(const GemmProblem<float, NB>& p, int m0, int n0, int k0,
                                           float (&ra)[SimtTile<L, NB>::kALoads],
                                           float (&rb)[NB][SimtTile<L, NB>::kBLoads]) {
  using S = SimtTile<L, NB>;
  const int t = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int i = 0; i < S::kALoads; ++i) {
    const int idx = t + i * S::kThreads, m = m0 + idx / S::kBK, k = k0 + idx % S::kBK;
    ra[i] = (m < p.m && k < p.k) ? p.a[static_cast<int64_t>(m) * p.lda + k] : 0.0f;
  }
#pragma unroll
  for (int nb = 0; nb < NB; ++nb)
#pragma unroll
    for (int i = 0; i < S::kBLoads; ++i) {
      const int idx = t + i * S::kThreads;
      if constexpr (L == BLayout::KN) {
        const int k = k0 + idx / S::kBN, n = n0 + idx % S::kBN;
        rb[nb][i] = (k < p.k && n < p.n) ? p.b[nb][static_cast<int64_t>(k) * p.ldb + n] : 0.0f;
      } else {
        const int n = n0 + idx / S::kBK, k = k0 + idx % S::kBK;
        rb[nb][i] = (k < p.k && n < p.n) ? p.b[nb][static_cast<int64_t>(n) * p.ldb + k] : 0.0f;
      }
    }
}

template <BLayout L, int NB, class Epi>
__global__ void __launch_bounds__(256) simt_gemm_kernel(const GemmProblem<float, NB> p, const Epi epi) {
  using S = SimtTile<L, NB>;
  constexpr int BM = S::kBM, BN = S::kBN, BK = S::kBK;
  __shared__ float as[BK][BM + 1];  // +1: the transposing stores spread over the banks
  __shared__ __align__(16) float bs[NB][BK][BN];
  const TileCoord tile = tile_of(static_cast<int>(blockIdx.x), (p.m + BM - 1) / BM, (p.n + BN - 1) / BN);
  const int m0 = tile.m * BM, n0 = tile.n * BN;
  const int t = static_cast<int>(threadIdx.x), ty = t / 16, tx = t % 16;

  float acc[NB][8][2 * S::kPairs];
#pragma unroll
  for (int nb = 0; nb < NB; ++nb)
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 2 * S::kPairs; ++j) acc[nb][i][j] = 0.0f;

  float ra[S::kALoads], rb[NB][S::kBLoads];
  simt_fetch<L, NB>(p, m0, n0, 0, ra, rb);
#pragma unroll 1
  for (int k0 = 0; k0 < p.k; k0 += BK) {
    __syncthreads();  // everyone is done reading the previous tile
#pragma unroll
    for (int i = 0; i < S::kALoads; ++i) {
      const int idx = t + i * S::kThreads;
      as[idx % BK][idx / BK] = ra[i];
    }
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int i = 0; i < S::kBLoads; ++i) {
        const int idx = t + i * S::kThreads;
        if constexpr (L == BLayout::KN)
          bs[nb][idx / BN][idx % BN] = rb[nb][i];
        else
          bs[nb][idx % BK][idx / BK] = rb[nb][i];
      }
    __syncthreads();
    if (k0 + BK < p.k) simt_fetch<L, NB>(p, m0, n0, k0 + BK, ra, rb);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) a[i] = as[k][ty + 16 * i];
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int j = 0; j < S::kPairs; ++j) {
          const float2 b = *reinterpret_cast<const float2*>(&bs[nb][k][2 * tx + 32 * j]);
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            acc[nb][i][2 * j] = fmaf(a[i], b.x, acc[nb][i][2 * j]);
            acc[nb][i][2 * j + 1] = fmaf(a[i], b.y, acc[nb][i][2 * j + 1]);
          }
        }
    }
  }

#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < S::kPairs; ++j) {
      float v0[NB], v1[NB];
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        v0[nb] = acc[nb][i][2 * j];
        v1[nb] = acc[nb][i][2 * j + 1];
      }
      epi(m0 + ty + 16 * i, n0 + 2 * tx + 32 * j, v0, v1);
    }
}

template <BLayout L, int NB, class Epi>
int launch_simt_gemm(const GemmProblem<float, NB>& p, const Epi& epi, cudaStream_t stream) {
  using S = SimtTile<L, NB>;
  const int64_t tiles = static_cast<int64_t>((p.m + S::kBM - 1) / S::kBM) * ((p.n + S::kBN - 1) / S::kBN);
  if (tiles > INT_MAX) return AK_ERR_UNSUPPORTED;
  simt_gemm_kernel<L, NB, Epi><<<static_cast<unsigned>(tiles), S::kThreads, 0, stream>>>(p, epi);
  return ak_cuda::check_launch();
}

}  // namespace ak_gemm
