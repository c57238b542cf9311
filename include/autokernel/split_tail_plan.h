// The last round of a persistent grid cut in two (SPLIT_TAIL): the wgmma matmul's tiles along K
// (kernels/cuda/matmul.cu; cuda_gemm_sm90.cuh's work_item and consume) and the wgmma attention's
// non-causal items along the keys (flash_attention.cu; attention_schedule.h's split_tail and
// Work). Plain C++17 with host-and-device functions, so that the CPU tests check the pieces and
// the picks (tests/unit/test_split_tail_plan.cpp, test_attention_schedule.cpp).
//
// Why: a grid of one block an SM takes its work in rounds, and a last round of r tiles on s SMs
// takes as long as a full one while s - r SMs idle. At 4096 x 2560 x 4096 in 128 x 256 tiles that
// is 320 tiles, two rounds and a third of 56 (76 SMs idle), which is why the defaults take three
// rounds of 224-wide tiles there, 5% of them past N (126-127 us against cuBLAS's 117-118, H100,
// forty-first and forty-second sessions); attention at 4 x 14 heads x 1024 rows has 448 items, a
// last round of 52. Where the last round fits the grid twice, each of its tiles becomes two
// pieces on neighbouring blocks: the helper (the lower block) walks the first ceil(k / 2) k-tiles
// (key tiles) and leaves its fp32 sums in a workspace slot, raising a flag with the launch's token
// as stream-K's helpers do (cuda_gemm_stream_k.cuh); the owner walks the rest, waits for the flag,
// adds the helper's part to its own and stores the tile. The last round takes about half as long.
// The owner adds in one order whichever piece ends first: the same bits every run. It waits only
// for the block just below it, which the GPU started first: the grid finishes.
#pragma once

#include <stdint.h>

#include "autokernel/host_device.h"

namespace ak_gemm::split_tail {

// A matmul piece shorter than this fills and drains the ring for less than the publish and add cost.
constexpr int kMinPieceKTiles = 4;

enum Piece : int { kWhole = 0, kHelper = 1, kOwner = 2 };

// How many tiles of the last round to cut in two, on a grid of one block an SM: those of a last
// round that fits the grid twice, when each piece gets min_piece_k_tiles. The matmul's split only
// after at least one full round (a single partial round is split-K's: cuda_gemm_sm90_launch.cuh's
// run_split_k); partial_first_round (the attention, which has no split-K) splits that one too.
// 0: none.
AK_HOST_DEVICE inline int64_t tiles_to_split(int64_t tiles, int64_t k_tiles, int64_t sms,
                                             int64_t min_piece_k_tiles = kMinPieceKTiles,
                                             bool partial_first_round = false) {
  if (sms < 2 || k_tiles < 2 * min_piece_k_tiles || (tiles <= sms && !partial_first_round)) return 0;
  const int64_t last = tiles % sms;
  return 2 * last <= sms ? last : 0;
}

// The grid's time in half rounds, a round one tile an SM: a last round tiles_to_split cuts counts
// one half (k_tiles 0: none is cut, twice the whole rounds).
AK_HOST_DEVICE inline int64_t half_rounds(int64_t tiles, int64_t k_tiles, int64_t sms) {
  if (sms < 1) sms = 1;
  const int64_t full = tiles / sms, last = tiles % sms;
  const bool halved = tiles_to_split(tiles, k_tiles, sms) > 0;
  return 2 * full + (last == 0 ? 0 : halved ? 1 : 2);
}

// Work index `index` of a grid of `tiles` tiles whose last `split` are cut in two: indices
// [0, tiles - split) are whole tiles; the 2 split after them pieces, j = index - (tiles - split)
// of tile tiles - split + j / 2, j even its helper (k-tiles [0, ceil(k / 2))), odd its owner
// (the rest). With split from tiles_to_split the pieces are the last round: piece j on block j.
struct Item {
  int tile, kt_begin, kt_end;
  Piece piece;
  int pair;  // a piece's split tile, counted from the first split one
};

AK_HOST_DEVICE inline Item item_of(int tiles, int split, int k_tiles, int index) {
  const int whole = tiles - split;
  if (index < whole) return {index, 0, k_tiles, kWhole, 0};
  const int j = index - whole, helper_k_tiles = (k_tiles + 1) / 2;
  if (j % 2 == 0) return {whole + j / 2, 0, helper_k_tiles, kHelper, j / 2};
  return {whole + j / 2, helper_k_tiles, k_tiles, kOwner, j / 2};
}

}  // namespace ak_gemm::split_tail
