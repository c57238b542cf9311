// The wgmma form of the skinny products (cuda_gemm_skinny_wgmma.cuh) in clusters of two blocks
// that share A (kernels/cuda/matmul.cu, SKINNY_MULTICAST): C[M, N] = A[M, K] W[N, K]^T, 17 to 64
// rows of A, fp16/bf16, sm_90a only.
//
// Why: every block of the wgmma form reads all of A's rows from L2 for each tile of W, twice W's
// bytes at 32 rows of W a tile (64 x 4096 x 4096: 64 MB of A against W's 32 MB). cuBLAS's kernel
// for these shapes (nvjet_sm90_hsh_64x32_64x16_1x2, docs/benchmarks.md, twenty-eighth session) runs
// clusters of two blocks along W's tiles: each block brings half of A's tile from L2 and TMA
// multicasts it into both blocks' shared memory, which halves L2's reads of A.
//
// A cluster takes pairs of neighbouring tiles of W (rank r the tile 2 pair + r), persistent over
// the pairs, both blocks over the same k-tiles in the same order. Per k-tile, each block's producer
// waits until its stage is free in both blocks (its empty barrier counts both blocks' consumer
// warps: each consumer warp arrives on its own block's barrier and on the peer's), arms its full
// barrier with all the bytes its stage receives (both halves of A and its own W) and issues two
// copies: its half of A's rows (a box of half_rows, a multiple of 8 so that each half starts on a
// whole 1024-byte swizzle atom) to both blocks, and its tile of W to itself. A copy of the peer's
// may complete on a block's barrier before that block arms it; the phase still ends only after the
// arming arrive. The cluster synchronizes after the barriers are made (the peer arrives on them)
// and before either block leaves (the peer's copies and arrivals may still be on their way).
// No split-K: pairs of tiles that leave SMs idle are the whole-tile form's case.
//
// Tuning (template): BN and Stages as the wgmma form's Layout.
#pragma once

#include <algorithm>
#include <atomic>

#include "autokernel/cuda_gemm_skinny_wgmma.cuh"

namespace ak_gemm::skinny_wgmma {

struct PairGrid {
  int pairs, k_tiles, half_rows;  // half_rows: A's rows each block of a pair brings in
};

template <typename T, int BN, int Stages>
__global__ void __launch_bounds__(kThreads, 1)
    skinny_multicast_kernel(const __grid_constant__ CUtensorMap map_a_half,
                            const __grid_constant__ CUtensorMap map_w, const PairGrid g,
                            const StoreC<T> store) {
#if AK_SM90_CODE
  using S = Layout<BN, Stages>;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t smem = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const uint32_t bars = smem + Stages * S::kStageBytes;
  const int rank = static_cast<int>(sm90::cluster_rank()), peer = rank ^ 1;
  if (threadIdx.x == 0) sm90::init_ring(bars, Stages, 2 * kConsumerWarps);
  sm90::cluster_sync();
  const int cluster = static_cast<int>(blockIdx.x) / 2, clusters = static_cast<int>(gridDim.x) / 2;
  const auto pairs = [&](auto&& piece) {
    for (int pair = cluster; pair < g.pairs; pair += clusters)
      piece(TileCoord{0, 2 * pair + rank}, 0, g.k_tiles);
  };
  if (threadIdx.x == 0) {
    const uint32_t half_bytes = static_cast<uint32_t>(g.half_rows) * kBK * 2;
    sm90::fill_ring_over<Stages>(pairs, smem, bars, S::kStageBytes, 2 * half_bytes + S::kWBytes,
                                 [&](TileCoord tile, int kt, uint32_t dst, uint32_t full) {
                                   sm90::tma_load_multicast(dst + rank * half_bytes, &map_a_half, kt * kBK,
                                                            rank * g.half_rows, full, 0b11);
                                   sm90::tma_load(dst + S::kABytes, &map_w, kt * kBK, tile.n * BN, full);
                                 });
  } else if (threadIdx.x >= 128) {
    const sm90::Ring ring{bars, Stages};
    int n_used = 0;
    pairs([&](TileCoord tile, int kt_begin, int kt_end) {
      float acc[1][BN / 2];
      accumulate<T, BN, Stages>(acc[0], smem, ring, kt_begin, kt_end, n_used, peer);
      sm90::store_direct<1, BN>(acc, tile, 0, store);
    });
  }
  sm90::cluster_sync();
#else
  __trap();
#endif
}

// How many clusters of two of this kernel the device runs at once (0 where it cannot say), read
// once per instantiation: more would put pairs in a second wave.
template <typename T, int BN, int Stages>
int pairs_that_fit(cudaLaunchConfig_t config) {
  static std::atomic<int> known{0};  // the count + 1, 0 until read
  if (known.load() == 0) {
    int count = 0;
    if (cudaOccupancyMaxActiveClusters(&count, skinny_multicast_kernel<T, BN, Stages>, &config) !=
        cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: the call only asked
      count = 0;
    }
    known.store(count + 1);
  }
  return known.load() - 1;
}

// AK_ERR_UNSUPPORTED where the form does not apply (not Hopper code, 16 rows of A or fewer or
// more than 64, operands TMA cannot read, no cluster of two fits).
template <typename T, int BN, int Stages>
int launch_multicast(const GemmProblem<T, 1>& p, const StoreC<T>& store, cudaStream_t stream) {
  using S = Layout<BN, Stages>;
  if (p.m <= 16 || p.m > kRowsA || !sm90::wgmma_eligible(p)) return AK_ERR_UNSUPPORTED;
  const int half_rows = (p.m + 15) / 16 * 8;  // ceil(M / 2), rounded up to whole swizzle atoms
  CUtensorMap map_a_half, map_w;
  if (!sm90::make_tensor_map(&map_a_half, p.a, p.m, p.k, p.lda, half_rows) ||
      !sm90::make_tensor_map(&map_w, p.b[0], p.n, p.k, p.ldb, BN))
    return AK_ERR_UNSUPPORTED;
  const auto kernel = skinny_multicast_kernel<T, BN, Stages>;
  if (!allow_shared_memory(kernel, S::kSmemBytes)) return AK_ERR_UNSUPPORTED;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeClusterDimension;
  attribute[0].val.clusterDim.x = 2;
  attribute[0].val.clusterDim.y = 1;
  attribute[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t config = {};
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = static_cast<size_t>(S::kSmemBytes);
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = 1;
  config.gridDim = dim3(2);
  const int fit = pairs_that_fit<T, BN, Stages>(config);
  if (fit <= 0) return AK_ERR_UNSUPPORTED;
  const int tiles = (p.n + BN - 1) / BN;
  const PairGrid g{(tiles + 1) / 2, (p.k + kBK - 1) / kBK, half_rows};
  config.gridDim = dim3(static_cast<unsigned>(2 * std::min(g.pairs, fit)));
  if (cudaLaunchKernelEx(&config, kernel, map_a_half, map_w, g, store) == cudaSuccess) return AK_OK;
  (void)cudaGetLastError();
  return AK_ERR_LAUNCH;
}

}  // namespace ak_gemm::skinny_wgmma
