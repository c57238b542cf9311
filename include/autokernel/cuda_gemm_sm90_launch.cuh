// The host side of cuda_gemm_sm90.cuh's GEMM (kernels/cuda/matmul.cu, fused_mlp.cu and the
// skinny wgmma form's split-K): the tensor maps and the persistent grid of one launch, split-K
// over a float workspace, and the tile width the defaults pick per call. C++17, header-only.
#pragma once

#include <algorithm>
#include <climits>

#include "autokernel/cuda_gemm.cuh"
#include "autokernel/cuda_gemm_sm90.cuh"
#include "autokernel/cuda_gemm_splits.cuh"
#include "autokernel/tile_width_plan.h"

namespace ak_gemm {
namespace sm90 {

// The fewest k-tiles a split runs: its pipeline fills and drains once, and its partial sums
// cross memory twice.
constexpr int kMinSplitKTiles = 4;

// run(g) with g's K cut as split_k says (1: never; 0: where the tiles leave more than half the
// SMs idle, choose_splits; n > 1: n, fewer when K is short or the workspace would pass
// kMaxWorkspaceBytes): each split's sums into a float workspace, which sum_splits then adds in
// split order and rounds into C (c, ldc).
template <typename T, class Run>
int run_split_k(WgmmaGrid g, int sms, int split_k, T* c, int64_t ldc, cudaStream_t stream, Run&& run) {
  if (split_k != 1) {
    const int64_t tiles = static_cast<int64_t>(g.plan.tiles_m) * g.plan.tiles_n;
    const int64_t ldw = (static_cast<int64_t>(g.n) + 3) / 4 * 4, slice = ldw * g.m;
    const Splits s = choose_splits(g.plan.k_tiles, tiles, sms, kMinSplitKTiles, INT_MAX, 1, slice, split_k);
    if (s.count > 1 && tiles * s.count <= INT_MAX) {
      g.plan.splits = s.count;
      g.plan.k_chunk = s.chunk;
      return with_split_workspace(s.count, slice, ldw, g.m, g.n, c, ldc, stream, [&](float* w) {
        g.partials = w;
        g.slice = slice;
        g.ldw = ldw;
        return run(g);
      });
    }
  }
  return run(g);
}

// run(g) with the last round's tiles cut in two along K where split_tail_plan.h's tiles_to_split
// says (whole tiles only: none where split-K cut them), the pieces' sums meeting in a workspace of
// a slot per split tile and consumer warpgroup (BN / 2 floats a thread) and a flag each.
template <int BN, class Run>
int run_split_tail(WgmmaGrid g, int sms, cudaStream_t stream, Run&& run) {
  const int64_t tiles = static_cast<int64_t>(g.plan.tiles_m) * g.plan.tiles_n;
  const int64_t split = g.plan.splits == 1 ? split_tail::tiles_to_split(tiles, g.plan.k_tiles, sms) : 0;
  if (split == 0) return run(g);
  g.plan.tail = static_cast<int>(split);
  return stream_k::with_slots(2 * split, int64_t{BN / 2} * 128, stream, [&](const stream_k::Slots& slots) {
    g.tail = slots;
    return run(g);
  });
}

// AK_ERR_UNSUPPORTED when the tensor maps cannot be made (the caller then takes another path).
// Staged: store C through shared memory and TMA (epi.target() names C; Epi::combine gives each
// value) where the staging tiles fit and C's base and row stride suit TMA; else from registers.
// split_k (one B matrix storing through StoreC only; others take 1): 1 runs each tile's K in one
// block; 0 cuts K into splits where the tiles leave more than half the SMs idle (choose_splits,
// whole waves, at least kMinSplitKTiles each); n > 1 takes n, fewer when K is short or the
// workspace would pass kMaxWorkspaceBytes.
// split_tails (one B matrix storing through StoreC, no clusters): the last round's tiles in two
// pieces along K where run_split_tail says.
// Cluster = 2: clusters of two blocks along N sharing each A tile by TMA multicast, as many at
// once as the device runs (AK_ERR_UNSUPPORTED where none fits); no split-K.
template <typename T, BLayout L, int NB, int BN, int Stages, bool Staged = false, int Cluster = 1, class Epi>
int launch_wgmma_gemm(const GemmProblem<T, NB>& p, const Epi& epi, cudaStream_t stream, int split_k = 1,
                      bool split_tails = false) {
  static_assert(Cluster == 1 || Cluster == 2, "clusters of one or two blocks");
  using W = WgmmaTile<L, NB, BN, Stages, Staged>;
  CUtensorMap maps[5];  // A, the B matrices, C and C's last narrow slab (W::kTailCols)
  if (!make_tensor_map(&maps[0], p.a, p.m, p.k, p.lda, kBM / Cluster)) return AK_ERR_UNSUPPORTED;
  for (int nb = 0; nb < NB; ++nb) {
    const bool made = L == BLayout::NK ? make_tensor_map(&maps[1 + nb], p.b[nb], p.n, p.k, p.ldb, BN)
                                       : make_tensor_map(&maps[1 + nb], p.b[nb], p.k, p.n, p.ldb, 64);
    if (!made) return AK_ERR_UNSUPPORTED;
  }
  if (NB == 1) maps[2] = maps[1];
  maps[3] = maps[4] = maps[0];
  int staged = 0;
  if constexpr (W::kStaged) {
    const auto& c = epi.target();
    staged = ak_cuda::is_aligned16(c.c) && c.ldc % 8 == 0 && c.ldc >= c.n &&
             make_tensor_map(&maps[3], c.c, c.m, c.n, c.ldc, 64) &&
             (W::kTailCols == 0 || make_tensor_map(&maps[4], c.c, c.m, c.n, c.ldc, 64, W::kTailCols));
  }
  // With clusters the plan's tile columns are groups of Cluster columns (the last may reach past N:
  // TMA reads zeros there and stores nothing).
  const int tile_columns = ((p.n + BN - 1) / BN + Cluster - 1) / Cluster;
  WgmmaGrid g{{(p.m + kBM - 1) / kBM, tile_columns, (p.k + kBK - 1) / kBK}, staged, nullptr, 0, 0, p.m, p.n};
  const int64_t tiles = static_cast<int64_t>(g.plan.tiles_m) * g.plan.tiles_n;
  const int sms = device_attribute(cudaDevAttrMultiProcessorCount);
  if (tiles > INT_MAX || sms <= 0) return AK_ERR_UNSUPPORTED;
  constexpr auto kernel = wgmma_gemm_kernel<T, L, NB, BN, Stages, Staged, Cluster, Epi>;
  if (!allow_shared_memory(kernel, W::kSmemBytes)) return AK_ERR_UNSUPPORTED;
  if constexpr (Cluster > 1) {
    return launch_cluster_grid<kernel>(g.plan.items(), Cluster, kThreads, W::kSmemBytes, stream, maps[0],
                                       maps[1], maps[2], maps[3], maps[4], g, epi);
  } else {
    const auto run = [&](const WgmmaGrid& grid) {
      const unsigned blocks = static_cast<unsigned>(std::min(grid.plan.items(), sms));
      kernel<<<blocks, kThreads, W::kSmemBytes, stream>>>(maps[0], maps[1], maps[2], maps[3], maps[4], grid,
                                                          epi);
      return ak_cuda::check_launch();
    };
    if constexpr (NB == 1 && std::is_same_v<Epi, StoreC<T>>) {
      const auto run_tail = [&](const WgmmaGrid& grid) {
        return split_tails ? run_split_tail<BN>(grid, sms, stream, run) : run(grid);
      };
      return run_split_k(g, sms, split_k, epi.c, epi.ldc, stream, run_tail);
    }
    return run(g);
  }
}

// pick_tile_width (tile_width_plan.h) on this device's SMs; split_k_tiles > 0: K's k-tiles where
// the launch may split the last round (its waves counted so).
static_assert(kTileRows == kBM, "tile_width_plan.h counts the wgmma tiles' rows");
inline int auto_tile_width(int m, int n, int split_k_tiles = 0) {
  return pick_tile_width(m, n, device_attribute(cudaDevAttrMultiProcessorCount), split_k_tiles);
}

// One B matrix at auto_tile_width's width: 64 or 112 with 5 stages, 192 with 4, 224 or 256 with 3, each
// with room for the TMA store's staging tiles beside its stages; split_k, split_tails and Cluster
// as launch_wgmma_gemm's (the width counting split tails where they are on).
template <typename T, BLayout L, bool Staged, int Cluster = 1, class Epi>
int launch_wgmma_gemm_auto_width(const GemmProblem<T, 1>& p, const Epi& epi, cudaStream_t stream,
                                 int split_k = 1, bool split_tails = false) {
  const int split_k_tiles = split_tails && Cluster == 1 ? (p.k + kBK - 1) / kBK : 0;
  switch (auto_tile_width(p.m, p.n, split_k_tiles)) {
    case 64: return launch_wgmma_gemm<T, L, 1, 64, 5, Staged, Cluster>(p, epi, stream, split_k, split_tails);
    case 112:
      return launch_wgmma_gemm<T, L, 1, 112, 5, Staged, Cluster>(p, epi, stream, split_k, split_tails);
    case 192:
      return launch_wgmma_gemm<T, L, 1, 192, 4, Staged, Cluster>(p, epi, stream, split_k, split_tails);
    case 224:
      return launch_wgmma_gemm<T, L, 1, 224, 3, Staged, Cluster>(p, epi, stream, split_k, split_tails);
    default: return launch_wgmma_gemm<T, L, 1, 256, 3, Staged, Cluster>(p, epi, stream, split_k, split_tails);
  }
}

}  // namespace sm90
}  // namespace ak_gemm
