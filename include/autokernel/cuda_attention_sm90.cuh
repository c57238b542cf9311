// The wgmma variant of kernels/cuda/flash_attention.cu (sm_90a only, fp16/bf16, D = 64 or 128), in the
// FlashAttention-3 shape: the producer, the kernel attention_wgmma and launch<T>, which answers
// AK_ERR_UNSUPPORTED for what it cannot take. The consumer warpgroups (per-tile pipeline
// described at its pieces): cuda_attention_sm90_consumer.cuh. Tensor maps, the block's layout,
// barriers and work schedule: cuda_attention_sm90_blocks.cuh; mbarriers, descriptors and the
// shared-operand wgmma: cuda_sm90.cuh.
#pragma once

#include "autokernel/cuda_attention_sm90_blocks.cuh"
#include "autokernel/cuda_attention_sm90_consumer.cuh"

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
        tma_load_4d(k + dh * L::kKSlabBytes, mk, dh * 64, (w.key0 + tile) * Keys, kv_h, w.b,
                    bar.k.full(slot));
      mbar_wait_suspended(bar.v.empty(slot), bar.v.phase(slot) ^ 1);
      mbar_arrive_expect_tx(bar.v.full(slot), L::kVBytes);
      const uint32_t v = smem + L::v_at(slot);
      for (int kh = 0; kh < Keys / L::kVBoxKeys; ++kh)
        for (int dh = 0; dh < L::kSlabs; ++dh)
          tma_load_4d(v + kh * L::kVGroupBytes + dh * L::kVBoxBytes, mv, dh * 64,
                      (w.key0 + tile) * Keys + kh * L::kVBoxKeys, kv_h, w.b, bar.v.full(slot));
    }
    trace(0, round, kLastPvIssued);
  });
}

template <typename T, int D, bool Spread, int Keys, bool Lazy>
__global__ void __launch_bounds__(kThreads, 1)
    attention_wgmma(const __grid_constant__ CUtensorMap mq, const __grid_constant__ CUtensorMap mk,
                    const __grid_constant__ CUtensorMap mv, const __grid_constant__ CUtensorMap mo,
                    const Problem p, const Out out, const SplitSlots split) {
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
      w.template run_items<Spread>(smem, bar, p, out, &mo, split);
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
  const int sms = ak_gemm::device_attribute(cudaDevAttrMultiProcessorCount);
  if constexpr (kSplitTail) p.split = split_tail<Keys>(p, sms);
  const int64_t kv_bytes = 2 * call->inputs[1].shape[0] * call->inputs[1].shape[1] * p.seq * D * 2;
  const bool spread =
      kBalance && p.causal && 2 * kv_bytes <= ak_gemm::device_attribute(cudaDevAttrL2CacheSize);
  auto kernel = kernel_for<T, D, Keys, kLazyRescale == 1>(spread);
  if constexpr (kLazyRescale == 2)
    if (p.seq >= kLazyFromKeys) kernel = kernel_for<T, D, Keys, true>(spread);
  if (!ak_gemm::allow_shared_memory(kernel, L::kSmemBytes)) return AK_ERR_UNSUPPORTED;
  const int units = (p.work() + p.unit(spread) - 1) / p.unit(spread);
  const int blocks = kPersistent ? std::min(units, sms) : units;
  cudaStream_t stream = ak_cuda::stream_of(call);
  const auto run = [&](const SplitSlots& split) {
    kernel<<<blocks, kThreads, L::kSmemBytes, stream>>>(maps[0], maps[1], maps[2], maps[3], p, out, split);
    return ak_cuda::check_launch();
  };
  if (p.split == 0) return run(SplitSlots{});
  return ak_gemm::stream_k::with_slots(2 * p.split, int64_t{kPieceSlotFloats<D>} * 128, stream, run);
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
