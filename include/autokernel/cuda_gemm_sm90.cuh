// Hopper GEMM for kernels/cuda/matmul.cu and kernels/cuda/fused_mlp.cu (sm_90a only): wgmma
// from shared memory filled by TMA bulk tensor copies, an mbarrier pipeline between a producer
// warpgroup and two consumer warpgroups, and a persistent grid of one block per SM. C++17,
// header-only. Barriers, TMA, descriptors and wgmma: cuda_sm90.cuh.
//
// Block: 384 threads. Warpgroup 0 is the producer: after giving registers back (setmaxnreg) one
// thread walks the block's tiles and, per 64-deep k-tile, waits for a free stage (its `empty`
// mbarrier), arms the stage's `full` mbarrier with the byte count and issues the TMA copies of
// the A tile (128 x 64) and the NB B tiles. Warpgroups 1 and 2 are consumers of rows 0-63 and
// 64-127 of the tile: per k-tile they wait on `full`, issue 4 k16 steps of
// wgmma.m64n{BN}k16 per B matrix, commit, and once the previous k-tile's group has completed
// (wgmma.wait_group 1) release its stage with one arrive per warp. After the last k-tile the
// producer already fills the stages for the block's next tile, and the accumulators leave in
// one of two ways:
//   direct   through the epilogue functor, straight from registers (4-byte global stores: the
//            LSU queue throttles them while the tensor cores wait);
//   staged   (Staged = true, where the staging tiles fit beside the stages and C suits TMA)
//            each consumer rounds its 64 x BN outputs into its own staging tile in shared
//            memory, then one thread sends it to C by TMA stores and the warpgroup starts its
//            next tile at once; the next epilogue first waits until those stores have read the
//            staging tile. TMA clips the edges, so any M and N work.
//
// Split-K (one B matrix, launch_wgmma_gemm's split_k in cuda_gemm_sm90_launch.cuh): the grid's
// items are then (tile, run of k-tiles) pairs, and each item's accumulators go from registers to
// its split's slice of a float workspace, which sum_splits (cuda_gemm_splits.cuh) adds in split
// order and rounds into C.
//
// Shared-memory layouts, all in the 128-byte swizzle that TMA writes (16-byte chunk c of row r
// of each 1024-byte group of 8 rows stored at chunk c ^ (r % 8)):
//   A        K-major: 128 rows of 64 k (128 bytes); descriptor stride between 8-row groups
//            (SBO) 1024 bytes; the k16 step s starts 32 s bytes further in (inside the swizzle
//            row, as the canonical K-major layout allows).
//   B, NK    K-major as A: BN rows of 64 k.
//   B, KN    MN-major: BN / 64 slabs (rounded up: 224 brings in 256 columns, 112 128) of 64 k-rows x 64
//            n (128 bytes), one TMA box each; descriptor LBO = 8192 bytes (next 64 columns of
//            n), SBO = 1024 bytes (next 8 k-rows), the k16 step s starts 2048 s bytes in; wgmma
//            transposes B (imm-trans-b 1).
// Out-of-range rows and columns of a box read as zeros (TMA fills them), so any M, N, K work
// as long as the row strides are multiples of 16 bytes and the bases 16-byte aligned
// (wgmma_eligible()).
//
// Accumulators (PTX ISA, wgmma D fragment for .m64nNk16 with f32): warp w of a consumer
// warpgroup holds rows 16 w + lane / 4 (+ 8); d[4 j + {0, 1}] and d[4 j + {2, 3}] are columns
// 8 j + 2 (lane % 4) + {0, 1} of those two rows.
#pragma once

#include <algorithm>

#include "autokernel/cuda_gemm.cuh"
#include "autokernel/cuda_gemm_stream_k.cuh"
#include "autokernel/cuda_sm90.cuh"
#include "autokernel/split_tail_plan.h"

namespace ak_gemm {
namespace sm90 {

constexpr int kBM = 128, kBK = 64, kThreads = 384, kConsumerWarps = 8;

// What TMA needs: 16-byte aligned bases and row strides (edges need nothing: boxes zero-fill).
template <typename T, int NB>
bool wgmma_eligible(const GemmProblem<T, NB>& p) {
  bool ok = sizeof(T) == 2 && ak_cuda::is_aligned16(p.a) && p.lda % 8 == 0 && p.ldb % 8 == 0 && p.lda > 0 &&
            p.ldb > 0 && hopper_code();
  for (int j = 0; j < NB; ++j) ok = ok && ak_cuda::is_aligned16(p.b[j]);
  return ok;
}

// ---- the kernel ------------------------------------------------------------------------------

// Staged = true reserves, per consumer warpgroup, a 64 x BN staging tile for the epilogue
// (BN / 64 slabs of 64 rows x 128 bytes in the 128-byte swizzle) when it fits beside the stages;
// W::kStaged says whether it did. A width that is not a multiple of 64 (112, 224) ends in a narrower
// slab: B[K, N] still brings in 64 columns for it (those past the tile read and not used), and
// the staging tile keeps its kTailCols columns unswizzled, 64 rows of kTailCols elements.
template <BLayout L, int NB, int BN, int Stages, bool Staged = false>
struct WgmmaTile {
  static_assert(BN == 64 || BN == 112 || BN == 128 || BN == 192 || BN == 224 || BN == 256,
                "wgmma n of 64, 112, 128, 192, 224 or 256");
  static constexpr int kSlabs = (BN + 63) / 64, kTailCols = BN % 64;
  static constexpr int kABytes = kBM * kBK * 2, kBBytes = L == BLayout::NK ? BN * kBK * 2 : kSlabs * 64 * 128;
  static constexpr int kStageBytes = kABytes + NB * kBBytes;
  static constexpr int kSlabBytes = 64 * 128, kTailBytes = 64 * kTailCols * 2;
  static constexpr int kStagingBytes = 2 * ((BN / 64) * kSlabBytes + kTailBytes);
  // Stages, the staging tiles, then a full and an empty barrier per stage, plus slack to align
  // the stages to the 1024 bytes of a swizzle pattern.
  static constexpr int kMaxSmem = 227 * 1024;
  static constexpr bool kStaged =
      Staged && Stages * kStageBytes + kStagingBytes + 2 * Stages * 8 + 1024 <= kMaxSmem;
  static constexpr int kSmemBytes =
      Stages * kStageBytes + (kStaged ? kStagingBytes : 0) + 2 * Stages * 8 + 1024;
};

// The persistent grid's work: tiles_m x tiles_n output tiles, each cut along K into `splits`
// runs of k_chunk k-tiles (the last shorter, none empty). Block b takes items b, b + gridDim.x,
// ...; the splits of one tile are neighbouring items. With splits == 1 the last `tail` tiles may
// run as two pieces each instead (split_tail_plan.h: the last round, halved).
struct WorkPlan {
  int tiles_m, tiles_n, k_tiles;
  int splits = 1, k_chunk = k_tiles;
  int tail = 0;
  __host__ __device__ int items() const { return tiles_m * tiles_n * splits + tail; }
};

struct WorkItem {
  TileCoord tile;
  int split, kt_begin, kt_end;
  split_tail::Piece piece = split_tail::kWhole;
  int pair = 0;  // a piece's split tile (its workspace slots)
};

__device__ __forceinline__ WorkItem work_item(const WorkPlan& w, int item) {
  if (w.tail > 0) {
    const split_tail::Item s = split_tail::item_of(w.tiles_m * w.tiles_n, w.tail, w.k_tiles, item);
    return {tile_of(s.tile, w.tiles_m, w.tiles_n), 0, s.kt_begin, s.kt_end, s.piece, s.pair};
  }
  const int split = item % w.splits, begin = split * w.k_chunk;
  return {tile_of(item / w.splits, w.tiles_m, w.tiles_n), split, begin, min(begin + w.k_chunk, w.k_tiles)};
}

struct WgmmaGrid {
  WorkPlan plan;
  int staged;  // 1: the epilogue stores through the staging tiles and map_c
  // With splits > 1 (one B matrix only), split s's sums of the tile go to partials + s * slice,
  // rows of ldw floats, m x n of them, for sum_splits to add.
  float* partials;
  int64_t slice, ldw;
  int m, n;
  // plan.tail > 0 (one B matrix, no clusters): per split tile and consumer warpgroup a slot of
  // BN / 2 floats a thread and a flag
  stream_k::Slots tail{};
};

// The producer's walk over a ring of Stages stages of stage_bytes each at smem (barriers at
// bars, init_ring's layout): walk(piece) calls piece(tile, kt_begin, kt_end) for each run of
// k-tiles the block computes, in order; for each k-tile it waits for a free stage, arms its full
// barrier with the bytes to come (tx_bytes, at most stage_bytes: copies may fill part of a stage)
// and calls load(tile, kt, dst, full) to issue the copies into it.
template <int Stages, class Walk, class Load>
__device__ __forceinline__ void fill_ring_over(Walk&& walk, uint32_t smem, uint32_t bars,
                                               uint32_t stage_bytes, uint32_t tx_bytes, Load&& load) {
  int stage = 0;
  uint32_t phase = 0;
  walk([&](TileCoord tile, int kt_begin, int kt_end) {
    for (int kt = kt_begin; kt < kt_end; ++kt) {
      const uint32_t full = bars + stage * 8, empty = bars + (Stages + stage) * 8;
      mbar_wait(empty, phase ^ 1);  // a fresh barrier counts its previous phase as complete
      mbar_arrive_expect_tx(full, tx_bytes);
      load(tile, kt, smem + stage * stage_bytes, full);
      if (++stage == Stages) {
        stage = 0;
        phase ^= 1;
      }
    }
  });
}

// visit(item) for each item of a persistent grid the block takes, in order: blockIdx.x, then
// every gridDim.x-th. In clusters of Cluster blocks along N the cluster takes the items (cluster
// index, then every cluster count-th) of a plan whose tile columns are groups of Cluster
// neighbouring columns, and rank r of the cluster the group's column r.
template <int Cluster, class Visit>
__device__ __forceinline__ void for_each_block_item(const WorkPlan& plan, Visit&& visit) {
  const int rank = Cluster > 1 ? static_cast<int>(cluster_rank()) : 0;
  const int first = static_cast<int>(blockIdx.x) / Cluster, step = static_cast<int>(gridDim.x) / Cluster;
  for (int item = first; item < plan.items(); item += step) {
    WorkItem w = work_item(plan, item);
    w.tile.n = w.tile.n * Cluster + rank;
    visit(w);
  }
}

// fill_ring_over the block's items of a persistent grid (for_each_block_item); tx_bytes 0: the
// copies fill whole stages.
template <int Stages, int Cluster = 1, class Load>
__device__ __forceinline__ void fill_ring(const WorkPlan& plan, uint32_t smem, uint32_t bars,
                                          uint32_t stage_bytes, Load&& load, uint32_t tx_bytes = 0) {
  const auto items = [&](auto&& piece) {
    for_each_block_item<Cluster>(plan, [&](const WorkItem& w) { piece(w.tile, w.kt_begin, w.kt_end); });
  };
  fill_ring_over<Stages>(items, smem, bars, stage_bytes, tx_bytes == 0 ? stage_bytes : tx_bytes, load);
}

// A consumer warp's release of a stage: on its own block's empty barrier and, in a cluster of two,
// on the peer's (its rank; kNoPeer outside clusters), whose producer multicasts into this stage too.
constexpr int kNoPeer = -1;
__device__ __forceinline__ void release_stage(uint32_t empty, int peer) {
  mbar_arrive(empty);
  if (peer != kNoPeer) mbar_arrive_remote(empty, static_cast<uint32_t>(peer));
}

// Cluster = 2: each block brings in its half of the A tile (map_a's boxes are 64 rows) and TMA
// multicasts it into both blocks' stage; each block's full barrier counts the whole stage.
template <BLayout L, int NB, int BN, int Stages, int Cluster>
__device__ __forceinline__ void produce(const CUtensorMap* map_a, const CUtensorMap* map_b0,
                                        const CUtensorMap* map_b1, uint32_t smem, uint32_t bars,
                                        WgmmaGrid g) {
  using W = WgmmaTile<L, NB, BN, Stages>;
  const int rank = Cluster > 1 ? static_cast<int>(cluster_rank()) : 0;
  const auto load = [&](TileCoord tile, int kt, uint32_t dst, uint32_t full) {
    if constexpr (Cluster > 1)
      tma_load_multicast(dst + rank * (W::kABytes / 2), map_a, kt * kBK, tile.m * kBM + rank * (kBM / 2),
                         full, 0b11);
    else
      tma_load(dst, map_a, kt * kBK, tile.m * kBM, full);
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
      const CUtensorMap* map_b = nb == 0 ? map_b0 : map_b1;
      const uint32_t b = dst + W::kABytes + nb * W::kBBytes;
      if constexpr (L == BLayout::NK) {
        tma_load(b, map_b, kt * kBK, tile.n * BN, full);
      } else {
#pragma unroll
        for (int s = 0; s < W::kSlabs; ++s)
          tma_load(b + s * 8192, map_b, tile.n * BN + 64 * s, kt * kBK, full);
      }
    }
  };
  fill_ring<Stages, Cluster>(g.plan, smem, bars, W::kStageBytes, load);
}

// Calls visit(j, half, v0, v1) for each pair of adjacent outputs this thread holds: columns
// 8 j + 2 (lane % 4) + {0, 1} of its row + 8 half, v0 and v1 their NB accumulators.
template <int NB, int BN, class Visit>
__device__ __forceinline__ void for_each_output_pair(const float (&acc)[NB][BN / 2], Visit&& visit) {
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float v0[NB], v1[NB];
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        v0[nb] = acc[nb][4 * j + 2 * half];
        v1[nb] = acc[nb][4 * j + 2 * half + 1];
      }
      visit(j, half, v0, v1);
    }
}

// The accumulators of one consumer warpgroup (64 rows of the tile) through the epilogue functor,
// straight from registers.
template <int NB, int BN, class Epi>
__device__ __forceinline__ void store_direct(const float (&acc)[NB][BN / 2], TileCoord tile, int consumer,
                                             const Epi& epi) {
  const int warp = static_cast<int>(threadIdx.x / 32) % 4, lane = static_cast<int>(threadIdx.x % 32);
  const int row = tile.m * kBM + consumer * 64 + warp * 16 + lane / 4;
  for_each_output_pair<NB, BN>(acc, [&](int j, int half, const float(&v0)[NB], const float(&v1)[NB]) {
    epi(row + 8 * half, tile.n * BN + 8 * j + 2 * (lane % 4), v0, v1);
  });
}

// The same values (Epi::combine of the NB accumulators, rounded once to T) written into the
// consumer's staging tile, then sent to C by TMA from one thread. The consumer goes on to its
// next tile while the copy drains; the next epilogue first waits until the copy has read the
// staging tile. Rows r of a slab hold chunk c at c ^ (r % 8) (the map's 128-byte swizzle): for
// one store instruction the 32 lanes hit 32 different banks. A 224-wide tile's last 32 columns
// (a 112-wide one's last 48) go by map_c_tail from rows of 64 (96) bytes, unswizzled: 4-way (2-way)
// bank conflicts on those stores.
template <typename T, int NB, int BN, class Epi>
__device__ __forceinline__ void store_staged(const float (&acc)[NB][BN / 2], TileCoord tile, int consumer,
                                             uint32_t staging, const CUtensorMap* map_c,
                                             const CUtensorMap* map_c_tail) {
  constexpr int kWholeSlabs = BN / 64, kTailCols = BN % 64;
  const int warp = static_cast<int>(threadIdx.x / 32) % 4, lane = static_cast<int>(threadIdx.x % 32);
  const bool issuer = threadIdx.x % 128 == 0;
  if (issuer) bulk_wait_read();
  warpgroup_sync(consumer);
  for_each_output_pair<NB, BN>(acc, [&](int j, int half, const float(&v0)[NB], const float(&v1)[NB]) {
    const T two[2] = {from_float<T>(Epi::combine(v0)), from_float<T>(Epi::combine(v1))};
    const int r = warp * 16 + lane / 4 + 8 * half;  // r % 8 == lane / 4
    const uint32_t addr =
        j / 8 < kWholeSlabs
            ? staging + (j / 8) * (64 * 128) + r * 128 + (((j % 8) ^ (lane / 4)) * 16) + 4 * (lane % 4)
            : staging + kWholeSlabs * (64 * 128) + r * (kTailCols * 2) + (j % 8) * 16 + 4 * (lane % 4);
    st_shared_u32(addr, *reinterpret_cast<const uint32_t*>(two));
  });
  fence_async_shared();
  warpgroup_sync(consumer);
  if (issuer) {
    const int row = tile.m * kBM + consumer * 64;
#pragma unroll
    for (int s = 0; s < kWholeSlabs; ++s)
      tma_store(map_c, staging + s * (64 * 128), tile.n * BN + 64 * s, row);
    if constexpr (kTailCols > 0)
      tma_store(map_c_tail, staging + kWholeSlabs * (64 * 128), tile.n * BN + 64 * kWholeSlabs, row);
    bulk_commit();
  }
}

template <typename T, BLayout L, int NB, int BN, int Stages, bool Staged, int Cluster, class Epi>
__device__ __forceinline__ void consume(uint32_t smem, uint32_t bars, WgmmaGrid g, const Epi& epi,
                                        const CUtensorMap* map_c, const CUtensorMap* map_c_tail,
                                        int consumer) {
  using W = WgmmaTile<L, NB, BN, Stages, Staged>;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const uint32_t staging = smem + Stages * W::kStageBytes + consumer * (W::kStagingBytes / 2);
  const int peer = Cluster > 1 ? static_cast<int>(cluster_rank() ^ 1) : kNoPeer;
  int stage = 0;
  uint32_t phase = 0;
  for_each_block_item<Cluster>(g.plan, [&](const WorkItem& w) {
    const TileCoord tile = w.tile;
    float acc[NB][BN / 2];
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[nb][i] = 0.0f;
    int held = -1;  // the stage the last committed group still reads
    for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
      mbar_wait(bars + stage * 8, phase);
      const uint32_t a = smem + stage * W::kStageBytes + consumer * 64 * 128;
      const uint32_t b0 = smem + stage * W::kStageBytes + W::kABytes;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        const uint64_t desc_a = smem_desc(a + kk * 32, 16, 1024);
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
          const uint32_t b = b0 + nb * W::kBBytes;
          if constexpr (L == BLayout::NK)
            wgmma<T, BN, false>(acc[nb], desc_a, smem_desc(b + kk * 32, 16, 1024));
          else
            wgmma<T, BN, true>(acc[nb], desc_a, smem_desc(b + kk * 2048, 8192, 1024));
        }
      }
      wgmma_commit();
      wgmma_wait<1>();  // the previous k-tile's group is done: its stage can be refilled
      if (held >= 0 && lane == 0) release_stage(bars + (Stages + held) * 8, peer);
      held = stage;
      if (++stage == Stages) {
        stage = 0;
        phase ^= 1;
      }
    }
    wgmma_wait<0>();
    if (held >= 0 && lane == 0) release_stage(bars + (Stages + held) * 8, peer);
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) fence_register(acc[nb][i]);

    if constexpr (NB == 1 && Cluster == 1) {
      // A split tile's helper leaves its sums to the owner, which adds them before its epilogue.
      const int64_t slot = 2 * static_cast<int64_t>(w.pair) + consumer;
      if (w.piece == split_tail::kHelper) {
        stream_k::publish_slot<BN / 2>(g.tail, slot, acc[0], 1 + consumer);
        return;
      }
      if (w.piece == split_tail::kOwner) {
        stream_k::await_slot(g.tail, slot, 1 + consumer);
        stream_k::add_slot<BN / 2>(g.tail.slots, slot, acc[0]);
      }
    }
    if constexpr (NB == 1) {
      if (g.plan.splits > 1) {
        const StoreC<float> part{g.partials + w.split * g.slice, g.ldw, g.m, g.n, true};
        store_direct<NB, BN>(acc, tile, consumer, part);
        return;
      }
    }
    if constexpr (W::kStaged) {
      if (g.staged) {
        store_staged<T, NB, BN, Epi>(acc, tile, consumer, staging, map_c, map_c_tail);
        return;
      }
    }
    store_direct<NB, BN>(acc, tile, consumer, epi);
  });
  if constexpr (W::kStaged) {
    if (g.staged && threadIdx.x % 128 == 0) bulk_wait_read();  // the block's memory outlives the reads
  }
}

// Cluster = 2 (launched in clusters of two along N): the blocks of a cluster share each A tile
// (produce), both walk the same items, and the cluster synchronizes after the barriers are made
// (the peer arrives on them and multicasts into this block) and before either block leaves.
template <typename T, BLayout L, int NB, int BN, int Stages, bool Staged, int Cluster, class Epi>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b0,
                      const __grid_constant__ CUtensorMap map_b1, const __grid_constant__ CUtensorMap map_c,
                      const __grid_constant__ CUtensorMap map_c_tail, const WgmmaGrid g, const Epi epi) {
#if AK_SM90_CODE
  using W = WgmmaTile<L, NB, BN, Stages, Staged>;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t smem = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const uint32_t bars = smem + Stages * W::kStageBytes + (W::kStaged ? W::kStagingBytes : 0);
  const auto init = [&] {
    init_ring(bars, Stages, Cluster * kConsumerWarps);
    prefetch_tensormap(&map_a);
    prefetch_tensormap(&map_b0);
    if constexpr (NB > 1) prefetch_tensormap(&map_b1);
    if (g.staged) prefetch_tensormap(&map_c);
    if (g.staged && W::kTailCols > 0) prefetch_tensormap(&map_c_tail);
  };
  const auto produce_tiles = [&] {
    produce<L, NB, BN, Stages, Cluster>(&map_a, &map_b0, &map_b1, smem, bars, g);
  };
  const auto consume_tiles = [&](int consumer) {
    consume<T, L, NB, BN, Stages, Staged, Cluster>(smem, bars, g, epi, &map_c, &map_c_tail, consumer);
  };
  if constexpr (Cluster > 1) {
    if (threadIdx.x == 0) init();
    cluster_sync();
    split_warpgroups([] {}, produce_tiles, consume_tiles);
    cluster_sync();
  } else {
    split_warpgroups(init, produce_tiles, consume_tiles);
  }
#else
  __trap();
#endif
}

}  // namespace sm90
}  // namespace ak_gemm
