// Stream-K's runs (include/autokernel/stream_k_plan.h): every (tile, k-tile) iteration computed
// by exactly one block, in tile order; only a run's first piece starts past a tile's first k-tile
// (so one slot a block holds every helper's sums); the owner of each cut tile is the block with
// its first k-tile, and its helpers are exactly the blocks after it up to last_block_of.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "autokernel/stream_k_plan.h"

namespace ak_gemm::stream_k {
namespace {

struct Piece {
  int block, tile, begin, end;
};

std::vector<Piece> pieces_of(const Plan& plan) {
  std::vector<Piece> all;
  for (int b = 0; b < plan.blocks; ++b)
    for_each_piece(plan, b, [&](int tile, int begin, int end) { all.push_back({b, tile, begin, end}); });
  return all;
}

void expect_sound(int tiles, int k_tiles, int sms) {
  SCOPED_TRACE(testing::Message() << tiles << " tiles x " << k_tiles << " k-tiles on " << sms << " SMs");
  const Plan plan = plan_stream_k(tiles, k_tiles, sms);
  ASSERT_GE(plan.blocks, 1);
  ASSERT_LE(plan.blocks, sms);
  if (plan.total() >= kMinRun * static_cast<int64_t>(plan.blocks)) {
    for (int b = 0; b < plan.blocks; ++b)
      EXPECT_GE(plan.begin(b + 1) - plan.begin(b), kMinRun) << "block " << b;
  }

  std::vector<int> covered(static_cast<size_t>(plan.total()), 0);
  std::map<int, int> first_piece_of;     // block -> index of its first piece
  std::map<int, std::set<int>> helpers;  // tile -> blocks with a piece past its first k-tile
  std::map<int, int> owner;              // tile -> block with its first k-tile, if cut
  const auto all = pieces_of(plan);
  int64_t previous_end = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const Piece& p = all[i];
    ASSERT_LT(p.begin, p.end);
    ASSERT_LE(p.end, k_tiles);
    const int64_t from = static_cast<int64_t>(p.tile) * k_tiles + p.begin;
    EXPECT_EQ(from, previous_end) << "pieces in tile order, no gap";
    previous_end = static_cast<int64_t>(p.tile) * k_tiles + p.end;
    for (int kt = p.begin; kt < p.end; ++kt) ++covered[static_cast<size_t>(p.tile) * k_tiles + kt];
    EXPECT_EQ(plan.block_of(from), p.block);
    first_piece_of.try_emplace(p.block, static_cast<int>(i));
    if (p.begin > 0) {
      EXPECT_EQ(first_piece_of[p.block], static_cast<int>(i)) << "a helper's piece opens its block's run";
      helpers[p.tile].insert(p.block);
    } else if (p.end < k_tiles) {
      owner[p.tile] = p.block;
    }
  }
  for (int c : covered) ASSERT_EQ(c, 1);
  EXPECT_EQ(helpers.size(), owner.size()) << "every cut tile has one owner";
  for (const auto& [tile, blocks] : helpers) {
    ASSERT_TRUE(owner.count(tile));
    std::set<int> expected;
    for (int b = owner[tile] + 1; b <= plan.last_block_of(tile); ++b) expected.insert(b);
    EXPECT_EQ(blocks, expected) << "tile " << tile;
  }
}

TEST(StreamKPlan, EveryIterationOnceOwnersAndHelpersAsTheKernelWaitsForThem) {
  expect_sound(172, 64, 132);  // 64 x 11008 x 4096 at 64 rows of W: 1.3 waves of tiles
  expect_sound(224, 64, 132);  // 64 x 14336 x 4096
  expect_sound(16, 64, 132);   // 64 x 1024 x 4096: each tile over 8 blocks
  expect_sound(64, 65, 132);   // K = 4104: a ragged last k-tile
  expect_sound(132, 64, 132);  // whole tiles, nothing cut
  expect_sound(500, 64, 132);  // 64 x 32000 x 4096
  expect_sound(1, 3, 132);     // fewer iterations than a run: one block
  expect_sound(7, 1, 4);       // one k-tile a tile: never cut
  for (int tiles = 1; tiles < 40; tiles += 3)
    for (int k_tiles = 1; k_tiles < 30; k_tiles += 4) expect_sound(tiles, k_tiles, 13);
}

TEST(StreamKPlan, ABlockAnSmUnlessRunsWouldBeShorterThanTheMinimum) {
  EXPECT_EQ(plan_stream_k(172, 64, 132).blocks, 132);
  EXPECT_EQ(plan_stream_k(16, 16, 132).blocks, 256 / kMinRun);
  EXPECT_EQ(plan_stream_k(1, 3, 132).blocks, 1);
  // 172 x 64 iterations over 132 blocks: runs of 83 or 84, so a tile is cut at most once.
  const Plan plan = plan_stream_k(172, 64, 132);
  for (int b = 0; b < plan.blocks; ++b) {
    const int64_t run = plan.begin(b + 1) - plan.begin(b);
    EXPECT_TRUE(run == 83 || run == 84) << run;
  }
}

}  // namespace
}  // namespace ak_gemm::stream_k
