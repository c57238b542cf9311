// The width of the wgmma matmul's output tiles when the defaults pick it per call (BLOCK_N = 0,
// cuda_gemm_sm90_launch.cuh's launch_wgmma_gemm_auto_width), plain C++17 (no CUDA types), so that
// the picks are tested on machines without a GPU (tests/unit/test_tile_width_plan.cpp).
#pragma once

#include <stdint.h>

#include "autokernel/split_tail_plan.h"

namespace ak_gemm::sm90 {

// Rows of every wgmma tile (cuda_gemm_sm90.cuh's kBM).
constexpr int kTileRows = 128;

// Each tile's fixed cost in columns: its prologue and epilogue, about 3% of a 256-wide tile's
// time (sixth session's 192 against 256 picks).
constexpr int kTileOverheadColumns = 26;

// 64, 112, 192, 224 or 256 for an m x n output on sms SMs, one 128-row tile per SM at a time.
// Of 192 and 256, the width whose tiles, rounded up to whole waves, cover the fewest columns, a
// 256-wide column counted 3% cheaper (it reuses each A tile over more of B). At M = 4096 that is
// 192 for N = 768 (128 tiles, one wave) and N = 2304, and 256 for 4096^3 and the wide vocabulary
// projections (docs/benchmarks.md, sixth session). 224 where its tiles take more than one wave
// and, each tile costing its width plus kTileOverheadColumns, it saves another 3%: at 4096 x 2560
// x 4096 three waves of 224 took 126.1 us against 256's 137.9 (fortieth session). Where the
// width's tiles would leave more than half the SMs idle and 64-wide tiles still make one wave, 64:
// at 4096 x 256 x 768, 32 tiles of 256 took 14.8 us, 128 tiles of 64 9.7 (sixth session).
// Otherwise 112 (5 stages) where its waves cost less than the width's at the same price a tile:
// at 4096 x 896, two waves of 256 tiles of 112 (two a block, the first's epilogue under the
// second's main loop, as cuBLAS's 112 x 128 nvjet) took 15.7 us against 17.6 for one wave of 256
// wide tiles, the last column half empty, at K = 896, and 54.6 against 56.1 at K = 4864; where
// 112 costs more by that count it was slower (4096 x 768: 14.7 against 192's 13.8; 4096 x 2560 x
// 4096: 133.1 against 224's 127.3; 4096 x 4864 x 896: 63.4 against 256's 58.0; H100,
// forty-second session). Not where the width's tiles fill under half the SMs (2048 x 768, decode
// rows): there the launch splits K over the idle SMs, and 112 against those splits is untimed.
// split_k_tiles > 0 (SPLIT_TAIL = 1, K in that many k-tiles): waves whose last round the launch
// cuts in two along K (split_tail_plan.h) count that round as half, in every comparison above
// (4096 x 2560 x 4096: 256 wide, two rounds and a halved third, against 224's three). 0: whole
// waves, the rule as timed.
inline int pick_tile_width(int64_t m, int64_t n, int64_t sms, int64_t split_k_tiles = 0) {
  if (sms < 1) sms = 1;
  const auto tiles = [&](int64_t width) {
    return ((m + kTileRows - 1) / kTileRows) * ((n + width - 1) / width);
  };
  // Waves in halves: with split_k_tiles 0, twice the whole waves, so the comparisons are as timed.
  const auto halves = [&](int64_t width) {
    return split_tail::half_rounds(tiles(width), split_k_tiles, sms);
  };
  const auto cost = [&](int64_t width) { return halves(width) * (width + kTileOverheadColumns); };
  const auto saves_3_percent = [](int64_t ours, int64_t theirs) { return 100 * ours < 97 * theirs; };
  int width = saves_3_percent(halves(192) * 192, halves(256) * 256) ? 192 : 256;
  if (halves(224) > 2 && saves_3_percent(cost(224), cost(width))) width = 224;
  if (2 * tiles(width) < sms) return tiles(64) <= sms ? 64 : width;
  return cost(112) < cost(width) ? 112 : width;
}

}  // namespace ak_gemm::sm90
