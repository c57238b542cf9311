// Where a block of the wgmma attention (cuda_attention_sm90.cuh) spends its time, for
// bench/attention_timeline.cu, which compiles the kernel with AK_ATTENTION_TRACE defined. Then
// thread 0 of each warpgroup records the SM's cycle counter (clock64: one per SM, so only marks of
// one block compare) at the marks below, for the first kTraceItems items of the first
// kTraceBlocks blocks; without it every mark compiles to nothing, and the kernel is the same.
//
// Consumer warpgroups (1, 2), per item: kItemBegin (before waiting for its Q), kQReady,
// kFirstScores (S of its first key tile back from the tensor cores), kFirstSoftmax (that tile's P
// in registers), kLastPvIssued, kLastPvDone, kStored (O written).
// Producer (warpgroup 0), per item: kItemBegin (before waiting for a free Q buffer), kQReady (Q's
// copy issued), kLastPvIssued (the item's last V copy issued).
// Per block, in item slot kTraceItems: kItemBegin at the kernel's entry, kStored at its exit; and
// where the includer defines AK_ATTENTION_TRACE_WALL() (a read of the GPU's global clock, as
// bench/attention_timeline.cu does: the kernel's own source never reads it), the producer's
// entry and exit on that clock in trace_wall, which places the blocks within the call.
#pragma once

namespace ak_attention_sm90 {

enum TraceMark {
  kItemBegin,
  kQReady,
  kFirstScores,
  kFirstSoftmax,
  kLastPvIssued,
  kLastPvDone,
  kStored,
  kTraceMarks
};

constexpr int kTraceBlocks = 264, kTraceItems = 8;
#ifdef AK_ATTENTION_TRACE
__device__ long long trace_marks[kTraceBlocks][3][kTraceItems + 1][kTraceMarks];

__device__ unsigned long long trace_wall[kTraceBlocks][2];

__device__ __forceinline__ void trace(int warpgroup, int item, TraceMark mark) {
  if (threadIdx.x % 128 == 0 && blockIdx.x < kTraceBlocks && item <= kTraceItems) {
    trace_marks[blockIdx.x][warpgroup][item][mark] = clock64();
#ifdef AK_ATTENTION_TRACE_WALL
    if (warpgroup == 0 && item == kTraceItems)
      trace_wall[blockIdx.x][mark == kItemBegin ? 0 : 1] = AK_ATTENTION_TRACE_WALL();
#endif
  }
}
#else
__device__ __forceinline__ void trace(int, int, TraceMark) {}
#endif

}  // namespace ak_attention_sm90
