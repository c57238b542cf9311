// Skinny products on Hopper's asynchronous tensor cores (kernels/cuda/matmul.cu, SKINNY_WGMMA):
// C[M, N] = A[M, K] W[N, K]^T for 17 to 64 rows of A, fp16/bf16, sm_90a only.
//
// Why: the shared-memory form (cuda_gemm_skinny_staged.cuh) is bound past 32 rows of A by its
// warps' issue, not by bytes: at 64 x 4096 x 4096 its eight warps issue in 46% of the cycles,
// stalled on mma.sync chains and shared-memory loads, for 25.5k active cycles against cuBLAS's
// 18.8k (docs/benchmarks.md, twenty-eighth session). cuBLAS's kernel there is a wgmma tile of 64
// rows of A against 32 rows of W, fed by TMA through a deep ring: one instruction reads a whole
// 64 x 32 x 16 step from shared memory, and the warps are left waiting on memory, as they should.
//
// Block: 256 threads. Warpgroup 0's first thread is the producer: per 64-deep k-tile it waits for
// a free stage, arms its full barrier and issues two TMA copies, A's 64 rows (rows past M read as
// zeros) and W's BN rows. Warpgroup 1 consumes: per k-tile 4 wgmma.m64n{BN}k16 with both operands
// from shared memory (K-major, 128-byte swizzle, as cuda_gemm_sm90.cuh's NK path), then frees the
// previous k-tile's stage once its group has completed. The grid is persistent over (tile of W,
// run of K) items (sm90::WorkPlan with one row of tiles); with split-K each run's sums go to a
// float workspace that sum_splits adds in split order, as the wgmma GEMM does.
//
// Tuning (template): BN, 32 or 64 rows of W a tile; Stages, the ring's depth (12 KB a stage at
// BN = 32, 16 KB at 64; 16 and 12 stages, about 192 KB). launch_skinny_wgmma picks the width.
#pragma once

#include <algorithm>

#include "autokernel/cuda_gemm.cuh"
#include "autokernel/cuda_gemm_sm90.cuh"
#include "autokernel/cuda_sm90.cuh"

namespace ak_gemm::skinny_wgmma {

using sm90::kBK;
constexpr int kRowsA = 64, kThreads = 256, kConsumerWarps = 4;

template <int BN, int Stages>
struct Layout {
  static_assert(BN == 32 || BN == 64, "tiles of 32 or 64 rows of W");
  static constexpr int kABytes = kRowsA * kBK * 2, kWBytes = BN * kBK * 2;
  static constexpr int kStageBytes = kABytes + kWBytes;  // a multiple of the swizzle's 1024 bytes
  static constexpr int kSmemBytes = Stages * kStageBytes + 2 * Stages * 8 + 1024;
};

// The grid's work and split-K workspace: sm90::WgmmaGrid, with one row of tiles (staged unused).
using Grid = sm90::WgmmaGrid;

template <typename T, int BN, int Stages>
__device__ __forceinline__ void consume(uint32_t smem, uint32_t bars, const Grid& g, const StoreC<T>& store) {
  using S = Layout<BN, Stages>;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const sm90::Ring ring{bars, Stages};
  int n_used = 0;  // ring positions consumed so far, over all items
  for (int item = static_cast<int>(blockIdx.x); item < g.plan.items(); item += static_cast<int>(gridDim.x)) {
    const sm90::WorkItem w = sm90::work_item(g.plan, item);
    float acc[1][BN / 2];  // sm90::store_direct's shape: one B matrix
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[0][i] = 0.0f;
    int held = -1;  // the ring position the last committed group still reads
    for (int kt = w.kt_begin; kt < w.kt_end; ++kt, ++n_used) {
      sm90::mbar_wait(ring.full(n_used), ring.phase(n_used));
      const uint32_t a = smem + (n_used % Stages) * S::kStageBytes, b = a + S::kABytes;
      sm90::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk)
        sm90::wgmma<T, BN, false>(acc[0], sm90::smem_desc(a + kk * 32, 16, 1024),
                                  sm90::smem_desc(b + kk * 32, 16, 1024));
      sm90::wgmma_commit();
      sm90::wgmma_wait<1>();  // the previous k-tile's group is done: its stage can be refilled
      if (held >= 0 && lane == 0) sm90::mbar_arrive(ring.empty(held));
      held = n_used;
    }
    sm90::wgmma_wait<0>();
    if (held >= 0 && lane == 0) sm90::mbar_arrive(ring.empty(held));
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) sm90::fence_register(acc[0][i]);
    // The tile's rows are A's (tile.m = 0), as the wgmma GEMM's first consumer's.
    if (g.plan.splits > 1)
      sm90::store_direct<1, BN>(acc, w.tile, 0,
                                StoreC<float>{g.partials + w.split * g.slice, g.ldw, g.m, g.n, true});
    else
      sm90::store_direct<1, BN>(acc, w.tile, 0, store);
  }
}

template <typename T, int BN, int Stages>
__global__ void __launch_bounds__(kThreads, 1)
    skinny_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_w,
                        const Grid g, const StoreC<T> store) {
#if AK_SM90_CODE
  using S = Layout<BN, Stages>;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t smem = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const uint32_t bars = smem + Stages * S::kStageBytes;
  if (threadIdx.x == 0) sm90::init_ring(bars, Stages, kConsumerWarps);
  __syncthreads();
  if (threadIdx.x == 0) {
    sm90::fill_ring<Stages>(g.plan, smem, bars, S::kStageBytes,
                            [&](TileCoord tile, int kt, uint32_t dst, uint32_t full) {
                              sm90::tma_load(dst, &map_a, kt * kBK, 0, full);
                              sm90::tma_load(dst + S::kABytes, &map_w, kt * kBK, tile.n * BN, full);
                            });
  } else if (threadIdx.x >= 128) {
    consume<T, BN, Stages>(smem, bars, g, store);
  }
#else
  __trap();
#endif
}

// AK_ERR_UNSUPPORTED where it does not apply (not Hopper code, more than 64 or at most 16 rows of
// A, operands TMA cannot read); the caller then takes another path. split_k as the wgmma GEMM's:
// 0 splits K where W's tiles leave more than half the SMs idle, n > 1 forces n, 1 never.
template <typename T, int BN, int Stages>
int launch(const GemmProblem<T, 1>& p, const StoreC<T>& store, cudaStream_t stream, int split_k) {
  using S = Layout<BN, Stages>;
  if (p.m <= 16 || p.m > kRowsA || !sm90::wgmma_eligible(p)) return AK_ERR_UNSUPPORTED;
  CUtensorMap map_a, map_w;
  if (!sm90::make_tensor_map(&map_a, p.a, p.m, p.k, p.lda, kRowsA) ||
      !sm90::make_tensor_map(&map_w, p.b[0], p.n, p.k, p.ldb, BN))
    return AK_ERR_UNSUPPORTED;
  const Grid g{{1, (p.n + BN - 1) / BN, (p.k + kBK - 1) / kBK}, 0, nullptr, 0, 0, p.m, p.n};
  const int sms = device_attribute(cudaDevAttrMultiProcessorCount);
  const auto kernel = skinny_wgmma_kernel<T, BN, Stages>;
  if (sms <= 0 || !allow_shared_memory(kernel, S::kSmemBytes)) return AK_ERR_UNSUPPORTED;
  const auto run = [&](const Grid& grid) {
    const unsigned blocks = static_cast<unsigned>(std::min(grid.plan.items(), sms));
    kernel<<<blocks, kThreads, S::kSmemBytes, stream>>>(map_a, map_w, grid, store);
    return ak_cuda::check_launch();
  };
  return sm90::run_split_k(g, sms, split_k, store.c, store.ldc, stream, run);
}

// width 32 or 64 forces that tile (any M from 17 to 64; split_k as launch's). 0 chooses, where
// the H200 measured the form faster (docs/benchmarks.md, twenty-eighth session): past 48 rows of
// A (at 33 and 48 rows it was no faster than the shared-memory form: 33 x 4096 x 4096 19.3 against
// 18.9 us), 32 where its tiles make between half a wave and one (64 x 4096 x 4096: 16.3 against
// 18.5), else 64 where its tiles make between half a wave and one and a half (64 x 8192 x 4096:
// 23.1 against 27.1; 64 x 11008 x 4096, 1.3 waves: 36.2 against 39.6); elsewhere, and for a K
// split it would choose (not yet run on a GPU), AK_ERR_UNSUPPORTED: the caller's other paths.
template <typename T>
int launch_skinny_wgmma(const GemmProblem<T, 1>& p, const StoreC<T>& store, cudaStream_t stream, int split_k,
                        int width) {
  if (width == 0) {
    const int64_t sms = device_attribute(cudaDevAttrMultiProcessorCount);
    const int64_t narrow = (p.n + 31) / 32, wide = (p.n + 63) / 64;
    if (p.m <= 48) return AK_ERR_UNSUPPORTED;
    if (2 * narrow > sms && narrow <= sms)
      width = 32;
    else if (2 * wide > sms && 2 * wide <= 3 * sms)
      width = 64;
    else
      return AK_ERR_UNSUPPORTED;
    if (split_k == 0) split_k = 1;
  }
  return width == 32 ? launch<T, 32, 16>(p, store, stream, split_k)
                     : launch<T, 64, 12>(p, store, stream, split_k);
}

}  // namespace ak_gemm::skinny_wgmma
