// Layouts of the skinny products, plain C++17 (no CUDA types), so that the choices are tested on
// machines without a GPU: the wgmma form's tile width (one_wave_width), and the shared-memory form
// with a cluster split of K (cuda_gemm_skinny.cuh, SKINNY_CLUSTER = 1): which height of W's tiles,
// and how many blocks of a thread block cluster share each tile, each taking a contiguous run of K.
#pragma once

#include <stdint.h>

#include <limits>

namespace ak_gemm::skinny {

// The widths (rows of W a tile) the wgmma form is built for (cuda_gemm_skinny_wgmma.cuh).
constexpr int kWgmmaWidths[] = {32, 64, 96, 112, 128};

constexpr bool is_wgmma_width(int width) {
  for (const int w : kWgmmaWidths)
    if (w == width) return true;
  return false;
}

// The wgmma form's width for n rows of W on sms SMs: the narrowest of kWgmmaWidths up to widest
// whose tiles make one wave, and more than half of one (0: none does). Every block of the form
// brings in all of A's rows beside its tile of W, so one wave of wider tiles brings in fewer bytes
// an SM than more tiles of a narrower width, or than stream-K over narrower tiles, and has no
// tile to finish across blocks (64 x 11008 x 4096: 115 tiles of 96 against 172 of 64).
constexpr int one_wave_width(int64_t n, int64_t sms, int widest) {
  for (const int width : kWgmmaWidths) {
    if (width > widest) break;
    const int64_t tiles = (n + width - 1) / width;
    if (tiles <= sms) return 2 * tiles > sms ? width : 0;
  }
  return 0;
}

// rows = 0: no layout runs in one wave. cluster = 1: no split.
struct StagedPlan {
  int rows = 0, cluster = 1, chunk = 0;  // chunk: k per block, a multiple of the stage's k
};

// One height of the form: rows of W a block, and the stages its ring holds.
struct StagedHeight {
  int rows, ring;
};

constexpr int kMaxClusterBlocks = 8;  // a portable cluster

// Every block of the form brings in its tile of W and all of A's rows (a_rows, padded to the
// operands') over its run of K, and a wave of them is bound by what one SM brings in: the H200
// moved 37-42 KB/us into each SM at every height (docs/benchmarks.md, twenty-sixth session). So
// the plan with the fewest bytes a block, every block in one wave, counting for a cluster the
// other blocks' sums each block reads back (4 bytes an output of its tile). More rows of W a
// block read A fewer times; a cluster's split shortens each block's run of K. A block's run keeps
// at least a ring's worth of stages. That model is within 6% of the H200's times where both exist
// (64 x 4096 x 4096 at 32 rows: 19.7 modelled, 18.6 measured; 64 x 11008 x 4096 at 128 rows: 39.3,
// 40.3; 32 x 11008 x 4096 at 128 rows: 32.8, 31.3 us), but the plans it picks were no faster
// on the H200 (docs/benchmarks.md, twenty-eighth session): the bound there is the warps' issue,
// so SKINNY_CLUSTER stays off by default and this plan is only what it means when searched.
//   fits(rows, cluster): how many clusters of that many blocks the device runs at once
template <class Fits>
StagedPlan plan_staged(int64_t n, int64_t k, int a_rows, int64_t sms, int stage_k, int forced_rows,
                       const StagedHeight* heights, int count, Fits&& fits) {
  StagedPlan best;
  int64_t best_bytes = std::numeric_limits<int64_t>::max();
  for (int h = 0; h < count; ++h) {
    const StagedHeight height = heights[h];
    if (forced_rows != 0 && height.rows != forced_rows) continue;
    const int64_t tiles = (n + height.rows - 1) / height.rows;
    for (int cluster = 1; cluster <= kMaxClusterBlocks; ++cluster) {
      const int64_t chunk = (k + cluster * stage_k - 1) / (cluster * stage_k) * stage_k;
      if (tiles * cluster > sms || (cluster > 1 && chunk < int64_t{height.ring} * stage_k)) break;
      if (cluster > 1 && fits(height.rows, cluster) < tiles) continue;
      const int64_t outputs = int64_t{height.rows} * a_rows;
      const int64_t bytes =
          2 * (height.rows + a_rows) * chunk + (cluster - 1) * outputs * 4 / cluster;  // 16-bit W and A
      if (bytes < best_bytes) {
        best_bytes = bytes;
        best = {height.rows, cluster, static_cast<int>(chunk)};
      }
    }
  }
  return best;
}

}  // namespace ak_gemm::skinny
