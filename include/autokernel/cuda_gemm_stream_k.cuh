// Stream-K over one row of output tiles (Osama, Merrill, Cecka, Garland and Owens, "Stream-K:
// Work-centric Parallel Decomposition for Dense Matrix Multiplication on the GPU", PPoPP 2023).
//
// Why: a persistent grid that hands out whole tiles idles most SMs in a partial last wave. At
// 64 x 11008 x 4096 with tiles of 64 rows of W there are 172 tiles for 132 SMs: 40 SMs take a
// second tile while 92 wait (36 us against cuBLAS's 27, docs/benchmarks.md, twenty-ninth
// session). Here each of the grid's blocks takes an equal run of the flattened (tile, k-tile)
// iterations instead, so every SM works to the end whatever the tile count.
//
// A tile cut between blocks is finished by the block whose run holds its last k-tile (the
// owner). Each block walks its run backwards (for_each_piece): a piece that ends short of its
// tile's last k-tile closes a block's run, so that block computes it first, publishes the sums to
// its own slot of a workspace, raises its flag and goes on (a helper); the owner's piece opens
// its run, so it comes last, when the helpers' flags are long up. The owner adds the helpers'
// sums in block order: the result is the same bits on every run; no atomics touch the data. Each
// block helps at most once (only a run's last piece can end short of a tile), so a slot per block
// is enough.
//
// A flag is raised when it holds the launch's token, not when it is non-zero, so no memset zeroes
// the flags before each launch: that was a second operation on the stream, and most of the 4.7 us
// by which a stream-K call outlasted its kernel (64 x 11008 x 4096: 29.2 us in Nsight Compute,
// 33.9 timed; docs/benchmarks.md, thirtieth session). The tokens of a process are distinct (a
// counter through splitmix64, a bijection, seeded by where the process's counter lies), so a flag
// left raised by an earlier launch does not read as raised, and memory that held anything else
// matches one with a chance of 2^-64. A CUDA graph replays its launch with one token, so each
// owner writes 0 back into the flags it waited for: after a launch ends no flag holds its token.
//
// An owner waits only for blocks of lower index. The GPU starts a grid's blocks in index order,
// so those are running or done, and the grid finishes even when other work holds some SMs and
// not all of its blocks are resident at once.
//
//   Plan, plan_stream_k, for_each_piece   the runs and their pieces (stream_k_plan.h)
//   publish            a helper's sums to its slot, then its flag
//   add_helpers        the owner: waits for its helpers' flags and adds their sums, block order
//   Slots, publish_slot, await_slot, add_slot, raise_flag, await_and_lower_flag
//                      the same steps by slot, for other kernels' pieces (the matmul's and the
//                      attention's split tails)
//   next_token         a launch's token, distinct from every other of the process
//   with_slots, with_workspace
//                      slots and flags from the stream-ordered pool around a launch
// C++17, header-only.
#pragma once

#include <atomic>

#include "autokernel/cuda_kernel.cuh"
#include "autokernel/stream_k_plan.h"

namespace ak_gemm::stream_k {

__device__ __forceinline__ void store_release(unsigned long long* flag, unsigned long long v) {
  asm volatile("st.release.gpu.global.b64 [%0], %1;\n" ::"l"(flag), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long load_acquire(const unsigned long long* flag) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.b64 %0, [%1];\n" : "=l"(v) : "l"(flag) : "memory");
  return v;
}

// A helper's flag raised with the launch's token, once its sums are stored (by the caller's
// threads, before a barrier that the calling thread has passed).
__device__ __forceinline__ void raise_flag(unsigned long long* flag, unsigned long long token) {
  __threadfence();
  store_release(flag, token);
}

// Waits until `flag` holds the launch's token, then lowers it for the next launch.
__device__ __forceinline__ void await_and_lower_flag(unsigned long long* flag, unsigned long long token) {
  while (load_acquire(flag) != token) __nanosleep(64);
  *flag = 0;
}

// Slots of partial sums and their flags in one workspace, and the launch's token: stream-K's
// (Plan holds the same three), and the split tails' of the matmul and the attention
// (split_tail_plan.h), a slot per piece pair and consumer warpgroup.
struct Slots {
  float* slots = nullptr;
  unsigned long long* flags = nullptr;
  unsigned long long token = 0;
};

// One warpgroup's N accumulators a thread (N a multiple of 4) into slot `slot` (N * 128 floats),
// thread t's i-th group of four at float4 index i * 128 + t (the stores of a warp are
// contiguous); then, after the warpgroup's barrier (named barrier `barrier`), its first thread
// raises the slot's flag with the token.
template <int N>
__device__ __forceinline__ void publish_slot(const Slots& to, int64_t slot, const float (&acc)[N],
                                             int barrier) {
  static_assert(N % 4 == 0, "groups of four accumulators");
  const int t = static_cast<int>(threadIdx.x % 128);
  float4* dst = reinterpret_cast<float4*>(to.slots + slot * N * 128);
#pragma unroll
  for (int i = 0; i < N / 4; ++i)
    __stcg(dst + i * 128 + t, make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
  asm volatile("bar.sync %0, 128;\n" ::"r"(barrier) : "memory");
  if (t == 0) raise_flag(to.flags + slot, to.token);
}

// The warpgroup waits (its first thread on the flag, which it lowers; the rest at barrier
// `barrier`) until slot `slot` has been published.
__device__ __forceinline__ void await_slot(const Slots& from, int64_t slot, int barrier) {
  if (threadIdx.x % 128 == 0) await_and_lower_flag(from.flags + slot, from.token);
  asm volatile("bar.sync %0, 128;\n" ::"r"(barrier) : "memory");
}

// The sums publish_slot left in slot `slot` added into acc (after await_slot, or the flag seen).
template <int N>
__device__ __forceinline__ void add_slot(const float* slots, int64_t slot, float (&acc)[N]) {
  const int t = static_cast<int>(threadIdx.x % 128);
  const float4* src = reinterpret_cast<const float4*>(slots + slot * N * 128);
#pragma unroll
  for (int i = 0; i < N / 4; ++i) {
    const float4 v = __ldcg(src + i * 128 + t);
    acc[4 * i] += v.x;
    acc[4 * i + 1] += v.y;
    acc[4 * i + 2] += v.z;
    acc[4 * i + 3] += v.w;
  }
}

// This block's helper piece: its sums into its own slot.
template <int N>
__device__ __forceinline__ void publish(const Plan& plan, const float (&acc)[N], int barrier) {
  publish_slot<N>(Slots{plan.slots, plan.flags, plan.token}, blockIdx.x, acc, barrier);
}

// The owner of `tile` (this block) adds the sums of the tile's helpers, the blocks before it
// from the one holding the tile's first k-tile, in block order; it lowers their flags for the
// next launch (no other block reads them in this one: each helps one owner).
template <int N>
__device__ __forceinline__ void add_helpers(const Plan& plan, int tile, float (&acc)[N], int barrier) {
  const int t = static_cast<int>(threadIdx.x % 128);
  const int first = plan.first_block_of(tile), last = static_cast<int>(blockIdx.x) - 1;
  if (t == 0)
    for (int b = first; b <= last; ++b) await_and_lower_flag(plan.flags + b, plan.token);
  asm volatile("bar.sync %0, 128;\n" ::"r"(barrier) : "memory");
  for (int b = first; b <= last; ++b) add_slot<N>(plan.slots, b, acc);
}

// A token no other launch of this process had, never 0.
inline unsigned long long next_token() {
  static std::atomic<unsigned long long> launches{0};
  unsigned long long z = reinterpret_cast<uintptr_t>(&launches) + 0x9E3779B97F4A7C15ull * ++launches;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z == 0 ? 1 : z;
}

// launch(slots) with `count` slots of slot_floats floats and `count` flags from the
// stream-ordered pool (kept per stream where the module keeps workspaces) and a fresh token; the
// workspace goes back after the launch's work. AK_ERR_LAUNCH when it cannot be had.
template <class Launch>
int with_slots(int64_t count, int64_t slot_floats, cudaStream_t stream, Launch&& launch) {
  const size_t slot_bytes = static_cast<size_t>(count) * slot_floats * sizeof(float);
  const size_t flag_bytes = static_cast<size_t>(count) * sizeof(unsigned long long);
  return ak_cuda::with_workspace(slot_bytes + flag_bytes, stream, [&](void* ws) {
    return launch(Slots{static_cast<float*>(ws),
                        reinterpret_cast<unsigned long long*>(static_cast<char*>(ws) + slot_bytes),
                        next_token()});
  });
}

// launch(plan) with plan's slots (slot_floats a block) and flags, a slot and a flag per block.
template <class Launch>
int with_workspace(Plan plan, int64_t slot_floats, cudaStream_t stream, Launch&& launch) {
  return with_slots(plan.blocks, slot_floats, stream, [&](const Slots& s) {
    plan.slots = s.slots;
    plan.flags = s.flags;
    plan.token = s.token;
    return launch(plan);
  });
}

}  // namespace ak_gemm::stream_k
