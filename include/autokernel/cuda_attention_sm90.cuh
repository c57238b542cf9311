// The wgmma variant of kernels/cuda/flash_attention.cu (sm_90a only, fp16/bf16, D = 64 or 128), in the
// FlashAttention-3 shape: the producer, the consumer warpgroups, the kernel attention_wgmma
// (per-tile pipeline described at its pieces below) and launch<T>, which answers
// AK_ERR_UNSUPPORTED for what it cannot take. Tensor maps, the block's layout, barriers and
// work schedule: cuda_attention_sm90_blocks.cuh; mbarriers, descriptors and the shared-operand
// wgmma: cuda_sm90.cuh.
#pragma once

#include "autokernel/cuda_attention_sm90_blocks.cuh"

namespace ak_attention_sm90 {

// One thread: for each of this block's items, Q into its buffer once the consumers are done with
// that buffer's last item, then each of the item's key tiles: K into the K ring, V into the V
// ring. `slot` counts ring positions across items, so the rings run on from one item into the next.
template <int D, int Keys, bool Spread>
__device__ __forceinline__ void produce(const CUtensorMap* mq, const CUtensorMap* mk, const CUtensorMap* mv,
                                        uint32_t smem, const Barriers<D, Keys>& bar, const Problem& p) {
  using L = Layout<D, Keys>;
  int slot = 0;
  for_each_item<Spread>(p, [&](int item, int round) {
    const Work<Spread, Keys> w(p, item);
    const int kv_h = w.h / p.group;
    // A fresh barrier counts its previous phase as done.
    trace(0, round, kItemBegin);
    mbar_wait_suspended(bar.q.empty(round), bar.q.phase(round) ^ 1);
    mbar_arrive_expect_tx(bar.q.full(round), L::kQBytes);
    const uint32_t q = smem + (round % L::kQBuffers) * L::kQBytes;
    for (int dh = 0; dh < L::kSlabs; ++dh)
      tma_load_4d(q + dh * kSlabBytes, mq, dh * 64, w.m0, w.h, w.b, bar.q.full(round));
    trace(0, round, kQReady);
    for (int tile = 0; tile < w.n_tiles; ++tile, ++slot) {
      mbar_wait_suspended(bar.k.empty(slot), bar.k.phase(slot) ^ 1);
      mbar_arrive_expect_tx(bar.k.full(slot), L::kKBytes);
      const uint32_t k = smem + L::k_at(slot);
      for (int dh = 0; dh < L::kSlabs; ++dh)
        tma_load_4d(k + dh * L::kKSlabBytes, mk, dh * 64, tile * Keys, kv_h, w.b, bar.k.full(slot));
      mbar_wait_suspended(bar.v.empty(slot), bar.v.phase(slot) ^ 1);
      mbar_arrive_expect_tx(bar.v.full(slot), L::kVBytes);
      const uint32_t v = smem + L::v_at(slot);
      for (int kh = 0; kh < Keys / L::kVBoxKeys; ++kh)
        for (int dh = 0; dh < L::kSlabs; ++dh)
          tma_load_4d(v + kh * L::kVGroupBytes + dh * L::kVBoxBytes, mv, dh * 64,
                      tile * Keys + kh * L::kVBoxKeys, kv_h, w.b, bar.v.full(slot));
    }
    trace(0, round, kLastPvIssued);
  });
}

// One consumer warpgroup: rows m0 + 64 c .. + 63; warp w, lane: rows 16 w + g (+ 8) of those,
// with the accumulator columns 8 j + 2 t + {0, 1} in d[4 j + {0, 1}] (row g) and d[4 j + {2, 3}]
// (row g + 8) (PTX ISA, wgmma D fragment for .m64nNk16 with f32).
//
// Per key tile t the warpgroup issues S(t + 1) = Q K(t + 1)^T, rescales O while that runs, issues
// O += P(t) V(t), and runs the softmax of S(t + 1) while P(t) V(t) is still in the tensor cores;
// P(t + 1) replaces P(t) in registers once that group has completed (FlashAttention-3's order).
template <typename T, int D, int Keys, bool Lazy>
struct Consumer {
  using L = Layout<D, Keys>;
  static constexpr int kGroups = Keys / 8;  // 8-column groups of a score tile
  int c, warp, lane;
  float o[D / 2];
  uint32_t pa[Keys / 16][4];  // P of the tile in flight, as the register A operand
  float rescale[2];           // what O must be multiplied by before the next P V
  ak_cuda::RowState rows[2];
  int round = 0;  // this block's item number (for trace alone)

  // Masks (with Mask: keys past the sequence and, causal, past each row's diagonal), folds the
  // tile into the row states and leaves exp2(scale_log2 s - shift) in s; the
  // scale is folded into the exponent's FFMA (scale_log2 > 0, so the raw maximum is the maximum).
  // The row maxima and sums are trees over both rows at once, not chains of 32 dependent
  // instructions per row: the softmax is on each warpgroup's critical path, and
  // Nsight Compute put its dependency stalls at 1.4 per issued instruction against cuDNN's 0.9.
  template <bool Mask>
  __device__ __forceinline__ void softmax(float (&s)[Keys / 2], const Problem& p, int n0, int first_row) {
    const int g = lane / 4, t = lane % 4;
    if constexpr (Mask) {
#pragma unroll
      for (int i = 0; i < Keys / 2; ++i) {
        const int key = n0 + 8 * (i / 4) + 2 * t + (i & 1), row = first_row + g + 8 * ((i / 2) & 1);
        if (key >= p.seq || (p.causal && key > row)) s[i] = -INFINITY;
      }
    }
    // Row r holds s[4 j + 2 r + {0, 1}], j < kGroups; four partial results per row, each a chain
    // of kGroups / 4 (the two rows' 8 chains interleave), then combined.
    float part[2][4];
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int k = 0; k < 4; ++k) part[r][k] = fmaxf(s[4 * k + 2 * r], s[4 * k + 2 * r + 1]);
#pragma unroll
    for (int j = 4; j < kGroups; ++j)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        part[r][j % 4] = fmaxf(part[r][j % 4], fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
    float shift[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float tile_max = fmaxf(fmaxf(part[r][0], part[r][1]), fmaxf(part[r][2], part[r][3]));
      const float row_max = ak_cuda::quad_max(tile_max) * p.scale_log2;
      rescale[r] =
          Lazy ? rows[r].update_lazy(row_max, kLazyLog2, shift[r]) : rows[r].update(row_max, shift[r]);
    }
#pragma unroll
    for (int i = 0; i < Keys / 2; ++i)
      s[i] = ak_cuda::fast_exp2(fmaf(s[i], p.scale_log2, -shift[(i / 2) & 1]));
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int k = 0; k < 4; ++k) part[r][k] = s[4 * k + 2 * r] + s[4 * k + 2 * r + 1];
#pragma unroll
    for (int j = 4; j < kGroups; ++j)
#pragma unroll
      for (int r = 0; r < 2; ++r) part[r][j % 4] += s[4 * j + 2 * r] + s[4 * j + 2 * r + 1];
#pragma unroll
    for (int r = 0; r < 2; ++r)  // this thread's columns; the quad is summed at the end
      rows[r].sum += (part[r][0] + part[r][1]) + (part[r][2] + part[r][3]);
  }

  // O *= rescale, with no P V in flight (the S group in flight does not touch O). Lazily, a warp
  // skips it when no row of its 16 changed its maximum (the vote keeps the branch warp-uniform).
  __device__ __forceinline__ void rescale_o() {
    if (Lazy && !__any_sync(0xffffffffu, rescale[0] != 1.0f || rescale[1] != 1.0f)) return;
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] *= rescale[(i / 2) & 1];
  }

  // P = s in 16 bits, once no P V is in flight.
  __device__ __forceinline__ void take(const float (&s)[Keys / 2]) {
#pragma unroll
    for (int kk = 0; kk < Keys / 16; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) pa[kk][r] = ak_cuda::pack2<T>(s[8 * kk + 2 * r], s[8 * kk + 2 * r + 1]);
  }

  __device__ __forceinline__ void issue_scores(float (&s)[Keys / 2], uint32_t q, uint32_t k) {
#pragma unroll
    for (int i = 0; i < Keys / 2; ++i) s[i] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t step = (kk % 4) * 32;
      wgmma<T, Keys, false>(s, smem_desc(q + c * 8192 + (kk / 4) * kSlabBytes + step, 16, 1024),
                            smem_desc(k + (kk / 4) * L::kKSlabBytes + step, 16, 1024));
    }
    wgmma_commit();
  }

  __device__ __forceinline__ void issue_pv(uint32_t v) {
#pragma unroll
    for (int kk = 0; kk < Keys / 16; ++kk)
      wgmma_rs_trans<T, D>(o, pa[kk], smem_desc(v + L::v_step(kk), L::kVBoxBytes, 1024));
    wgmma_commit();
  }

  __device__ __forceinline__ void settle(float (&s)[Keys / 2]) {
#pragma unroll
    for (int i = 0; i < Keys / 2; ++i) fence_register(s[i]);
  }
  __device__ __forceinline__ void settle_pv() {
#pragma unroll
    for (int i = 0; i < D / 2; ++i) fence_register(o[i]);
#pragma unroll
    for (int kk = 0; kk < Keys / 16; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) asm volatile("" : "+r"(pa[kk][r])::"memory");
  }

  // Ping-pong turns. Each warpgroup issues active + 1 times per item (both have the same active:
  // a tile of 128 keys covers both warpgroups' diagonals), so warpgroup 1's first arrive, which
  // lets warpgroup 0 begin, stands in for the arrive after its own last issue: every barrier
  // phase of an item then completes, and none is left half-arrived when the item ends.
  __device__ __forceinline__ void await_turn() const {
    if constexpr (kPingPong) asm volatile("bar.sync %0, 256;\n" ::"r"(1 + c) : "memory");
  }
  __device__ __forceinline__ void pass_turn(bool last) const {
    if constexpr (kPingPong)
      if (!(last && c == 1)) asm volatile("bar.arrive %0, 256;\n" ::"r"(2 - c) : "memory");
  }

  // An item as this warpgroup takes it: its Q buffer, the ring position of its first key tile,
  // its rows, the key tiles it reads ([0, active), active >= 1: every query row sees key 0) and
  // those it reads unmasked ([0, plain): they end within the sequence and, causal, at or before
  // every row's diagonal). The tiles past active it only hands back.
  struct Item {
    uint32_t q;
    int slot0, n_tiles, active, plain, wg_first, first_row;
  };
  __device__ __forceinline__ Item item_at(uint32_t smem, const Problem& p, int m0, int n_tiles, int slot0,
                                          int item_round) const {
    Item it;
    it.q = smem + (item_round % L::kQBuffers) * L::kQBytes;
    it.slot0 = slot0;
    it.n_tiles = n_tiles;
    it.wg_first = m0 + 64 * c;
    it.first_row = it.wg_first + 16 * warp;
    // A causal warpgroup has nothing to add from tiles that start past its last row.
    it.active = p.causal ? min(n_tiles, (it.wg_first + 63) / Keys + 1) : n_tiles;
    it.plain = p.causal ? min(p.seq / Keys, (it.wg_first + 1) / Keys) : p.seq / Keys;
    return it;
  }

  __device__ __forceinline__ void wait_full(const Ring& ring, int at) const {
    mbar_wait(ring.full(at), ring.phase(at));
  }
  __device__ __forceinline__ void release(const Ring& ring, int at) const {
    if (lane == 0) mbar_arrive(ring.empty(at));
  }

  // The softmax of an item's first key tile. The tiles that need no mask are compiled without the
  // masking branch: with it, ptxas moved the wait for P V above the softmax meant to run under it.
  __device__ __forceinline__ void first_softmax(float (&s)[Keys / 2], const Problem& p, const Item& it) {
    if (Keys > p.seq || (p.causal && Keys - 1 > it.wg_first))
      softmax<true>(s, p, 0, it.first_row);
    else
      softmax<false>(s, p, 0, it.first_row);
  }

  // S of the item's first key tile, alone, then its softmax into P.
  __device__ __forceinline__ void first_tile(float (&s)[Keys / 2], uint32_t smem,
                                             const Barriers<D, Keys>& bar, const Problem& p, const Item& it) {
    wait_full(bar.k, it.slot0);
    await_turn();
    wgmma_fence();
    issue_scores(s, it.q, smem + L::k_at(it.slot0));
    pass_turn(false);
    wgmma_wait<0>();
    settle(s);
    trace(c + 1, round, kFirstScores);
    release(bar.k, it.slot0);
    first_softmax(s, p, it);
    take(s);
    trace(c + 1, round, kFirstSoftmax);
  }

  // Tiles [0, active - 1): S(tile + 1) and P(tile) V(tile) in flight together, the softmax of
  // S(tile + 1) under P V. K(t) goes back once S(t) is done, V(t) once P(t) V(t) is. Branch-free
  // wgmma paths keep ptxas from serializing the asynchronous groups.
  __device__ __forceinline__ void steps(float (&s)[Keys / 2], uint32_t smem, const Barriers<D, Keys>& bar,
                                        const Problem& p, const Item& it) {
    const auto step = [&](int tile, auto mask) {
      const int at = it.slot0 + tile, n1 = (tile + 1) * Keys;
      wait_full(bar.k, at + 1);
      wait_full(bar.v, at);
      await_turn();
      wgmma_fence();
      issue_scores(s, it.q, smem + L::k_at(at + 1));
      rescale_o();
      wgmma_fence();
      issue_pv(smem + L::v_at(at));
      pass_turn(false);
      wgmma_wait<1>();  // S(tile + 1) is done; P(tile) V(tile) may still run
      settle(s);
      release(bar.k, at + 1);
      softmax<decltype(mask)::value>(s, p, n1, it.first_row);
      wgmma_wait<0>();
      settle_pv();
      release(bar.v, at);
      take(s);
    };
    int tile = 0;
#pragma unroll 1
    for (; tile + 1 < min(it.plain, it.active); ++tile) step(tile, std::false_type{});
#pragma unroll 1
    for (; tile + 1 < it.active; ++tile) step(tile, std::true_type{});
  }

  // The item's last P V alone (`last`: the block's last issue), then the tiles it does not read
  // handed back once their copies have landed.
  __device__ __forceinline__ void last_tile(uint32_t smem, const Barriers<D, Keys>& bar, const Item& it,
                                            bool last) {
    const int at = it.slot0 + it.active - 1;
    wait_full(bar.v, at);
    await_turn();
    rescale_o();
    wgmma_fence();
    issue_pv(smem + L::v_at(at));
    trace(c + 1, round, kLastPvIssued);
    pass_turn(last);
    wgmma_wait<0>();
    settle_pv();
    trace(c + 1, round, kLastPvDone);
    release(bar.v, at);
#pragma unroll 1
    for (int at = it.slot0 + it.active; at < it.slot0 + it.n_tiles; ++at) {
      wait_full(bar.k, at);
      release(bar.k, at);
      wait_full(bar.v, at);
      release(bar.v, at);
    }
  }

  // A fresh item: O and the row states cleared, its Q waited for.
  __device__ __forceinline__ void begin_item(const Barriers<D, Keys>& bar) {
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.0f;
    rows[0] = rows[1] = ak_cuda::RowState{};
    trace(c + 1, round, kItemBegin);
    mbar_wait(bar.q.full(round), bar.q.phase(round));
    trace(c + 1, round, kQReady);
  }

  __device__ __forceinline__ void store(const Out& out, int b, int h, int m0, int seq,
                                        const ak_cuda::RowState (&done)[2]) const {
    const int g = lane / 4, t = lane % 4;
    T* base = static_cast<T*>(out.o) + b * out.sb + h * out.sh;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float inv = 1.0f / ak_cuda::quad_sum(done[r].sum);
      const int row = m0 + 64 * c + 16 * warp + g + 8 * r;
      if (row >= seq) continue;
      T* dst = base + row * out.ss + 2 * t;
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        *reinterpret_cast<uint32_t*>(dst + 8 * j) =
            ak_cuda::pack2<T>(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
    }
  }

  // O through shared memory and TMA (TMA_STORE 1): the warpgroup's 64 rows, normalized and
  // rounded, into its own rows of the item's Q buffer (read by nothing after the item's last S),
  // in the map's 128-byte swizzle (rows r hold chunk k at k ^ (r % 8): the 32 lanes of a store hit
  // 32 banks), then sent by one thread, which waits until the copy has read them: its warp then
  // hands the buffer back. Rows past S are not written (TMA skips what lies outside the tensor).
  // The direct stores took 0.9-1.0 us an item at 8 x 12 x 512 x 64 (docs/benchmarks.md, 2026-12-07).
  __device__ __forceinline__ void store_staged(const CUtensorMap* mo, uint32_t q, int b, int h, int m0,
                                               const ak_cuda::RowState (&done)[2]) const {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float inv = 1.0f / ak_cuda::quad_sum(done[r].sum);
      const uint32_t row = q + (64 * c + 16 * warp + g + 8 * r) * 128 + 4 * t;  // (that row % 8 == g)
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        st_shared_u32(row + (j / 8) * kSlabBytes + (((j % 8) ^ g) * 16),
                      ak_cuda::pack2<T>(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv));
    }
    fence_async_shared();
    asm volatile("bar.sync %0, 128;\n" ::"r"(3 + c) : "memory");  // (1 and 2 are the ping-pong turns)
    if (threadIdx.x % 128 == 0) {
#pragma unroll
      for (int s = 0; s < D / 64; ++s)
        tma_store_4d(mo, q + s * kSlabBytes + 64 * c * 128, 64 * s, m0 + 64 * c, h, b);
      bulk_commit();
      bulk_wait_read();
    }
  }

  // The item's O to memory and its Q buffer handed back to the producer (after O, where O goes
  // through it).
  __device__ __forceinline__ void finish(const Out& out, const CUtensorMap* mo, const Barriers<D, Keys>& bar,
                                         uint32_t q, int b, int h, int m0, int seq,
                                         const ak_cuda::RowState (&done)[2]) const {
    if (kTmaStore && out.staged) {
      store_staged(mo, q, b, h, m0, done);
      if (lane == 0) mbar_arrive(bar.q.empty(round));
    } else {
      if (lane == 0) mbar_arrive(bar.q.empty(round));
      store(out, b, h, m0, seq, done);
    }
  }

  // Every item of this block: wait for its Q, run its key tiles, hand its Q buffer back, store.
  template <bool Spread>
  __device__ __forceinline__ void run_items(uint32_t smem, const Barriers<D, Keys>& bar, const Problem& p,
                                            const Out& out, const CUtensorMap* mo) {
    int slot = 0;
    for_each_item<Spread>(p, [&](int item, int item_round) {
      const Work<Spread, Keys> w(p, item);
      round = item_round;
      begin_item(bar);
      const Item it = item_at(smem, p, w.m0, w.n_tiles, slot, round);
      float s[Keys / 2];
      if (kPingPong && c == 1) pass_turn(false);  // warpgroup 0 goes first
      first_tile(s, smem, bar, p, it);
      steps(s, smem, bar, p, it);
      last_tile(smem, bar, it, true);
      finish(out, mo, bar, it.q, w.b, w.h, w.m0, p.seq, rows);
      trace(c + 1, round, kStored);
      slot += w.n_tiles;
    });
  }

  // run_items with the items chained (AK_ATTENTION_CHAIN): an item's last P V goes to the tensor
  // cores with the next item's first S, whose softmax then runs under that P V, so that neither
  // runs alone at the seam between two items (at 512 keys an item is 4 key tiles). The next Q
  // loads while this one is read, so chaining takes two Q buffers; and D = 64 (at 128 the seam's
  // scores, O and P spill 400 bytes a thread, and long rows have few seams). A causal item whose
  // warpgroup skips tiles (active < n_tiles) ends unchained, and so does the block's last item.
  // Ping-pong: warpgroup 1's first arrive stands in for its last issue's, once per block.
  template <bool Spread>
  __device__ __forceinline__ void run_items_chained(uint32_t smem, const Barriers<D, Keys>& bar,
                                                    const Problem& p, const Out& out, const CUtensorMap* mo) {
    const int grid = static_cast<int>(gridDim.x), block = static_cast<int>(blockIdx.x);
    int item = item_of_round<Spread>(p, grid, block, 0);
    if (item < 0) return;
    round = 0;
    Work<Spread, Keys> w(p, item);
    Item it = item_at(smem, p, w.m0, w.n_tiles, 0, round);
    float s[Keys / 2];
    begin_item(bar);
    if (kPingPong && c == 1) pass_turn(false);  // warpgroup 0 goes first
    first_tile(s, smem, bar, p, it);
    for (;;) {
      steps(s, smem, bar, p, it);
      item = item_of_round<Spread>(p, grid, block, round + 1);
      if (item < 0 || it.active < it.n_tiles) {
        last_tile(smem, bar, it, item < 0);
        finish(out, mo, bar, it.q, w.b, w.h, w.m0, p.seq, rows);
        trace(c + 1, round, kStored);
        if (item < 0) return;
        const int slot = it.slot0 + it.n_tiles;
        ++round;
        w = Work<Spread, Keys>(p, item);
        it = item_at(smem, p, w.m0, w.n_tiles, slot, round);
        begin_item(bar);
        first_tile(s, smem, bar, p, it);
        continue;
      }
      // The seam: P V of this item's last tile and S of the next item's first, in one turn.
      const Work<Spread, Keys> next(p, item);
      const Item in = item_at(smem, p, next.m0, next.n_tiles, it.slot0 + it.n_tiles, round + 1);
      const int last = it.slot0 + it.active - 1;
      trace(c + 1, round + 1, kItemBegin);
      mbar_wait(bar.q.full(round + 1), bar.q.phase(round + 1));
      trace(c + 1, round + 1, kQReady);
      wait_full(bar.k, in.slot0);
      wait_full(bar.v, last);
      await_turn();
      wgmma_fence();
      issue_scores(s, in.q, smem + L::k_at(in.slot0));
      rescale_o();
      wgmma_fence();
      issue_pv(smem + L::v_at(last));
      trace(c + 1, round, kLastPvIssued);
      pass_turn(false);
      wgmma_wait<1>();  // the next item's S is done; this item's P V may still run
      settle(s);
      trace(c + 1, round + 1, kFirstScores);
      release(bar.k, in.slot0);
      const ak_cuda::RowState done[2] = {rows[0], rows[1]};
      rows[0] = rows[1] = ak_cuda::RowState{};
      first_softmax(s, p, in);
      wgmma_wait<0>();
      settle_pv();
      trace(c + 1, round, kLastPvDone);
      release(bar.v, last);
      finish(out, mo, bar, it.q, w.b, w.h, w.m0, p.seq, done);
      trace(c + 1, round, kStored);
#pragma unroll
      for (int i = 0; i < D / 2; ++i) o[i] = 0.0f;
      take(s);
      ++round;
      trace(c + 1, round, kFirstSoftmax);
      w = next;
      it = in;
    }
  }
};

template <typename T, int D, bool Spread, int Keys, bool Lazy>
__global__ void __launch_bounds__(kThreads, 1)
    attention_wgmma(const __grid_constant__ CUtensorMap mq, const __grid_constant__ CUtensorMap mk,
                    const __grid_constant__ CUtensorMap mv, const __grid_constant__ CUtensorMap mo,
                    const Problem p, const Out out) {
#if AK_SM90_CODE
  using L = Layout<D, Keys>;
  trace(static_cast<int>(threadIdx.x) / 128, kTraceItems, kItemBegin);
  extern __shared__ unsigned char smem_raw[];
  const uint32_t smem = (ak_gemm::smem_addr(smem_raw) + 1023u) & ~1023u;
  const Barriers<D, Keys> bar(smem + L::kBarriers);
  const auto init = [&] {
    for (const Ring& ring : {bar.q, bar.k, bar.v}) init_ring(ring.bars, ring.depth, kConsumerWarps);
    for (const CUtensorMap* map : {&mq, &mk, &mv}) prefetch_tensormap(map);
    if (kTmaStore && out.staged) prefetch_tensormap(&mo);
  };
  const auto producer = [&] { produce<D, Keys, Spread>(&mq, &mk, &mv, smem, bar, p); };
  split_warpgroups<L::kProducerRegs, L::kConsumerRegs>(init, producer, [&](int consumer) {
    Consumer<T, D, Keys, Lazy> w;
    // Broadcast so that the compiler knows it is warp-uniform: the shared-memory addresses and
    // descriptors derived from it then stay in uniform registers, not recomputed per thread and
    // moved over (R2UR) before every wgmma.
    w.c = __shfl_sync(0xffffffffu, consumer, 0);
    w.warp = static_cast<int>(threadIdx.x / 32) % 4;
    w.lane = static_cast<int>(threadIdx.x % 32);
    if constexpr (kChain && D == 64 && L::kQBuffers == 2)
      w.template run_items_chained<Spread>(smem, bar, p, out, &mo);
    else
      w.template run_items<Spread>(smem, bar, p, out, &mo);
  });
  trace(static_cast<int>(threadIdx.x) / 128, kTraceItems, kStored);
#else
  __trap();
#endif
}

// The kernel for a call's schedule: spread (Balance) is for causal calls, whose tiles are kKeys wide.
template <typename T, int D, int Keys, bool Lazy>
auto kernel_for(bool spread) {
  auto kernel = attention_wgmma<T, D, false, Keys, Lazy>;
  if constexpr (kBalance && Keys == kKeys)
    if (spread) kernel = attention_wgmma<T, D, true, Keys, Lazy>;
  return kernel;
}

// The wgmma variant with key tiles of Keys keys; AK_ERR_UNSUPPORTED when this device or these
// views cannot take it.
template <typename T, int D, int Keys>
int launch_tiles(const ak_call* call, Problem p) {
  using L = Layout<D, Keys>;
  CUtensorMap maps[4];
  const int box_rows[3] = {kRows, Keys, L::kVBoxKeys};
  const auto map_of = [](CUtensorMap* map, const ak_tensor& t, int rows) {
    const int64_t shape[4] = {t.shape[0], t.shape[1], t.shape[2], t.shape[3]};
    const int64_t strides[3] = {t.strides[0], t.strides[1], t.strides[2]};
    return make_head_map(map, static_cast<const T*>(t.data), shape, strides, rows);
  };
  for (int i = 0; i < 3; ++i)
    if (!map_of(&maps[i], call->inputs[i], box_rows[i])) return AK_ERR_UNSUPPORTED;
  const ak_tensor& o = call->outputs[0];
  // O's map (boxes of a warpgroup's 64 rows); where its strides cannot take one, the direct stores.
  const bool staged = kTmaStore && map_of(&maps[3], o, 64);
  if (!staged) maps[3] = maps[0];  // (unread)
  const Out out{o.data, o.strides[0], o.strides[1], o.strides[2], staged};
  const int64_t items = static_cast<int64_t>((p.seq + kRows - 1) / kRows) * o.shape[1] * o.shape[0];
  if (items > INT_MAX) return AK_ERR_UNSUPPORTED;
  p.heads = static_cast<int>(o.shape[1]);
  p.m_tiles = (p.seq + kRows - 1) / kRows;
  p.items = static_cast<int>(items);
  const int64_t kv_bytes = 2 * call->inputs[1].shape[0] * call->inputs[1].shape[1] * p.seq * D * 2;
  const bool spread =
      kBalance && p.causal && 2 * kv_bytes <= ak_gemm::device_attribute(cudaDevAttrL2CacheSize);
  auto kernel = kernel_for<T, D, Keys, kLazyRescale == 1>(spread);
  if constexpr (kLazyRescale == 2)
    if (p.seq >= kLazyFromKeys) kernel = kernel_for<T, D, Keys, true>(spread);
  if (!ak_gemm::allow_shared_memory(kernel, L::kSmemBytes)) return AK_ERR_UNSUPPORTED;
  const int units = (p.items + p.unit(spread) - 1) / p.unit(spread);
  const int blocks =
      kPersistent ? std::min(units, ak_gemm::device_attribute(cudaDevAttrMultiProcessorCount)) : units;
  kernel<<<blocks, kThreads, L::kSmemBytes, ak_cuda::stream_of(call)>>>(maps[0], maps[1], maps[2], maps[3], p,
                                                                        out);
  return ak_cuda::check_launch();
}

// Launches the wgmma variant for q, k, v, o of a call (16-bit T, D = 64 or 128, 16-byte aligned
// bases and strides already checked): causal calls in tiles of kKeys keys, the others of
// kNonCausalKeys; AK_ERR_UNSUPPORTED when this device or these views cannot take it, so that the
// caller falls back to another variant.
template <typename T, int D>
int launch(const ak_call* call, Problem p) {
  if (!ak_gemm::hopper_code()) return AK_ERR_UNSUPPORTED;
  if (!(p.scale_log2 > 0.0f)) return AK_ERR_UNSUPPORTED;  // the softmax takes the raw maximum
  if constexpr (kNonCausalKeys != kKeys)
    if (!p.causal) return launch_tiles<T, D, kNonCausalKeys>(call, p);
  return launch_tiles<T, D, kKeys>(call, p);
}

}  // namespace ak_attention_sm90
