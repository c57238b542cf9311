// The consumer warpgroups of the wgmma attention (cuda_attention_sm90.cuh): per key tile the
// scores, the online softmax and P V on wgmma, the ping-pong turns between the two warpgroups,
// each item's pieces (first tile, steps, last tile) run item by item or chained, and O's store,
// direct or through shared memory and TMA.
#pragma once

#include "autokernel/cuda_attention_sm90_blocks.cuh"
#include "autokernel/cuda_attention_sm90_pieces.cuh"

namespace ak_attention_sm90 {

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
  // (one Q buffer: the next item's Q would wait for the release, which waits for that item)
  static constexpr bool kDeferQRelease = AK_ATTENTION_DEFER_Q_RELEASE != 0 && kTmaStore && L::kQBuffers == 2;
  static constexpr int kGroups = Keys / 8;  // 8-column groups of a score tile
  int c, warp, lane;
  float o[D / 2];
  uint32_t pa[Keys / 16][4];  // P of the tile in flight, as the register A operand
  float rescale[2];           // what O must be multiplied by before the next P V
  ak_cuda::RowState rows[2];
  int round = 0;      // this block's item number (for trace alone)
  int stored_q = -1;  // kDeferQRelease: the round whose Q buffer a store still reads (-1: none)

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

  // An item (or a piece of one) as this warpgroup takes it: its Q buffer, the ring position of
  // its first key tile, its rows, its first key tile (key0: a split item's owner starts past 0),
  // the key tiles it reads (key0 + [0, active), active >= 1: every query row sees key 0) and
  // those it reads unmasked (key0 + [0, plain): they end within the sequence and, causal, at or
  // before every row's diagonal). The tiles past active it only hands back. Pieces are non-causal
  // (split_tail): the causal counts take key0 = 0.
  struct Item {
    uint32_t q;
    int slot0, n_tiles, active, plain, wg_first, first_row, key0;
  };
  template <class W>
  __device__ __forceinline__ Item item_at(uint32_t smem, const Problem& p, const W& w, int slot0,
                                          int item_round) const {
    Item it;
    it.q = smem + (item_round % L::kQBuffers) * L::kQBytes;
    it.slot0 = slot0;
    it.n_tiles = w.n_tiles;
    it.key0 = w.key0;
    it.wg_first = w.m0 + 64 * c;
    it.first_row = it.wg_first + 16 * warp;
    // A causal warpgroup has nothing to add from tiles that start past its last row.
    it.active = p.causal ? min(w.n_tiles, (it.wg_first + 63) / Keys + 1) : w.n_tiles;
    it.plain = p.causal ? min(p.seq / Keys, (it.wg_first + 1) / Keys) : p.seq / Keys - w.key0;
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
    if ((it.key0 + 1) * Keys > p.seq || (p.causal && Keys - 1 > it.wg_first))
      softmax<true>(s, p, it.key0 * Keys, it.first_row);
    else
      softmax<false>(s, p, it.key0 * Keys, it.first_row);
  }

  // S of the item's first key tile, alone, then its softmax into P.
  __device__ __forceinline__ void first_tile(float (&s)[Keys / 2], uint32_t smem,
                                             const Barriers<D, Keys>& bar, const Problem& p, const Item& it) {
    wait_full(bar.k, it.slot0);
    await_turn();
    wgmma_fence();
    issue_scores(s, it.q, smem + L::k_at(it.slot0));
    pass_turn(false);
    release_stored_q(bar);
    wgmma_wait<0>();
    settle(s);
    trace(c + 1, round, kFirstScores);
    release(bar.k, it.slot0);
    first_softmax(s, p, it);
    take(s);
    trace(c + 1, round, kFirstSoftmax);
  }

  // One turn with two groups in flight: S = Q K(k_at) and O += P V(v_at), then `scores_done`
  // (the softmax of S) under P V. K goes back once its S is done, V once P V is; P is left in s.
  // Branch-free wgmma paths keep ptxas from serializing the asynchronous groups. In the SASS
  // (ptxas 13.0) the wait for P V sits above all but 0-12 of the softmax's exponentials, in every
  // kernel: waiting earlier is always correct, so nothing keeps it down. Held below them by a
  // never-taken branch on the row sum, D = 64 ran 3-7% slower on the H100 at 512 keys (the
  // ping-pong already puts the other warpgroup's products under this one's softmax;
  // docs/benchmarks.md, thirty-ninth session), and D = 128 ran out of registers (C7512).
  template <class ScoresDone>
  __device__ __forceinline__ void overlapped(float (&s)[Keys / 2], uint32_t smem,
                                             const Barriers<D, Keys>& bar, uint32_t q, int k_at, int v_at,
                                             ScoresDone&& scores_done) {
    wait_full(bar.k, k_at);
    wait_full(bar.v, v_at);
    await_turn();
    wgmma_fence();
    issue_scores(s, q, smem + L::k_at(k_at));
    rescale_o();
    wgmma_fence();
    issue_pv(smem + L::v_at(v_at));
    pass_turn(false);
    wgmma_wait<1>();  // S is done; P V may still run
    settle(s);
    release(bar.k, k_at);
    scores_done();
    wgmma_wait<0>();
    settle_pv();
    release(bar.v, v_at);
  }

  // Tiles [0, active - 1): S(tile + 1) and P(tile) V(tile) in one turn, the softmax of S(tile + 1)
  // under P V.
  __device__ __forceinline__ void steps(float (&s)[Keys / 2], uint32_t smem, const Barriers<D, Keys>& bar,
                                        const Problem& p, const Item& it) {
    const auto step = [&](int tile, auto mask) {
      const int at = it.slot0 + tile;
      overlapped(s, smem, bar, it.q, at + 1, at,
                 [&] { softmax<decltype(mask)::value>(s, p, (it.key0 + tile + 1) * Keys, it.first_row); });
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
  // `wait_read` false: the thread leaves the copy reading (release_stored_q waits for it later).
  __device__ __forceinline__ void store_staged(const CUtensorMap* mo, uint32_t q, int b, int h, int m0,
                                               const ak_cuda::RowState (&done)[2], bool wait_read) const {
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
      if (wait_read) bulk_wait_read();
    }
  }

  // The Q buffer whose O a deferred store (kDeferQRelease) is still reading, handed back once the
  // copy has read it: called after the next item's first S is issued, when that copy has long
  // finished, and after the block's last item, whose copy must finish before the block exits.
  __device__ __forceinline__ void release_stored_q(const Barriers<D, Keys>& bar) {
    if (!kDeferQRelease || stored_q < 0) return;
    if (threadIdx.x % 128 == 0) bulk_wait_read();  // (lane 0 of warp 0: it arrives after its wait)
    if (lane == 0) mbar_arrive(bar.q.empty(stored_q));
    stored_q = -1;
  }

  // The item's O to memory and its Q buffer handed back to the producer (after O, where O goes
  // through it). `defer_release` (run_items; the chained seams do not): with kDeferQRelease the
  // next item starts while the copy reads O, in the other Q buffer, and release_stored_q hands
  // this one back.
  __device__ __forceinline__ void finish(const Out& out, const CUtensorMap* mo, const Barriers<D, Keys>& bar,
                                         uint32_t q, int b, int h, int m0, int seq,
                                         const ak_cuda::RowState (&done)[2], bool defer_release) {
    if (kTmaStore && out.staged) {
      const bool defer = kDeferQRelease && defer_release;
      store_staged(mo, q, b, h, m0, done, !defer);
      if (defer)
        stored_q = round;
      else if (lane == 0)
        mbar_arrive(bar.q.empty(round));
    } else {
      if (lane == 0) mbar_arrive(bar.q.empty(round));
      store(out, b, h, m0, seq, done);
    }
  }

  // Every item of this block: wait for its Q, run its key tiles, hand its Q buffer back, store (a
  // split item's helper publishes instead; its owner adds the helper's part first).
  template <bool Spread>
  __device__ __forceinline__ void run_items(uint32_t smem, const Barriers<D, Keys>& bar, const Problem& p,
                                            const Out& out, const CUtensorMap* mo, const SplitSlots& split) {
    using W = Work<Spread, Keys>;
    int slot = 0;
    for_each_item<Spread>(p, [&](int index, int item_round) {
      const W w(p, index);
      round = item_round;
      begin_item(bar);
      const Item it = item_at(smem, p, w, slot, round);
      float s[Keys / 2];
      if (kPingPong && c == 1) pass_turn(false);  // warpgroup 0 goes first
      first_tile(s, smem, bar, p, it);
      steps(s, smem, bar, p, it);
      last_tile(smem, bar, it, true);
      if (!Spread && w.piece == W::kHelper) {
        publish_piece<D>(split, w.pair, c, o, rows);
        if (lane == 0) mbar_arrive(bar.q.empty(round));
      } else {
        if (!Spread && w.piece == W::kOwner) add_helper<D>(split, w.pair, c, o, rows);
        finish(out, mo, bar, it.q, w.b, w.h, w.m0, p.seq, rows, true);
      }
      trace(c + 1, round, kStored);
      slot += w.n_tiles;
    });
    release_stored_q(bar);
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
    Item it;
    float s[Keys / 2];
    // An item that starts alone: the block's first, or one after an item that ended unchained.
    const auto start = [&](int slot) {
      w = Work<Spread, Keys>(p, item);
      it = item_at(smem, p, w, slot, round);
      begin_item(bar);
      first_tile(s, smem, bar, p, it);
    };
    if (kPingPong && c == 1) pass_turn(false);  // warpgroup 0 goes first
    start(0);
    for (;;) {
      steps(s, smem, bar, p, it);
      item = item_of_round<Spread>(p, grid, block, round + 1);
      if (item < 0 || it.active < it.n_tiles) {
        last_tile(smem, bar, it, item < 0);
        finish(out, mo, bar, it.q, w.b, w.h, w.m0, p.seq, rows, false);
        trace(c + 1, round, kStored);
        if (item < 0) return;
        ++round;
        start(it.slot0 + it.n_tiles);
        continue;
      }
      // The seam: P V of this item's last tile and S of the next item's first, in one turn; the
      // next item's row states start afresh once this one's are kept for its store.
      const Work<Spread, Keys> next(p, item);
      const Item in = item_at(smem, p, next, it.slot0 + it.n_tiles, round + 1);
      trace(c + 1, round + 1, kItemBegin);
      mbar_wait(bar.q.full(round + 1), bar.q.phase(round + 1));
      trace(c + 1, round + 1, kQReady);
      ak_cuda::RowState done[2];
      trace(c + 1, round, kLastPvIssued);  // (before the turn's waits, at a seam)
      overlapped(s, smem, bar, in.q, in.slot0, it.slot0 + it.active - 1, [&] {
        trace(c + 1, round + 1, kFirstScores);
        done[0] = rows[0], done[1] = rows[1];
        rows[0] = rows[1] = ak_cuda::RowState{};
        first_softmax(s, p, in);
      });
      trace(c + 1, round, kLastPvDone);
      finish(out, mo, bar, it.q, w.b, w.h, w.m0, p.seq, done, false);
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

}  // namespace ak_attention_sm90
