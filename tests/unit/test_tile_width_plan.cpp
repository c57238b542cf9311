// The wgmma matmul's tile width when the defaults pick it per call (include/autokernel/
// tile_width_plan.h), on 132 SMs (H100, H200): the picks at the shapes they were timed at
// (docs/benchmarks.md), and the rule's edges.
#include <gtest/gtest.h>

#include "autokernel/tile_width_plan.h"

namespace ak_gemm::sm90 {
namespace {

constexpr int64_t kSms = 132;

TEST(TileWidthPlan, PicksTheWidthsTimedAtEachShape) {
  struct Case {
    int64_t m, n;
    int width;
  };
  for (const Case c : {Case{4096, 256, 64},    // 128 tiles of 64 against 32 of 256
                       Case{4096, 768, 192},   // one wave of 128 tiles
                       Case{2048, 2048, 256},  // one wave of 128 tiles; 192 takes two
                       Case{4096, 2560, 224},  // three waves of 224 against 256's three
                       Case{4096, 896, 112},   // two waves of 112, none of them empty columns
                       Case{4096, 4864, 256},  // five waves of 256 against eleven of 112
                       Case{4096, 3072, 256},  // three waves of 256 against four of 192
                       Case{4096, 4096, 256}, Case{2048, 32000, 256}})
    EXPECT_EQ(pick_tile_width(c.m, c.n, kSms), c.width) << c.m << " x " << c.n;
}

// 112 where its waves cost less at the same price a tile: at 2048 x 896 one wave of 128 tiles of
// 112 against one of 80 tiles of 192; not at 4096 x 768, where 192's single wave is cheaper than
// two of 112, nor at 4096 x 2560, where 224's three waves are. Nor where the pick's tiles fill
// under half the SMs (K is then split over the idle ones): 2048 x 768 keeps 64 tiles of 192 and
// 64 x 11008 58 of them, though one wave of 112 would cost less by the count.
TEST(TileWidthPlan, TakesTilesOf112WhereTheirWavesCostLess) {
  EXPECT_EQ(pick_tile_width(4096, 896, kSms), 112);
  EXPECT_EQ(pick_tile_width(4096, 768, kSms), 192);
  EXPECT_EQ(pick_tile_width(4096, 2560, kSms), 224);
  EXPECT_EQ(pick_tile_width(2048, 896, kSms), 112);
  EXPECT_EQ(pick_tile_width(2048, 768, kSms), 192);
  EXPECT_EQ(pick_tile_width(64, 11008, kSms), 192);
}

// 64 wins before 112 where the pick would idle over half the SMs and 64-wide tiles make one wave.
TEST(TileWidthPlan, NarrowShapesTakeTilesOf64) {
  EXPECT_EQ(pick_tile_width(4096, 256, kSms), 64);
  EXPECT_EQ(pick_tile_width(64, 4096, kSms), 64);
  EXPECT_EQ(pick_tile_width(1, 128, kSms), 64);
}

// Fewer SMs move the picks with the waves: at 4096 x 896 on 66 SMs, two waves of 224's 128 tiles
// cost less than four of 112's 256 tiles.
TEST(TileWidthPlan, PicksFollowTheDevicesSmCount) {
  EXPECT_EQ(pick_tile_width(4096, 896, 66), 224);
  EXPECT_EQ(pick_tile_width(4096, 896, 0), pick_tile_width(4096, 896, 1));
}

}  // namespace
}  // namespace ak_gemm::sm90
