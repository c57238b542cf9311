// The wgmma attention's work schedule (include/autokernel/attention_schedule.h), on the host: every
// query tile of every head is taken by exactly one block, and the key tiles each block gets are
// as even as the schedule claims: at 8 x 12 heads x 512 causal rows on 132 SMs, head-by-head
// pairs leave 60 blocks 10 key tiles and the rest 5; spread, none gets more than 8.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "autokernel/attention_schedule.h"

namespace ak::test {
namespace {

using ak_attention_sm90::for_each_item_of;
using ak_attention_sm90::item_of_round;
using ak_attention_sm90::kRows;
using ak_attention_sm90::Problem;
using ak_attention_sm90::Work;

Problem problem(int batch, int heads, int seq, bool causal) {
  const int m_tiles = (seq + kRows - 1) / kRows;
  return Problem{seq, 1, 1.0f, causal, heads, m_tiles, m_tiles * heads * batch};
}

// The grid the launch makes: one block per SM, or fewer where there are fewer units.
int grid_of(const Problem& p, bool spread, int sms) {
  const int units = (p.items + p.unit(spread) - 1) / p.unit(spread);
  return std::min(units, sms);
}

struct Taken {
  std::vector<std::tuple<int, int, int>> tiles;  // (b, h, m0) of every item, in the order taken
  std::vector<int> key_tiles;                    // per block
};

template <bool Spread>
Taken take_all(const Problem& p, int grid) {
  Taken t;
  for (int block = 0; block < grid; ++block) {
    int keys = 0, expected_round = 0;
    for_each_item_of<Spread>(p, grid, block, [&](int item, int round) {
      EXPECT_EQ(round, expected_round++);
      const Work<Spread> w(p, item);
      t.tiles.emplace_back(w.b, w.h, w.m0);
      keys += w.n_tiles;
    });
    t.key_tiles.push_back(keys);
  }
  return t;
}

template <bool Spread>
void expect_every_tile_once(int batch, int heads, int seq, bool causal, int sms) {
  const Problem p = problem(batch, heads, seq, causal);
  const Taken t = take_all<Spread>(p, grid_of(p, Spread, sms));
  std::set<std::tuple<int, int, int>> distinct(t.tiles.begin(), t.tiles.end());
  EXPECT_EQ(t.tiles.size(), static_cast<size_t>(p.items)) << batch << "x" << heads << "x" << seq;
  EXPECT_EQ(distinct.size(), t.tiles.size()) << batch << "x" << heads << "x" << seq;
  for (const auto& [b, h, m0] : distinct) {
    EXPECT_TRUE(b >= 0 && b < batch && h >= 0 && h < heads && m0 >= 0 && m0 < seq && m0 % kRows == 0);
  }
}

TEST(AttentionSchedule, EveryQueryTileIsTakenByExactlyOneBlock) {
  for (const bool causal : {true, false})
    for (const auto& [b, h, s, sms] :
         {std::tuple{8, 12, 512, 132}, std::tuple{2, 12, 512, 132}, std::tuple{4, 16, 1000, 132},
          std::tuple{1, 32, 2048, 114}, std::tuple{3, 5, 300, 7}, std::tuple{1, 1, 100, 132}}) {
      expect_every_tile_once<false>(b, h, s, causal, sms);
      if (causal) expect_every_tile_once<true>(b, h, s, causal, sms);
    }
}

TEST(AttentionSchedule, SpreadEvensTheKeyTilesOfShortCausalBatches) {
  const Problem p = problem(8, 12, 512, true);
  const Taken pairs = take_all<false>(p, grid_of(p, false, 132));
  EXPECT_EQ(*std::max_element(pairs.key_tiles.begin(), pairs.key_tiles.end()), 10);
  EXPECT_EQ(std::count(pairs.key_tiles.begin(), pairs.key_tiles.end(), 10), 60);
  const Taken spread = take_all<true>(p, grid_of(p, true, 132));
  EXPECT_EQ(*std::max_element(spread.key_tiles.begin(), spread.key_tiles.end()), 8);
  // The total is the same: 96 heads x (1 + 2 + 3 + 4) key tiles.
  for (const Taken* t : {&pairs, &spread}) {
    int total = 0;
    for (int k : t->key_tiles) total += k;
    EXPECT_EQ(total, 96 * 10);
  }
}

TEST(AttentionSchedule, SpreadDealsEveryHeadsHeaviestTileFirst) {
  const Problem p = problem(2, 3, 512, true);  // 6 heads of 4 query tiles
  for (int item = 0; item < 6; ++item) EXPECT_EQ(Work<true>(p, item).m0, 3 * kRows) << item;
  for (int item = 18; item < 24; ++item) EXPECT_EQ(Work<true>(p, item).m0, 0) << item;
  // Rounds alternate direction: on 4 blocks, block 0 takes items 0 and 7, block 3 items 3 and 4.
  std::vector<int> first, last;
  for_each_item_of<true>(p, 4, 0, [&](int item, int) { first.push_back(item); });
  for_each_item_of<true>(p, 4, 3, [&](int item, int) { last.push_back(item); });
  EXPECT_EQ(first, (std::vector<int>{0, 7, 8, 15, 16, 23}));
  EXPECT_EQ(last, (std::vector<int>{3, 4, 11, 12, 19, 20}));
}

TEST(AttentionSchedule, HeadByHeadCausalPairsCostTheSame) {
  const Problem p = problem(1, 2, 1000, true);  // 8 query tiles a head: pairs of 9 key tiles
  for (int unit = 0; unit < p.items / 2; ++unit)
    EXPECT_EQ(Work<false>(p, 2 * unit).n_tiles + Work<false>(p, 2 * unit + 1).n_tiles, 9) << unit;
}

// A block that looks one item ahead (the chained consumers) asks item_of_round for its next item:
// round by round it must name the items for_each_item_of hands the block, then -1, in every
// schedule (causal pairs with an odd number of items among them).
template <bool Spread>
void expect_lookahead_agrees(const Problem& p, int grid) {
  for (int block = 0; block < grid; ++block) {
    std::vector<int> taken, named;
    for_each_item_of<Spread>(p, grid, block, [&](int item, int) { taken.push_back(item); });
    for (int round = 0;; ++round) {
      const int item = item_of_round<Spread>(p, grid, block, round);
      if (item < 0) break;
      named.push_back(item);
    }
    EXPECT_EQ(named, taken) << "block " << block << " of " << grid;
  }
}

TEST(AttentionSchedule, LookingAheadNamesTheItemsABlockTakes) {
  for (const bool causal : {true, false})
    for (const auto& [b, h, s, sms] : {std::tuple{8, 12, 512, 132}, std::tuple{3, 5, 300, 7},
                                       std::tuple{1, 3, 300, 4}, std::tuple{1, 1, 100, 132}}) {
      const Problem p = problem(b, h, s, causal);
      expect_lookahead_agrees<false>(p, grid_of(p, false, sms));
      if (causal) expect_lookahead_agrees<true>(p, grid_of(p, true, sms));
    }
}

// Non-causal calls may take wider key tiles: every query tile walks the whole sequence in
// ceil(S / Keys) of them, the last one ragged where Keys does not divide S.
TEST(AttentionSchedule, WideKeyTilesCoverTheWholeSequence) {
  for (const int seq : {100, 176, 177, 512, 4096}) {
    const Problem p = problem(1, 2, seq, false);
    for (int item = 0; item < p.items; ++item) {
      EXPECT_EQ(Work<false>(p, item).n_tiles, (seq + 127) / 128) << seq;
      EXPECT_EQ((Work<false, 176>(p, item).n_tiles), (seq + 175) / 176) << seq;
    }
  }
  EXPECT_EQ((Work<false, 176>(problem(1, 1, 4096, false), 0).n_tiles), 24);
}

// split_tail: the last round's items in two pieces each, only where all of their pieces fit in
// that round, never causal, never of fewer than 4 key tiles.
TEST(AttentionSchedule, SplitsTheLastRoundOnlyWhereItsPiecesFitTheGrid) {
  using ak_attention_sm90::split_tail;
  EXPECT_EQ(split_tail(problem(4, 14, 1024, false), 132), 52);     // 448 items: a last round of 52
  EXPECT_EQ(split_tail(problem(1, 8, 512, false), 132), 32);       // 32 items: 64 pieces, one round
  EXPECT_EQ(split_tail(problem(8, 12, 512, false), 132), 0);       // a last round of 120: no room
  EXPECT_EQ(split_tail(problem(4, 14, 1024, true), 132), 0);       // causal
  EXPECT_EQ(split_tail(problem(4, 14, 300, false), 132), 0);       // 3 key tiles
  EXPECT_EQ(split_tail(problem(1, 132, 128 * 4, false), 132), 0);  // 528 items: whole rounds
  // Key tiles of the call's width: 520 keys are 5 tiles of 128 but 3 of 176.
  EXPECT_EQ(split_tail(problem(1, 8, 520, false), 132), 40);
  EXPECT_EQ(split_tail<176>(problem(1, 8, 520, false), 132), 0);
}

// Split items' pieces: with the grid the launch makes, every (query tile, key tile) is walked by
// exactly one piece or whole item, in the last round, the helper on the block just below its
// owner; the helper takes the larger half.
TEST(AttentionSchedule, SplitPiecesCoverEveryKeyTileOnceHelperBelowOwner) {
  for (const auto& [b, h, s, sms] :
       {std::tuple{4, 14, 1024, 132}, std::tuple{1, 8, 512, 132}, std::tuple{2, 3, 1000, 20},
        std::tuple{1, 5, 700, 12}, std::tuple{1, 5, 600, 12}}) {  // (600 keys: 5 tiles, 3 and 2)
    Problem p = problem(b, h, s, false);
    const int n_tiles = (s + 127) / 128;
    p.split = ak_attention_sm90::split_tail(p, sms);
    ASSERT_GT(p.split, 0) << b << "x" << h << "x" << s;
    const int grid = std::min(p.work(), sms);
    std::set<std::tuple<int, int, int, int>> walked;  // (b, h, m0, key tile)
    std::vector<std::pair<int, int>> helpers(p.split, {-1, -1}), owners(p.split, {-1, -1});  // (block, round)
    int last_round = 0;
    for (int block = 0; block < grid; ++block)
      for_each_item_of<false>(p, grid, block, [&](int index, int round) {
        const Work<false> w(p, index);
        last_round = std::max(last_round, round);
        for (int t = 0; t < w.n_tiles; ++t)
          EXPECT_TRUE(walked.emplace(w.b, w.h, w.m0, w.key0 + t).second) << index;
        if (w.piece == Work<false>::kHelper) helpers[w.pair] = {block, round};
        if (w.piece == Work<false>::kOwner) owners[w.pair] = {block, round};
        if (w.piece != Work<false>::kWhole) {
          EXPECT_GE(w.n_tiles, n_tiles / 2);
        }
        if (w.piece == Work<false>::kHelper) {
          EXPECT_EQ(w.key0, 0);
          EXPECT_EQ(w.n_tiles, n_tiles - n_tiles / 2);
        }
      });
    EXPECT_EQ(walked.size(), static_cast<size_t>(p.items) * n_tiles);
    for (int pair = 0; pair < p.split; ++pair) {
      EXPECT_EQ(owners[pair].first, helpers[pair].first + 1) << pair;
      EXPECT_EQ(owners[pair].second, last_round) << pair;
      EXPECT_EQ(helpers[pair].second, last_round) << pair;
    }
  }
}

}  // namespace
}  // namespace ak::test
