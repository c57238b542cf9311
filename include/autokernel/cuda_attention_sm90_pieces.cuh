// Where a split item's two pieces meet (the wgmma attention's split tails: attention_schedule.h's
// split_tail and Work). The helper's consumer warpgroup c leaves its running O and row states in
// slot 2 pair + c of the launch's workspace (float4 i of thread t at i * 128 + t: a warp's stores
// are contiguous), then raises the slot's flag with the launch's token (as stream-K's helpers do,
// cuda_gemm_stream_k.cuh: no memset clears the flags before a launch). The owner's warpgroup, which
// ran the item's other key tiles with the same rows on the same threads, waits for the flag, lowers
// it (a CUDA graph replays one token) and folds the helper's part into its own, each row at the
// larger of the two maxima: one formula whichever piece ends first, so every run gives the same
// bits. The owner's block is the helper's plus one, started after it: the wait ends.
#pragma once

#include "autokernel/cuda_attention.cuh"
#include "autokernel/cuda_gemm_stream_k.cuh"

namespace ak_attention_sm90 {

// The split items' workspace (Problem::split > 0): per split item and consumer warpgroup a slot of
// kPieceSlotFloats<D> floats a thread (stream_k::publish_slot's layout), and a flag.
using SplitSlots = ak_gemm::stream_k::Slots;

// O's D / 2 floats a thread, then both rows' maximum and sum.
template <int D>
constexpr int kPieceSlotFloats = D / 2 + 4;

// The helper's warpgroup c: its O accumulators (the wgmma layout, rows (i / 2) & 1) and row states,
// under named barrier 3 + c (1 and 2 are the ping-pong turns).
template <int D>
__device__ __forceinline__ void publish_piece(const SplitSlots& split, int pair, int c,
                                              const float (&o)[D / 2], const ak_cuda::RowState (&rows)[2]) {
  float piece[kPieceSlotFloats<D>];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) piece[i] = o[i];
  piece[D / 2] = rows[0].max;
  piece[D / 2 + 1] = rows[0].sum;
  piece[D / 2 + 2] = rows[1].max;
  piece[D / 2 + 3] = rows[1].sum;
  ak_gemm::stream_k::publish_slot<kPieceSlotFloats<D>>(split, 2 * pair + c, piece, 3 + c);
}

// The owner's warpgroup c: the helper's part added into o and rows.
template <int D>
__device__ __forceinline__ void add_helper(const SplitSlots& split, int pair, int c, float (&o)[D / 2],
                                           ak_cuda::RowState (&rows)[2]) {
  const int64_t index = 2 * pair + c;
  ak_gemm::stream_k::await_slot(split, index, 3 + c);
  const float4* slot =
      reinterpret_cast<const float4*>(split.slots + index * kPieceSlotFloats<D> * 128) + threadIdx.x % 128;
  const float4 states = __ldcg(slot + (D / 8) * 128);
  const float their_max[2] = {states.x, states.z}, their_sum[2] = {states.y, states.w};
  float ours[2], theirs[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float max = fmaxf(rows[r].max, their_max[r]);
    ours[r] = ak_cuda::fast_exp2(rows[r].max - max);
    theirs[r] = ak_cuda::fast_exp2(their_max[r] - max);
    rows[r].sum = rows[r].sum * ours[r] + their_sum[r] * theirs[r];
    rows[r].max = max;
  }
#pragma unroll
  for (int i = 0; i < D / 8; ++i) {
    const float4 v = __ldcg(slot + i * 128);
    o[4 * i] = o[4 * i] * ours[0] + v.x * theirs[0];
    o[4 * i + 1] = o[4 * i + 1] * ours[0] + v.y * theirs[0];
    o[4 * i + 2] = o[4 * i + 2] * ours[1] + v.z * theirs[1];
    o[4 * i + 3] = o[4 * i + 3] * ours[1] + v.w * theirs[1];
  }
}

}  // namespace ak_attention_sm90
