// Stream-K's runs over one row of output tiles (cuda_gemm_stream_k.cuh): each block of the grid
// takes an equal run of the flattened (tile, k-tile) iterations, cut into pieces at tile edges.
// Plain C++17 with host-and-device functions, so that the arithmetic is tested without a GPU
// (tests/unit/test_stream_k_plan.cpp).
#pragma once

#include <stdint.h>

#include "autokernel/host_device.h"

namespace ak_gemm::stream_k {

// A run shorter than this spends more on publishing or adding a tile's sums than it computes.
constexpr int kMinRun = 4;

struct Plan {
  int tiles, k_tiles, blocks;
  float* slots;  // blocks slots of the consumers' accumulators (cuda_gemm_stream_k.cuh's publish)
  // blocks flags: a helper raises its own by writing the launch's token, and the owner that waited
  // for it writes 0 back (cuda_gemm_stream_k.cuh says why no memset zeroes them)
  unsigned long long* flags;
  unsigned long long token;

  AK_HOST_DEVICE int64_t total() const { return static_cast<int64_t>(tiles) * k_tiles; }
  // Block b's run is the iterations [begin(b), begin(b + 1)); none is empty while blocks <= total().
  AK_HOST_DEVICE int64_t begin(int b) const { return total() * b / blocks; }
  // The block whose run holds iteration it: the last b with begin(b) <= it.
  AK_HOST_DEVICE int block_of(int64_t it) const {
    return static_cast<int>(((it + 1) * blocks - 1) / total());
  }
  // The first block with a piece of `tile` (its first k-tile): the owner, the block with the
  // tile's last k-tile, waits for every block from this one up to the one before itself.
  AK_HOST_DEVICE int first_block_of(int tile) const { return block_of(static_cast<int64_t>(tile) * k_tiles); }
};

// The grid for tiles x k_tiles iterations: a block an SM, fewer where runs would be shorter than
// kMinRun, at least one. Tiles and k_tiles at least 1.
inline Plan plan_stream_k(int tiles, int k_tiles, int sms) {
  const int64_t total = static_cast<int64_t>(tiles) * k_tiles;
  int64_t blocks = total / kMinRun;
  if (blocks > sms) blocks = sms;
  if (blocks < 1) blocks = 1;
  return {tiles, k_tiles, static_cast<int>(blocks), nullptr, nullptr, 0};
}

// visit(tile, kt_begin, kt_end) for each piece of the block's run, the last piece first. Only the
// run's last piece can end short of k_tiles (a helper's: visited first, so that it is published
// early), and only its first can start past k-tile 0 and end at k_tiles (an owner's: visited
// last, when its helpers, blocks before this one, have long published theirs). Waiting only on
// blocks of lower index keeps the grid moving even when not all of it is resident at once: the
// GPU starts blocks in index order, so those are running or done.
template <class Visit>
AK_HOST_DEVICE void for_each_piece(const Plan& plan, int block, Visit&& visit) {
  const int64_t begin = plan.begin(block);
  for (int64_t it = plan.begin(block + 1); it > begin;) {
    const int tile = static_cast<int>((it - 1) / plan.k_tiles);
    const int64_t tile_begin = static_cast<int64_t>(tile) * plan.k_tiles;
    const int64_t piece_begin = begin > tile_begin ? begin : tile_begin;
    visit(tile, static_cast<int>(piece_begin - tile_begin), static_cast<int>(it - tile_begin));
    it = piece_begin;
  }
}

}  // namespace ak_gemm::stream_k
