// Building blocks of the wgmma attention (cuda_attention_sm90.cuh): 4-d tensor maps over strided
// [B, H, S, D] views and their TMA loads, wgmma with the A operand in registers, the block's
// configuration (AK_ATTENTION_* macros), its shared-memory layout and barriers; the work schedule
// (which query tiles a block takes, in which order) is attention_schedule.h.
//
// Register A operand of wgmma.m64nNk16 with 16-bit inputs (PTX ISA, "Register fragments and
// shared memory matrix layouts", wgmma A): warp w of the warpgroup holds rows 16 w .. 16 w + 15
// of the 64 x 16 tile in the layout of the mma.m16n8k16 A fragment: with g = lane / 4 and
// t = lane % 4, a0 = row g, cols 2t, 2t+1; a1 = row g+8, same cols; a2 = row g, cols 2t+8, 2t+9;
// a3 = row g+8, cols 2t+8, 2t+9 (low half = lower column). That is the accumulator layout of two
// adjacent 8-column groups of a wgmma result, so probabilities feed P V without moving.
#pragma once

#include <algorithm>

#include "autokernel/attention_schedule.h"
#include "autokernel/cuda_attention.cuh"
#include "autokernel/cuda_attention_trace.cuh"
#include "autokernel/cuda_gemm.cuh"
#include "autokernel/cuda_sm90.cuh"

namespace ak_attention_sm90 {

using namespace ak_gemm::sm90;

// A [B, H, S, D] view (strides in elements, inner stride 1) read in boxes of 64 columns (128
// bytes) x box_rows rows of one head, stored with the 128-byte swizzle. Rows past S of a head
// read as zeros: S is a dimension of its own, so a box never spills into the next head.
template <typename T>
bool make_head_map(CUtensorMap* map, const T* base, const int64_t (&shape)[4], const int64_t (&strides)[3],
                   int box_rows) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(shape[3]), static_cast<cuuint64_t>(shape[2]),
                              static_cast<cuuint64_t>(shape[1]), static_cast<cuuint64_t>(shape[0])};
  const cuuint64_t bytes[3] = {static_cast<cuuint64_t>(strides[2]) * sizeof(T),
                               static_cast<cuuint64_t>(strides[1]) * sizeof(T),
                               static_cast<cuuint64_t>(strides[0]) * sizeof(T)};
  for (const cuuint64_t b : bytes)
    if (b % 16 != 0 || b == 0 || b >= (1ull << 40)) return false;
  const cuuint32_t box[4] = {64, static_cast<cuuint32_t>(box_rows), 1, 1};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  const CUtensorMapDataType type =
      std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return encode(map, type, 4, const_cast<T*>(base), dims, bytes, box, element_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Box (column x, row y of head h of batch b) of `map` from shared memory, in the thread's bulk
// group; TMA skips the box's elements outside the tensor.
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, uint32_t src, int x, int y, int h,
                                             int b) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(x), "r"(y), "r"(h), "r"(b), "r"(src)
               : "memory");
}

// Box (column x, row y of head h of batch b) of `map` into shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, int x, int y, int h, int b,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
      "%5}], [%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(h), "r"(b), "r"(bar)
      : "memory");
}

#define AK_WGMMA_RS(N, REGS, A0, A1, A2, A3, SCALE, B, TYPE)                                             \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %" #SCALE                                             \
               ", 0;\n"                                                                                  \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" AK_WGMMA_REGS_##REGS \
               "}, {%" #A0 ", %" #A1 ", %" #A2 ", %" #A3 "}, %" #B ", p, 1, 1, 1;\n}\n"                  \
               : AK_WGMMA_OUTS_##REGS(d)                                                                 \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(1), "l"(b))

// d (64 x N per warpgroup, fp32) += A (64 x 16 in registers) * B (16 x N, MN-major in shared
// memory: the descriptor's transpose bit is set); N = D, 64 or 128.
template <typename T, int N>
__device__ __forceinline__ void wgmma_rs_trans(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t b) {
  constexpr bool kHalf = std::is_same_v<T, __half>;
  if constexpr (N == 64) {
    if constexpr (kHalf) AK_WGMMA_RS(64, 32, 32, 33, 34, 35, 36, 37, "f16");
    if constexpr (!kHalf) AK_WGMMA_RS(64, 32, 32, 33, 34, 35, 36, 37, "bf16");
  } else {
    static_assert(N == 128, "P V is 64 or 128 columns wide");
    if constexpr (kHalf) AK_WGMMA_RS(128, 64, 64, 65, 66, 67, 68, 69, "f16");
    if constexpr (!kHalf) AK_WGMMA_RS(128, 64, 64, 65, 66, 67, 68, 69, "bf16");
  }
}
#undef AK_WGMMA_RS

// Block: warpgroup 0 produces (one thread issues every copy), warpgroups 1 and 2 consume query
// rows 0-63 and 64-127 of the block's 128. Key/value tiles of 128 keys for causal calls, of
// AK_ATTENTION_KEYS (128 or 176) for the others: a wider tile spends the per-tile work (the
// barriers, the row maxima and sums, O's rescale) on more keys, as FlashAttention-3 takes
// 128 x 176 tiles at D = 128.
// K and V come through two rings of the same depth, so that a K tile is handed back once its
// scores are done and the next one loads while P V still reads V: with 2 stages the copy of K(t + 2)
// starts when S(t) completes and V(t + 2)'s when P V(t) does, each a whole tile's math ahead of its
// use. 3 stages (224 KB with one Q buffer at 128 keys) give two tiles' math; 2 leave room for a
// second Q buffer at D = 128. A tile width whose rings do not fit the depth asked for takes 2.
#ifndef AK_ATTENTION_KV_STAGES
#define AK_ATTENTION_KV_STAGES 2
#endif
#ifndef AK_ATTENTION_KEYS
#define AK_ATTENTION_KEYS 128
#endif
// Ping-pong (1): the two consumer warpgroups take turns to issue their wgmma groups (named
// barriers 1 and 2, each warpgroup waiting on its own and arriving on the other's), so that one
// warpgroup's softmax runs while the other's S and P V occupy the tensor cores, instead of both
// computing exponentials at the same time with the tensor cores idle.
#ifndef AK_ATTENTION_PINGPONG
#define AK_ATTENTION_PINGPONG 0
#endif
// Persistent (1): one block per SM walks its share of the work items (query tiles of a head, see
// Work), so that the producer loads the next item's Q and first K/V tiles while the consumers
// finish and store the current one; 0: one block per unit of items, scheduled by the hardware.
#ifndef AK_ATTENTION_PERSISTENT
#define AK_ATTENTION_PERSISTENT 0
#endif
// Chain (1): a block's consumers run its items as one stream of key tiles, an item's last P V
// in one turn with the next item's first S (Consumer::run_items_chained); taken at D = 64 where
// the layout has two Q buffers. 0: each item starts with its first S alone and ends with its last P V alone.
#ifndef AK_ATTENTION_CHAIN
#define AK_ATTENTION_CHAIN 0
#endif
// TMA store (1): each consumer warpgroup writes its 64 rows of O into the item's finished Q
// buffer and one thread sends them with TMA (Consumer::store_staged); 0: every thread stores its
// values to global memory itself.
#ifndef AK_ATTENTION_TMA_STORE
#define AK_ATTENTION_TMA_STORE 0
#endif
// Lazy rescale (1): a row keeps its running maximum until a tile's exceeds it by more than
// kLazyLog2 (base 2): that tile's exponentials are then at most 2^kLazyLog2, well within fp32 and
// the 16-bit P, and O is not rescaled (the factor is exactly 1), which is what most tiles after
// the first few need. 0: the maximum is updated on every tile and O rescaled with it. 2: lazy for
// calls of at least kLazyFromKeys keys, where a row walks enough tiles for the skipped rescales
// to pay for the vote that skips them (H100: 2-7% faster at 2048 and 4096 keys, up to 3% slower
// at 512; docs/benchmarks.md, 2026-12-06).
#ifndef AK_ATTENTION_LAZY_RESCALE
#define AK_ATTENTION_LAZY_RESCALE 2
#endif
// Balance (1): causal calls whose K and V fit twice in L2 take their query tiles heaviest first
// across all heads, dealt to the blocks back and forth (Work, for_each_item); 0, and every other
// call: head by head, causal tiles in heavy/light pairs.
#ifndef AK_ATTENTION_BALANCE
#define AK_ATTENTION_BALANCE 0
#endif
// Deferred Q release (1): with two Q buffers, an item's O leaves through TMA while the next item
// runs, its buffer handed back after that item's first S (Consumer::release_stored_q) instead of
// each consumer warpgroup's first warp waiting for the copy's read before the next item's first
// product, which needs all four warps. 0: wait, then hand back.
#ifndef AK_ATTENTION_DEFER_Q_RELEASE
#define AK_ATTENTION_DEFER_Q_RELEASE 1
#endif
// Split tail (1): with a persistent grid, non-causal calls whose last round of items fills at
// most half the grid run each of those items as two pieces along the keys (split_tail, Work), so
// that the round takes about half as long; 0: whole items only.
#ifndef AK_ATTENTION_SPLIT_TAIL
#define AK_ATTENTION_SPLIT_TAIL 0
#endif
constexpr int kThreads = 384, kConsumerWarps = 8, kRingDepth = AK_ATTENTION_KV_STAGES;
constexpr int kNonCausalKeys = AK_ATTENTION_KEYS;
static_assert(kNonCausalKeys == 128 || kNonCausalKeys == 176, "key tiles of 128 or 176 keys");
constexpr bool kPingPong = AK_ATTENTION_PINGPONG != 0, kPersistent = AK_ATTENTION_PERSISTENT != 0;
constexpr bool kChain = AK_ATTENTION_CHAIN != 0, kTmaStore = AK_ATTENTION_TMA_STORE != 0;
constexpr int kLazyRescale = AK_ATTENTION_LAZY_RESCALE, kLazyFromKeys = 2048;
static_assert(kLazyRescale >= 0 && kLazyRescale <= 2, "lazy rescale: 0 never, 1 always, 2 by length");
constexpr bool kBalance = AK_ATTENTION_BALANCE != 0;
// (Chained items run no pieces: the consumers' chained path has no helper's publish.)
constexpr bool kSplitTail = AK_ATTENTION_SPLIT_TAIL != 0 && kPersistent && !kChain;
constexpr float kLazyLog2 = 8.0f;

// Shared memory from a 1024-byte aligned base, every tile in the 128-byte swizzle, for head
// dimension D (64 or 128) in D / 64 slabs of 64 columns and key tiles of Keys keys:
//   Q buffer i  the slabs (columns 0-63, 64-127) of 128 rows x 128 bytes (K-major A operand;
//               SBO 1024); two buffers where they fit beside the rings, so that the next item's
//               Q loads while the current one is still read
//   K ring      kStages tiles: slabs of Keys rows (K-major B operand)
//   V ring      kStages tiles: boxes of kVBoxKeys keys x 64 columns, box (key group kh, column
//               slab dh) at kh * kVGroupBytes + kVBoxBytes dh (MN-major B operand: LBO kVBoxBytes
//               to the next 64 columns, SBO 1024 to the next 8 keys, 16 keys at 2048 bytes within
//               a box)
//   barriers    the Q ring's, the K ring's, the V ring's (Barriers)
constexpr int kSlabBytes = 128 * 128, kSmemLimit = 232448;
template <int D, int Keys>
struct Layout {
  static_assert(D == 64 || D == 128, "the wgmma variant takes D = 64 or 128");
  static_assert(Keys % 16 == 0 && Keys <= 256, "key tiles of whole k-steps, one TMA box high");
  static constexpr int kSlabs = D / 64, kQBytes = kSlabs * kSlabBytes;
  static constexpr int kKSlabBytes = Keys * 128, kKBytes = kSlabs * kKSlabBytes;
  static constexpr int kVBoxKeys = Keys % 64 == 0 ? 64 : Keys, kVBoxBytes = kVBoxKeys * 128;
  static constexpr int kVGroupBytes = kSlabs * kVBoxBytes;  // the boxes of kVBoxKeys keys across D
  static constexpr int kVBytes = (Keys / kVBoxKeys) * kVGroupBytes;
  static constexpr int bytes(int q_buffers, int stages) {
    return q_buffers * kQBytes + stages * (kKBytes + kVBytes) + 2 * (q_buffers + 2 * stages) * 8 + 1024;
  }
  static constexpr int kStages = bytes(1, kRingDepth) <= kSmemLimit ? kRingDepth : 2;
  static constexpr int kQBuffers = bytes(2, kStages) <= kSmemLimit ? 2 : 1;
  static constexpr int kSmemBytes = bytes(kQBuffers, kStages);
  static constexpr int kKRing = kQBuffers * kQBytes, kVRing = kKRing + kStages * kKBytes;
  static constexpr int kBarriers = kVRing + kStages * kVBytes;
  static_assert(kRingDepth >= 2, "at least double buffering");
  static_assert(kSmemBytes <= kSmemLimit, "the rings must fit the 227 KB a block may opt into");
  // Where ring position `slot`'s K and V tiles start, from the aligned base.
  __host__ __device__ static constexpr int k_at(int slot) { return kKRing + (slot % kStages) * kKBytes; }
  __host__ __device__ static constexpr int v_at(int slot) { return kVRing + (slot % kStages) * kVBytes; }
  // Where key step kk (16 keys) of a V tile starts.
  __host__ __device__ static constexpr int v_step(int kk) {
    return (16 * kk / kVBoxKeys) * kVGroupBytes + (16 * kk % kVBoxKeys) * 128;
  }
  // Wider tiles hold more scores and probabilities per thread (Keys / 2 scores, Keys / 4 words of
  // P and D / 2 of O: 196 at 176 keys and D = 128, which 240 registers take without spilling):
  // the producer gives more back.
  static constexpr int kProducerRegs = Keys > 128 ? 24 : 40, kConsumerRegs = Keys > 128 ? 240 : 232;
};

// The barriers at Layout::kBarriers: the Q ring's, the K ring's, the V ring's.
template <int D, int Keys>
struct Barriers {
  using L = Layout<D, Keys>;
  Ring q, k, v;
  __device__ __forceinline__ explicit Barriers(uint32_t base)
      : q{base, L::kQBuffers},
        k{base + 16 * L::kQBuffers, L::kStages},
        v{base + 16 * (L::kQBuffers + L::kStages), L::kStages} {}
};

struct Out {
  void* o;
  int64_t sb, sh, ss;
  bool staged;  // O goes out through shared memory and TMA (kTmaStore, and O's strides take a map)
};

// Calls f(item, round) for this block's items in order (attention_schedule.h).
template <bool Spread, class F>
__device__ __forceinline__ void for_each_item(const Problem& p, F&& f) {
  for_each_item_of<Spread>(p, static_cast<int>(gridDim.x), static_cast<int>(blockIdx.x), f);
}

}  // namespace ak_attention_sm90
