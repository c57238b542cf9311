// The split tails (include/autokernel/split_tail_plan.h) of the wgmma matmul and the tile widths that
// count them (tile_width_plan.h), on 132 SMs (H100, H200): which rounds are split, that the
// pieces cover each (tile, k-tile) once with each helper on the block just below its owner, and
// the widths picked with and without them.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>

#include "autokernel/split_tail_plan.h"
#include "autokernel/tile_width_plan.h"

namespace ak_gemm::split_tail {
namespace {

constexpr int kSms = 132;

// Split: a last round that fits the grid twice, after a full one, with k-tiles for two pieces.
// 4096 x 2560 in 256-wide tiles: 320 tiles, a last round of 56. Not split: a last round over
// half the grid (4096^3 at 256: 512 tiles, 116), a grid of one partial round (split-K's), whole
// rounds, or pieces under kMinPieceKTiles.
TEST(SplitTailPlan, SplitsTheLastRoundOnlyWhereItsPiecesFitTheGrid) {
  EXPECT_EQ(tiles_to_split(320, 64, kSms), 56);
  EXPECT_EQ(tiles_to_split(136, 9, kSms), 4);
  EXPECT_EQ(tiles_to_split(132 + 66, 8, kSms), 66);
  EXPECT_EQ(tiles_to_split(132 + 67, 8, kSms), 0);
  EXPECT_EQ(tiles_to_split(512, 64, kSms), 0);
  EXPECT_EQ(tiles_to_split(64, 64, kSms), 0);
  EXPECT_EQ(tiles_to_split(264, 64, kSms), 0);
  EXPECT_EQ(tiles_to_split(320, 7, kSms), 0);
  EXPECT_EQ(tiles_to_split(320, 64, 1), 0);
  // The attention's rule: pieces of 2 key tiles, and a single partial round split too.
  EXPECT_EQ(tiles_to_split(64, 4, kSms, 2, true), 64);
  EXPECT_EQ(tiles_to_split(64, 3, kSms, 2, true), 0);
  EXPECT_EQ(tiles_to_split(132, 8, kSms, 2, true), 0);
}

TEST(SplitTailPlan, CountsASplitLastRoundAsHalf) {
  EXPECT_EQ(half_rounds(320, 64, kSms), 5);
  EXPECT_EQ(half_rounds(320, 0, kSms), 6);  // no split asked for
  EXPECT_EQ(half_rounds(320, 4, kSms), 6);  // K too short to split
  EXPECT_EQ(half_rounds(264, 64, kSms), 4);
  EXPECT_EQ(half_rounds(512, 64, kSms), 8);
  EXPECT_EQ(half_rounds(64, 64, kSms), 2);
}

// Every work index of a grid of kSms blocks (block = index % kSms): each (tile, k-tile) once; the
// pieces all in the last round, a helper (the larger half for odd counts) on the block just below
// its owner, both with the same pair.
TEST(SplitTailPlan, PiecesCoverEveryKTileOnceHelperBelowOwner) {
  for (const auto& [tiles, k_tiles] : {std::pair{320, 64}, std::pair{136, 9}, std::pair{198, 8}}) {
    const int split = static_cast<int>(tiles_to_split(tiles, k_tiles, kSms));
    ASSERT_GT(split, 0) << tiles;
    const int work = tiles + split, last_round = (work - 1) / kSms;
    std::set<std::pair<int, int>> seen;
    std::map<int, int> helper_block;  // pair -> block
    for (int index = 0; index < work; ++index) {
      const Item it = item_of(tiles, split, k_tiles, index);
      ASSERT_LT(it.kt_begin, it.kt_end) << index;
      for (int kt = it.kt_begin; kt < it.kt_end; ++kt)
        EXPECT_TRUE(seen.insert({it.tile, kt}).second) << "tile " << it.tile << " k-tile " << kt;
      if (it.piece == kWhole) {
        EXPECT_EQ(it.kt_end - it.kt_begin, k_tiles);
        continue;
      }
      EXPECT_EQ(index / kSms, last_round) << index;
      if (it.piece == kHelper) {
        EXPECT_EQ(it.kt_begin, 0);
        EXPECT_EQ(it.kt_end, (k_tiles + 1) / 2);
        helper_block[it.pair] = index % kSms;
      } else {
        ASSERT_TRUE(helper_block.count(it.pair)) << "owner before its helper, pair " << it.pair;
        EXPECT_EQ(helper_block[it.pair] + 1, index % kSms);
        EXPECT_EQ(it.kt_end, k_tiles);
        EXPECT_EQ(it.tile, tiles - split + it.pair);
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(tiles) * k_tiles);
    EXPECT_EQ(helper_block.size(), static_cast<size_t>(split));
  }
}

// With split tails counted, 4096 x 2560 takes 256 (two rounds and a halved third of 320 tiles)
// over 224's three rounds; where no width's last round splits, or K is too short to split, the
// picks are those timed without them.
TEST(SplitTailPlan, TileWidthsCountSplitRounds) {
  using sm90::pick_tile_width;
  EXPECT_EQ(pick_tile_width(4096, 2560, kSms, 64), 256);
  EXPECT_EQ(pick_tile_width(4096, 2560, kSms, 4), pick_tile_width(4096, 2560, kSms));
  for (const auto& [m, n] : {std::pair{4096, 4096}, std::pair{8192, 8192}, std::pair{4096, 768},
                             std::pair{4096, 256}, std::pair{4096, 896}})
    EXPECT_EQ(pick_tile_width(m, n, kSms, 64), pick_tile_width(m, n, kSms)) << m << " x " << n;
}

}  // namespace
}  // namespace ak_gemm::split_tail
