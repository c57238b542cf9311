// The work schedule of the wgmma attention (cuda_attention_sm90.cuh): which query tile each work
// item is and which items each block of the grid takes, in which order. Host and device code, so
// that the CPU tests can check that every tile is taken once and how even the blocks' loads are
// (tests/unit/test_attention_schedule.cpp).
#pragma once

#include <cstdint>

#include "autokernel/split_tail_plan.h"

#ifdef __CUDACC__
#define AK_SCHEDULE_FN __host__ __device__ __forceinline__
#else
#define AK_SCHEDULE_FN inline
#endif

namespace ak_attention_sm90 {

// Query rows per block; keys per K/V tile of causal calls (a tile of 128 keys covers both
// consumer warpgroups' diagonals). Non-causal calls may take wider tiles (Work's Keys).
constexpr int kRows = 128, kKeys = 128;

// CUDA's min on the device (the code the kernel was timed with), the same on the host.
AK_SCHEDULE_FN int lesser(int a, int b) {
#ifdef __CUDA_ARCH__
  return min(a, b);
#else
  return a < b ? a : b;
#endif
}

struct Problem {
  int seq, group;
  float scale_log2;  // > 0: the row maximum of the raw scores is that of the scaled ones
  bool causal;
  int heads, m_tiles, items;  // items = m_tiles * heads * batch
  // The last `split` items run as two pieces each (split_tail): work indices [0, items - split)
  // are whole items, the 2 * split after them pieces (Work).
  int split = 0;
  // Items a block takes at a time, head by head: causal ones in heavy/light pairs (Work); spread,
  // one at a time.
  AK_SCHEDULE_FN int unit(bool spread = false) const { return causal && !spread ? 2 : 1; }
  AK_SCHEDULE_FN int work() const { return items + split; }  // work indices, pieces counted
};

// How many of the last items to cut in two along the keys, for a persistent grid of up to `sms`
// blocks whose items each walk the whole sequence in key tiles of Keys: a round of items that fills only part
// of the grid takes as long as a full one, so where the last round's items fit the grid twice over, each
// becomes two pieces of half its key tiles, run side by side, and the round takes about half as
// long (4 x 14 heads x 1024 rows: 448 items on 132 SMs, a last round of 52; 104 pieces). Only
// non-causal items (a causal piece could lie wholly past its rows' diagonal), of at least 4 key
// tiles (a piece of one tile overlaps nothing). 0: none.
template <int Keys = kKeys>
AK_SCHEDULE_FN int split_tail(const Problem& p, int sms) {
  if (p.causal) return 0;
  return static_cast<int>(
      ak_gemm::split_tail::tiles_to_split(p.items, (p.seq + Keys - 1) / Keys, sms, 2, true));
}

// Work item i: query tile m0 of head h of batch b. Within a head a causal item's cost is its
// number of key tiles, m + 1 for tile m. Spread is the launch's choice, as a template argument
// (as a field of Problem, the code it changed cost the other calls 4% at 8 x 12 x 512 x 64).
//  - By default items run head by head, so that the blocks running at once share their heads' K
//    and V in L2. Causal items alternate heavy and light (tiles M - 1, 0, M - 2, 1, ...) and a
//    block takes them in pairs (Problem::unit) of nearly equal cost, M + 1 key tiles: blocks that
//    each take every grid-th pair then carry nearly equal loads, where every grid-th single item
//    (heavy first) left some blocks 12-20% more work than others.
//  - Spread (causal, K and V within L2): every head's tile M - 1 first, then every head's M - 2,
//    and so on, dealt to the blocks in rounds that alternate direction (for_each_item_of), which
//    evens the loads where there are few pairs per block: at 8 x 12 heads x 512 rows on 132 SMs,
//    the pairs give 60 blocks 10 key tiles and the rest 5; spread, no block has more than 8.
// Work index i >= items - split (not spread) is a piece of split item items - split + j / 2,
// j = i - (items - split): j even its helper, which walks the item's first ceil(n / 2) key tiles
// and leaves its running O and row states in a slot (`pair`), j odd its owner, which walks the
// rest, adds the helper's part and stores O. A helper's work index is its owner's less one, so in
// the one round the pieces take (split_tail) the helper is the lower block: the owner waits only
// for a block the GPU started before it.
template <bool Spread, int Keys = kKeys>
struct Work {
  using Piece = ak_gemm::split_tail::Piece;
  static constexpr Piece kWhole = ak_gemm::split_tail::kWhole, kHelper = ak_gemm::split_tail::kHelper,
                         kOwner = ak_gemm::split_tail::kOwner;
  int m0, h, b, n_tiles;
  int key0 = 0;  // the first key tile walked
  Piece piece = kWhole;
  int pair = 0;  // a piece's split item, counted from the first split one
  AK_SCHEDULE_FN Work(const Problem& p, int index) {
    int item = index;
    ak_gemm::split_tail::Item piece_of{};  // (split items are non-causal: every one has all the key tiles)
    if (!Spread && index >= p.items - p.split) {
      piece_of = ak_gemm::split_tail::item_of(p.items, p.split, (p.seq + Keys - 1) / Keys, index);
      item = piece_of.tile;
      piece = piece_of.piece;
      pair = piece_of.pair;
    }
    int hb, q;
    if constexpr (Spread) {
      const int heads = p.heads * (p.items / (p.heads * p.m_tiles));
      hb = item % heads;
      q = item / heads;
      m0 = (p.m_tiles - 1 - q) * kRows;
    } else {
      hb = item / p.m_tiles;
      q = item % p.m_tiles;
      m0 = ((q & 1) && p.causal ? q / 2 : p.m_tiles - 1 - (p.causal ? q / 2 : q)) * kRows;
    }
    h = hb % p.heads;
    b = hb / p.heads;
    const int end = p.causal ? lesser(p.seq, m0 + kRows) : p.seq;
    n_tiles = (end + Keys - 1) / Keys;
    if (piece != kWhole) {
      key0 = piece_of.kt_begin;
      n_tiles = piece_of.kt_end - piece_of.kt_begin;
    }
  }
};

// Calls f(item, round) for the items (work indices: pieces of split items among them, Work)
// block `block` of a grid of `grid` takes, in order (round counts them): units of p.unit()
// consecutive items, the block taking units block, + grid, ...; spread, the rounds alternate
// direction (unit block of even rounds, grid - 1 - block of odd ones), so that a block dealt a
// heavier item in one round is dealt a lighter one next.
#ifdef __CUDACC__
#pragma nv_exec_check_disable  // f is the device's lambda on the GPU, the test's on the host
#endif
template <bool Spread, class F>
AK_SCHEDULE_FN void for_each_item_of(const Problem& p, int grid, int block, F&& f) {
  int round = 0;
  if constexpr (Spread) {
    for (int r = 0;; ++r) {
      const int item = r * grid + ((r & 1) ? grid - 1 - block : block);
      if (item >= p.work()) break;
      f(item, round++);
    }
  } else {
    const int unit = p.unit();
    for (int u = block; u * unit < p.work(); u += grid)
      for (int item = u * unit; item < lesser(p.work(), (u + 1) * unit); ++item) f(item, round++);
  }
}

// The item block `block` takes in round `round` (for_each_item_of's order), or -1 past its last:
// what a block that looks one item ahead (AK_ATTENTION_CHAIN) takes next.
template <bool Spread>
AK_SCHEDULE_FN int item_of_round(const Problem& p, int grid, int block, int round) {
  int item;
  if constexpr (Spread) {
    item = round * grid + ((round & 1) ? grid - 1 - block : block);
  } else {
    const int unit = p.unit();
    item = (block + (round / unit) * grid) * unit + round % unit;
  }
  return item < p.work() ? item : -1;
}

}  // namespace ak_attention_sm90
