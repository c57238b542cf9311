// Skinny products on Hopper's asynchronous tensor cores (kernels/cuda/matmul.cu, SKINNY_WGMMA):
// C[M, N] = A[M, K] W[N, K]^T for up to 64 rows of A, fp16/bf16, sm_90a only.
//
// Why: the shared-memory form (cuda_gemm_skinny_staged.cuh) is bound past 32 rows of A by its
// warps' issue, not by bytes: at 64 x 4096 x 4096 its eight warps issue in 46% of the cycles,
// stalled on mma.sync chains and shared-memory loads, for 25.5k active cycles against cuBLAS's
// 18.8k (docs/benchmarks.md, twenty-eighth session). cuBLAS's kernel there is a wgmma tile of 64
// rows of A against 32 rows of W, fed by TMA through a deep ring: one instruction reads a whole
// 64 x 32 x 16 step from shared memory, and the warps are left waiting on memory, as they should.
//
// Block: 256 threads. Warpgroup 0's first thread is the producer: per 64-deep k-tile it waits for
// a free stage, arms its full barrier and issues two TMA copies, A's M rows (the stage's rows
// past M stay unwritten: see the kernel) and W's BN rows. Warpgroup 1 consumes: per k-tile 4
// wgmma.m64n{BN}k16 with both operands from shared memory (K-major, 128-byte swizzle, as
// cuda_gemm_sm90.cuh's NK path), then frees the previous k-tile's stage once its group has
// completed. Two schedules (the kernel's Work):
//   Grid            persistent over (tile of W, run of K) items (sm90::WorkPlan with one row of
//                   tiles); with split-K each run's sums go to a float workspace that sum_splits
//                   adds in split order, as the wgmma GEMM does. From 17 rows of A.
//   stream_k::Plan  an equal run of (tile, k-tile) iterations an SM, a tile cut between blocks
//                   finished by its owner in-kernel (cuda_gemm_stream_k.cuh): no partial last
//                   wave, no second kernel. Any M up to 64.
//
// Tuning (template): BN, 32, 64, 96, 112 or 128 rows of W a tile (skinny::kWgmmaWidths); Stages,
// the ring's depth, by default as many stages as about 192 KB hold (kRingStages: 12, 16, 20, 22
// and 24 KB a stage; 16, 12, 9, 8 and 8 stages). launch_skinny_wgmma
// (cuda_gemm_skinny_wgmma_launch.cuh) picks schedule and width.
#pragma once

#include <algorithm>
#include <type_traits>

#include "autokernel/cuda_gemm.cuh"
#include "autokernel/cuda_gemm_sm90_launch.cuh"
#include "autokernel/cuda_gemm_stream_k.cuh"
#include "autokernel/cuda_sm90.cuh"
#include "autokernel/skinny_plan.h"

namespace ak_gemm::skinny_wgmma {

using sm90::kBK;
constexpr int kRowsA = 64, kThreads = 256, kConsumerWarps = 4;
constexpr int kConsumerBarrier = 1;  // the consumer warpgroup's named barrier (sm90::warpgroup_sync(0))

// The ring's depth at a width: as many stages of A's 64 rows and W's BN rows (64 k each) as about
// 192 KB hold.
template <int BN>
constexpr int kRingStages = 192 * 1024 / ((kRowsA + BN) * kBK * 2);
// The depths the H200 and H100 measured at 32, 64 and 128 (docs/benchmarks.md).
static_assert(kRingStages<32> == 16 && kRingStages<64> == 12 && kRingStages<128> == 8);

template <int BN, int Stages>
struct Layout {
  static_assert(skinny::is_wgmma_width(BN), "tiles of one of skinny::kWgmmaWidths rows of W");
  static constexpr int kABytes = kRowsA * kBK * 2, kWBytes = BN * kBK * 2;
  static constexpr int kStageBytes = kABytes + kWBytes;  // a multiple of the swizzle's 1024 bytes
  static constexpr int kSmemBytes = Stages * kStageBytes + 2 * Stages * 8 + 1024;
};

// The grid's work and split-K workspace: sm90::WgmmaGrid, with one row of tiles (staged unused).
using Grid = sm90::WgmmaGrid;

using sm90::kNoPeer;

// k-tiles [kt_begin, kt_end) of one tile from the ring (its positions n_used on) into acc,
// each stage freed once the wgmma group reading it has completed: on this block's empty barrier
// and, with a peer (the other block of a cluster pair, whose producer writes this block's stages
// too), on the peer's.
template <typename T, int BN, int Stages>
__device__ __forceinline__ void accumulate(float (&acc)[BN / 2], uint32_t smem, const sm90::Ring& ring,
                                           int kt_begin, int kt_end, int& n_used, int peer = kNoPeer) {
  using S = Layout<BN, Stages>;
  const int lane = static_cast<int>(threadIdx.x % 32);
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
  int held = -1;  // the ring position the last committed group still reads
  for (int kt = kt_begin; kt < kt_end; ++kt, ++n_used) {
    sm90::mbar_wait(ring.full(n_used), ring.phase(n_used));
    const uint32_t a = smem + (n_used % Stages) * S::kStageBytes, b = a + S::kABytes;
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk)
      sm90::wgmma<T, BN, false>(acc, sm90::smem_desc(a + kk * 32, 16, 1024),
                                sm90::smem_desc(b + kk * 32, 16, 1024));
    sm90::wgmma_commit();
    sm90::wgmma_wait<1>();  // the previous k-tile's group is done: its stage can be refilled
    if (held >= 0 && lane == 0) sm90::release_stage(ring.empty(held), peer);
    held = n_used;
  }
  sm90::wgmma_wait<0>();
  if (held >= 0 && lane == 0) sm90::release_stage(ring.empty(held), peer);
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) sm90::fence_register(acc[i]);
}

template <typename T, int BN, int Stages>
__device__ __forceinline__ void consume(uint32_t smem, uint32_t bars, const Grid& g, const StoreC<T>& store) {
  const sm90::Ring ring{bars, Stages};
  int n_used = 0;  // ring positions consumed so far, over all items
  sm90::for_each_block_item<1>(g.plan, [&](const sm90::WorkItem& w) {
    float acc[1][BN / 2];  // sm90::store_direct's shape: one B matrix
    accumulate<T, BN, Stages>(acc[0], smem, ring, w.kt_begin, w.kt_end, n_used);
    // The tile's rows are A's (tile.m = 0), as the wgmma GEMM's first consumer's.
    if (g.plan.splits > 1)
      sm90::store_direct<1, BN>(acc, w.tile, 0,
                                StoreC<float>{g.partials + w.split * g.slice, g.ldw, g.m, g.n, true});
    else
      sm90::store_direct<1, BN>(acc, w.tile, 0, store);
  });
}

// The block's run of a stream-K plan, backwards (stream_k::for_each_piece): a whole tile is
// stored; a helper's piece (short of the tile's last k-tile) is published; the owner's piece
// (the tile's last k-tiles, the run's first) gets its helpers' sums added and is stored.
template <typename T, int BN, int Stages>
__device__ __forceinline__ void consume_stream_k(uint32_t smem, uint32_t bars, const stream_k::Plan& plan,
                                                 const StoreC<T>& store) {
  const sm90::Ring ring{bars, Stages};
  int n_used = 0;
  stream_k::for_each_piece(plan, static_cast<int>(blockIdx.x), [&](int tile, int kt_begin, int kt_end) {
    float acc[1][BN / 2];
    accumulate<T, BN, Stages>(acc[0], smem, ring, kt_begin, kt_end, n_used);
    if (kt_end < plan.k_tiles) {
      stream_k::publish<BN / 2>(plan, acc[0], kConsumerBarrier);
      return;
    }
    if (kt_begin > 0) stream_k::add_helpers<BN / 2>(plan, tile, acc[0], kConsumerBarrier);
    sm90::store_direct<1, BN>(acc, TileCoord{0, tile}, 0, store);
  });
}

// Work: Grid (a persistent grid over whole tiles or K splits) or stream_k::Plan.
template <typename T, int BN, int Stages, class Work>
__global__ void __launch_bounds__(kThreads, 1)
    skinny_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_w,
                        const Work work, const StoreC<T> store) {
#if AK_SM90_CODE
  using S = Layout<BN, Stages>;
  // A's box is its M rows (with_kernel): the rows of a stage's A buffer past M are never written,
  // and what the wgmma makes of them lands in rows of C that are never stored (a row of C reads
  // only its own row of A). TMA then fills nothing it does not have to: rows past the tensor cost
  // it time (33 x 4096 x 4096 with a box of 64 rows took 19.3 us against 16.3 at 64 x 4096 x 4096).
  const uint32_t tx_bytes = static_cast<uint32_t>(store.m) * kBK * 2 + S::kWBytes;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t smem = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const uint32_t bars = smem + Stages * S::kStageBytes;
  if (threadIdx.x == 0) {
    sm90::init_ring(bars, Stages, kConsumerWarps);
    sm90::prefetch_tensormap(&map_a);
    sm90::prefetch_tensormap(&map_w);
  }
  __syncthreads();
  constexpr bool kStreamK = std::is_same_v<Work, stream_k::Plan>;
  if (threadIdx.x == 0) {
    const auto load = [&](TileCoord tile, int kt, uint32_t dst, uint32_t full) {
      sm90::tma_load(dst, &map_a, kt * kBK, 0, full);
      sm90::tma_load(dst + S::kABytes, &map_w, kt * kBK, tile.n * BN, full);
    };
    if constexpr (kStreamK) {
      const auto run = [&](auto&& piece) {
        stream_k::for_each_piece(work, static_cast<int>(blockIdx.x), [&](int tile, int kt_begin, int kt_end) {
          piece(TileCoord{0, tile}, kt_begin, kt_end);
        });
      };
      sm90::fill_ring_over<Stages>(run, smem, bars, S::kStageBytes, tx_bytes, load);
    } else {
      sm90::fill_ring<Stages>(work.plan, smem, bars, S::kStageBytes, load, tx_bytes);
    }
  } else if (threadIdx.x >= 128) {
    if constexpr (kStreamK)
      consume_stream_k<T, BN, Stages>(smem, bars, work, store);
    else
      consume<T, BN, Stages>(smem, bars, work, store);
  }
#else
  __trap();
#endif
}

// run(map_a, map_w) once the problem suits the wgmma forms (at most 64 rows of A, operands TMA can
// read), A read in boxes of a_box_rows; else AK_ERR_UNSUPPORTED.
template <typename T, int BN, class Run>
int with_maps(const GemmProblem<T, 1>& p, int a_box_rows, Run&& run) {
  CUtensorMap map_a, map_w;
  if (p.m > kRowsA || !sm90::wgmma_eligible(p) ||
      !sm90::make_tensor_map(&map_a, p.a, p.m, p.k, p.lda, a_box_rows) ||
      !sm90::make_tensor_map(&map_w, p.b[0], p.n, p.k, p.ldb, BN))
    return AK_ERR_UNSUPPORTED;
  return run(map_a, map_w);
}

// run(kernel, map_a, map_w, sms) with A's box at its M rows (see the kernel) once the kernel has
// its shared memory; else AK_ERR_UNSUPPORTED.
template <typename T, int BN, int Stages, class Work, class Run>
int with_kernel(const GemmProblem<T, 1>& p, Run&& run) {
  return with_maps<T, BN>(p, p.m, [&](const CUtensorMap& map_a, const CUtensorMap& map_w) {
    const int sms = device_attribute(cudaDevAttrMultiProcessorCount);
    const auto kernel = skinny_wgmma_kernel<T, BN, Stages, Work>;
    if (sms <= 0 || !allow_shared_memory(kernel, Layout<BN, Stages>::kSmemBytes)) return AK_ERR_UNSUPPORTED;
    return run(kernel, map_a, map_w, sms);
  });
}

// Whole tiles over a persistent grid, from 17 rows of A (AK_ERR_UNSUPPORTED below). split_k as the
// wgmma GEMM's: 0 splits K where W's tiles leave more than half the SMs idle, n > 1 forces n, 1 never.
template <typename T, int BN, int Stages = kRingStages<BN>>
int launch(const GemmProblem<T, 1>& p, const StoreC<T>& store, cudaStream_t stream, int split_k) {
  if (p.m <= 16) return AK_ERR_UNSUPPORTED;
  return with_kernel<T, BN, Stages, Grid>(
      p, [&](auto kernel, const CUtensorMap& map_a, const CUtensorMap& map_w, int sms) {
        const Grid g{{1, (p.n + BN - 1) / BN, (p.k + kBK - 1) / kBK}, 0, nullptr, 0, 0, p.m, p.n};
        const auto run = [&](const Grid& grid) {
          const unsigned blocks = static_cast<unsigned>(std::min(grid.plan.items(), sms));
          kernel<<<blocks, kThreads, Layout<BN, Stages>::kSmemBytes, stream>>>(map_a, map_w, grid, store);
          return ak_cuda::check_launch();
        };
        return sm90::run_split_k(g, sms, split_k, store.c, store.ldc, stream, run);
      });
}

// Stream-K (cuda_gemm_stream_k.cuh): an equal run of (tile, k-tile) iterations an SM, any M up to 64.
template <typename T, int BN, int Stages = kRingStages<BN>>
int launch_stream_k(const GemmProblem<T, 1>& p, const StoreC<T>& store, cudaStream_t stream) {
  return with_kernel<T, BN, Stages, stream_k::Plan>(
      p, [&](auto kernel, const CUtensorMap& map_a, const CUtensorMap& map_w, int sms) {
        const auto plan = stream_k::plan_stream_k((p.n + BN - 1) / BN, (p.k + kBK - 1) / kBK, sms);
        return stream_k::with_workspace(plan, int64_t{BN / 2} * 128, stream, [&](const stream_k::Plan& run) {
          kernel<<<run.blocks, kThreads, Layout<BN, Stages>::kSmemBytes, stream>>>(map_a, map_w, run, store);
          return ak_cuda::check_launch();
        });
      });
}

}  // namespace ak_gemm::skinny_wgmma
