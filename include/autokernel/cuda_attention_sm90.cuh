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

  // One item's key tiles, ring positions slot0 + [0, n_tiles): [0, active) (active >= 1) hold keys
  // for this warpgroup; the rest are only released. K(t) goes back once S(t) is done, V(t) once
  // P(t) V(t) is.
  __device__ __forceinline__ void run(uint32_t smem, uint32_t q, const Barriers<D, Keys>& bar,
                                      const Problem& p, int m0, int slot0, int n_tiles, int active) {
    const int wg_first = m0 + 64 * c, first_row = wg_first + 16 * warp;
    const auto k_tile = [&](int tile) { return smem + L::k_at(slot0 + tile); };
    const auto v_tile = [&](int tile) { return smem + L::v_at(slot0 + tile); };
    const auto wait_full = [&](const Ring& ring, int tile) {
      mbar_wait(ring.full(slot0 + tile), ring.phase(slot0 + tile));
    };
    const auto release = [&](const Ring& ring, int tile) {
      if (lane == 0) mbar_arrive(ring.empty(slot0 + tile));
    };
    const auto masked = [&](int n0) { return n0 + Keys > p.seq || (p.causal && n0 + Keys - 1 > wg_first); };
    // Tiles [0, plain) need no mask: they end within the sequence and, causal, at or before every
    // row's diagonal. Their softmax is compiled without the masking branch: with it, ptxas moved
    // the wait for P V above the softmax, so that the two no longer overlapped.
    const int plain = p.causal ? min(p.seq / Keys, (wg_first + 1) / Keys) : p.seq / Keys;
    float s[Keys / 2];
    // active >= 1: every query row sees key 0. Branch-free wgmma paths keep ptxas from
    // serializing the asynchronous groups.
    if (kPingPong && c == 1) pass_turn(false);  // warpgroup 0 goes first
    wait_full(bar.k, 0);
    await_turn();
    wgmma_fence();
    issue_scores(s, q, k_tile(0));
    pass_turn(false);
    wgmma_wait<0>();
    settle(s);
    trace(c + 1, round, kFirstScores);
    release(bar.k, 0);
    if (masked(0))
      softmax<true>(s, p, 0, first_row);
    else
      softmax<false>(s, p, 0, first_row);
    take(s);
    trace(c + 1, round, kFirstSoftmax);
    // S(tile + 1) and P(tile) V(tile) in flight together; the softmax of S(tile + 1) under P V.
    const auto step = [&](int tile, auto mask) {
      const int n1 = (tile + 1) * Keys;
      wait_full(bar.k, tile + 1);
      wait_full(bar.v, tile);
      await_turn();
      wgmma_fence();
      issue_scores(s, q, k_tile(tile + 1));
      rescale_o();
      wgmma_fence();
      issue_pv(v_tile(tile));
      pass_turn(false);
      wgmma_wait<1>();  // S(tile + 1) is done; P(tile) V(tile) may still run
      settle(s);
      release(bar.k, tile + 1);
      softmax<decltype(mask)::value>(s, p, n1, first_row);
      wgmma_wait<0>();
      settle_pv();
      release(bar.v, tile);
      take(s);
    };
    int tile = 0;
#pragma unroll 1
    for (; tile + 1 < min(plain, active); ++tile) step(tile, std::false_type{});
#pragma unroll 1
    for (; tile + 1 < active; ++tile) step(tile, std::true_type{});
    wait_full(bar.v, active - 1);
    await_turn();
    rescale_o();
    wgmma_fence();
    issue_pv(v_tile(active - 1));
    trace(c + 1, round, kLastPvIssued);
    pass_turn(true);
    wgmma_wait<0>();
    settle_pv();
    trace(c + 1, round, kLastPvDone);
    release(bar.v, active - 1);
#pragma unroll 1
    for (int tile = active; tile < n_tiles; ++tile) {
      wait_full(bar.k, tile);  // the copies must land before their buffers are handed back
      release(bar.k, tile);
      wait_full(bar.v, tile);
      release(bar.v, tile);
    }
  }

  __device__ __forceinline__ void store(const Out& out, int b, int h, int m0, int seq) const {
    const int g = lane / 4, t = lane % 4;
    T* base = static_cast<T*>(out.o) + b * out.sb + h * out.sh;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float inv = 1.0f / ak_cuda::quad_sum(rows[r].sum);
      const int row = m0 + 64 * c + 16 * warp + g + 8 * r;
      if (row >= seq) continue;
      T* dst = base + row * out.ss + 2 * t;
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        *reinterpret_cast<uint32_t*>(dst + 8 * j) =
            ak_cuda::pack2<T>(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
    }
  }

  // Every item of this block: wait for its Q, run its key tiles, hand its Q buffer back, store.
  template <bool Spread>
  __device__ __forceinline__ void run_items(uint32_t smem, const Barriers<D, Keys>& bar, const Problem& p,
                                            const Out& out) {
    int slot = 0;
    for_each_item<Spread>(p, [&](int item, int item_round) {
      const Work<Spread, Keys> w(p, item);
      round = item_round;
#pragma unroll
      for (int i = 0; i < D / 2; ++i) o[i] = 0.0f;
      rows[0] = rows[1] = ak_cuda::RowState{};
      trace(c + 1, round, kItemBegin);
      mbar_wait(bar.q.full(round), bar.q.phase(round));
      trace(c + 1, round, kQReady);
      // A causal warpgroup has nothing to add from tiles that start past its last row.
      const int wg_last = w.m0 + 64 * c + 63;
      const int active = p.causal ? min(w.n_tiles, wg_last / Keys + 1) : w.n_tiles;
      run(smem, smem + (round % L::kQBuffers) * L::kQBytes, bar, p, w.m0, slot, w.n_tiles, active);
      if (lane == 0) mbar_arrive(bar.q.empty(round));
      store(out, w.b, w.h, w.m0, p.seq);
      trace(c + 1, round, kStored);
      slot += w.n_tiles;
    });
  }
};

template <typename T, int D, bool Spread, int Keys, bool Lazy>
__global__ void __launch_bounds__(kThreads, 1)
    attention_wgmma(const __grid_constant__ CUtensorMap mq, const __grid_constant__ CUtensorMap mk,
                    const __grid_constant__ CUtensorMap mv, const Problem p, const Out out) {
#if AK_SM90_CODE
  using L = Layout<D, Keys>;
  trace(static_cast<int>(threadIdx.x) / 128, kTraceItems, kItemBegin);
  extern __shared__ unsigned char smem_raw[];
  const uint32_t smem = (ak_gemm::smem_addr(smem_raw) + 1023u) & ~1023u;
  const Barriers<D, Keys> bar(smem + L::kBarriers);
  const auto init = [&] {
    for (const Ring& ring : {bar.q, bar.k, bar.v}) init_ring(ring.bars, ring.depth, kConsumerWarps);
    for (const CUtensorMap* map : {&mq, &mk, &mv}) prefetch_tensormap(map);
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
    w.template run_items<Spread>(smem, bar, p, out);
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
  CUtensorMap maps[3];
  const int box_rows[3] = {kRows, Keys, L::kVBoxKeys};
  for (int i = 0; i < 3; ++i) {
    const ak_tensor& t = call->inputs[i];
    const int64_t shape[4] = {t.shape[0], t.shape[1], t.shape[2], t.shape[3]};
    const int64_t strides[3] = {t.strides[0], t.strides[1], t.strides[2]};
    if (!make_head_map(&maps[i], static_cast<const T*>(t.data), shape, strides, box_rows[i]))
      return AK_ERR_UNSUPPORTED;
  }
  const ak_tensor& o = call->outputs[0];
  const Out out{o.data, o.strides[0], o.strides[1], o.strides[2]};
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
  kernel<<<blocks, kThreads, L::kSmemBytes, ak_cuda::stream_of(call)>>>(maps[0], maps[1], maps[2], p, out);
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
