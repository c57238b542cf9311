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
  if (threadIdx.x == 0) {
    sm90::init_ring(bars, Stages, 2 * kConsumerWarps);
    sm90::prefetch_tensormap(&map_a_half);
    sm90::prefetch_tensormap(&map_w);
  }
  sm90::cluster_sync();
  const sm90::WorkPlan plan{1, g.pairs, g.k_tiles};  // rank r takes tile 2 pair + r
  const auto pairs = [&](auto&& piece) {
    sm90::for_each_block_item<2>(plan, [&](const sm90::WorkItem& w) { piece(w.tile, w.kt_begin, w.kt_end); });
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

// AK_ERR_UNSUPPORTED where the form does not apply (not Hopper code, 16 rows of A or fewer or
// more than 64, operands TMA cannot read, no cluster of two fits). At most as many pairs at once
// as the device runs clusters: more would put pairs in a second wave.
template <typename T, int BN, int Stages = kRingStages<BN>>
int launch_multicast(const GemmProblem<T, 1>& p, const StoreC<T>& store, cudaStream_t stream) {
  constexpr auto kernel = skinny_multicast_kernel<T, BN, Stages>;
  constexpr int kSmemBytes = Layout<BN, Stages>::kSmemBytes;
  if (p.m <= 16) return AK_ERR_UNSUPPORTED;
  const int half_rows = (p.m + 15) / 16 * 8;  // ceil(M / 2), rounded up to whole swizzle atoms
  return with_maps<T, BN>(p, half_rows, [&](const CUtensorMap& map_a_half, const CUtensorMap& map_w) {
    if (!allow_shared_memory(kernel, kSmemBytes)) return AK_ERR_UNSUPPORTED;
    const int tiles = (p.n + BN - 1) / BN;
    const PairGrid g{(tiles + 1) / 2, (p.k + kBK - 1) / kBK, half_rows};
    return launch_cluster_grid<kernel>(g.pairs, 2, kThreads, kSmemBytes, stream, map_a_half, map_w, g, store);
  });
}

}  // namespace ak_gemm::skinny_wgmma
