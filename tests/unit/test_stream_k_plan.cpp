// Stream-K's runs (include/autokernel/stream_k_plan.h): every (tile, k-tile) iteration computed
// by exactly one block; each block walks its run backwards; only a block's first-visited piece
// ends short of its tile (so one slot a block holds every helper's sums, published before the
// block waits for anything); the owner of each cut tile is the block with its last k-tile, visits
// that piece last, and its helpers are exactly the blocks before it from first_block_of: an owner
// waits only for blocks of lower index.
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
  std::map<int, std::vector<Piece>> of_block;
  std::map<int, std::set<int>> helpers;  // tile -> blocks with a piece short of its last k-tile
  std::map<int, int> owner;              // tile -> block with its last k-tile, if cut
  for (const Piece& p : pieces_of(plan)) {
    ASSERT_LT(p.begin, p.end);
    ASSERT_LE(p.end, k_tiles);
    for (int kt = p.begin; kt < p.end; ++kt) ++covered[static_cast<size_t>(p.tile) * k_tiles + kt];
    auto& mine = of_block[p.block];
    const int64_t from = static_cast<int64_t>(p.tile) * k_tiles + p.begin;
    const int64_t to = static_cast<int64_t>(p.tile) * k_tiles + p.end;
    // Backwards and contiguous: the first piece ends the run, each next one ends where the last began.
    EXPECT_EQ(to, mine.empty() ? plan.begin(p.block + 1)
                               : static_cast<int64_t>(mine.back().tile) * k_tiles + mine.back().begin);
    EXPECT_EQ(plan.block_of(from), p.block);
    if (p.end < k_tiles) {
      EXPECT_TRUE(mine.empty()) << "a helper's piece is the first its block visits";
      helpers[p.tile].insert(p.block);
    } else if (p.begin > 0) {
      owner[p.tile] = p.block;
    }
    mine.push_back(p);
  }
  for (const auto& [block, mine] : of_block) {
    EXPECT_EQ(static_cast<int64_t>(mine.back().tile) * k_tiles + mine.back().begin, plan.begin(block))
        << "the run's first piece is visited last";
  }
  for (int c : covered) ASSERT_EQ(c, 1);
  EXPECT_EQ(helpers.size(), owner.size()) << "every cut tile has one owner";
  for (const auto& [tile, blocks] : helpers) {
    ASSERT_TRUE(owner.count(tile));
    std::set<int> expected;
    for (int b = plan.first_block_of(tile); b < owner[tile]; ++b) expected.insert(b);
    EXPECT_EQ(blocks, expected) << "tile " << tile;
    EXPECT_LT(*blocks.rbegin(), owner[tile]) << "an owner waits only for blocks of lower index";
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
