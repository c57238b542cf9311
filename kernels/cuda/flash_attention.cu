// flash_attention, CUDA: o[b, h, i] = softmax_j(scale * q[b, h, i] . k[b, g, j]) v[b, g, j] with
// g = h / (H / Hkv) (grouped-query attention) and, when causal, keys j > i masked out.
// Inputs q[B, H, S, D], k[B, Hkv, S, D], v[B, Hkv, S, D]; output o[B, H, S, D] of q's dtype;
// scalars[0] = scale, scalars[1] = causal (0 or 1). fp16, bf16 and fp32 (fp32 stays fp32), any
// S >= 1, any D <= 256; inner strides 1, the other strides free.
//
// Every variant keeps the FlashAttention outline: a block owns a tile of query rows of one head
// and walks the key/value tiles in order, keeping a running row maximum and row sum (online
// softmax in base 2, scale * log2(e) folded into the scores), and divides once at the end. No
// atomics: every output element is written once by one thread (deterministic). Causal blocks skip
// key tiles past their last query row and mask only where a tile crosses the diagonal or the end
// of the sequence; the grid runs each head's late (heavy) query tiles first.
//
// Variants, picked per call:
//   mma   fp16/bf16, D 64 or 128, every base 16-byte aligned and every stride a multiple of 8:
//         BLOCK_M / 16 warps of 16 query rows each; Q fragments held in registers (ldmatrix);
//         K and V tiles of BLOCK_N keys streamed through a STAGES-deep cp.async ring (zero-filled
//         past S); S = Q K^T and O += P V on mma.sync m16n8k16 with fp32 accumulators; P is
//         rounded to 16 bits in registers and used directly as the A operand of P V (V through
//         ldmatrix.trans). Output staged through shared memory for 16-byte stores.
//   wgmma PATH = 1 only, on Hopper (sm_90a), fp16/bf16, D 64 or 128, where mma fits and every stride
//         of q, k, v is a nonzero multiple of 16 bytes (TMA): FlashAttention-3 shape, 128 query
//         rows per block; a producer warpgroup streams K and V tiles of 128 keys (KEYS for
//         non-causal calls) with TMA into two STAGES-deep mbarrier rings (K handed back once its
//         scores are done, V once P V is), two consumer warpgroups of 64 rows run S = Q K^T and O += P V
//         on wgmma (P from registers), the softmax of one tile overlapping the P V of the one
//         before (for the tiles that need no mask, whose loop has no masking branch: with one,
//         ptxas placed the wait for P V ahead of the softmax). include/autokernel/cuda_attention_sm90.cuh.
//   simt  everything else (fp32, other D, unaligned views): 32 query rows and 32 keys per step in
//         fp32 shared-memory tiles, 4 threads per query row, plain FMAs.
//         include/autokernel/cuda_attention_simt.cuh (with the arguments every variant takes).
//
// Tuning parameters (-D definitions; the defaults below let the file compile alone):
//   BLOCK_M  query rows per block of the mma variant (16 per warp)
//   BLOCK_N  keys per K/V tile of the mma variant
//   STAGES   K/V tiles in flight in the shared-memory ring (mma and wgmma variants); the default
//            2 leaves the wgmma variant room for two Q buffers at D = 128, and its split K and V
//            rings still load each tile a whole tile's math ahead (2 beat 3 by 1-3% on the H100,
//            docs/benchmarks.md, 2026-11-28)
//   PATH     0: mma for 16-bit D 64/128; 1: wgmma for D 64/128 (mma for calls it cannot take)
//   PINGPONG wgmma only, 1: the two consumer warpgroups take turns on the tensor cores, one's
//            softmax under the other's matrix products
//   PERSISTENT wgmma only, 1: one block per SM walks the query tiles, loading the next tile's Q
//            and K/V while the last one's output is stored (0: one block per tile, or causal pair)
//   LAZY_RESCALE wgmma only, 1: a row's running maximum moves only when a tile's exceeds it by
//            more than 8 (base 2), so that most tiles leave O unscaled (exact: one maximum is
//            subtracted throughout, and the exponentials stay below 2^8); 2 (the default): so for
//            calls of 2048 keys or more, the others as 0. On the H100 lazy was 2.5-7% faster at
//            4x32x4096x128, 2% at 1x32x2048x128 causal, up to 3% slower at 512 keys
//            (docs/benchmarks.md, 2026-12-06)
//   KEYS     wgmma only: keys per K/V tile of non-causal calls, 128 or 176 (causal calls take
//            128, which covers both warpgroups' diagonals); a wider tile spends the per-tile
//            work (barriers, row maxima and sums, O's rescale) on more keys, as
//            FlashAttention-3's 128 x 176 tiles at D = 128, whose rings fit only 2 stages (taken
//            whatever STAGES says). On the H100 176 was no faster at 4096 tokens and 6% slower at
//            512 (docs/benchmarks.md, 2026-11-28); 192 was slower still at D = 64 and spills at 128
//   CHAIN    wgmma only, 1: a block's items run as one stream of key tiles, each item's last P V
//            issued with the next item's first S and that softmax under it (at 512 keys an item
//            is 4 key tiles, and each seam left a tile's S, softmax and P V unoverlapped)
//   TMA_STORE wgmma only, 1 (the default): O leaves through the item's finished Q buffer and one
//            TMA store per warpgroup instead of 16-64 four-byte stores per thread (0: those); with
//            two Q buffers the copy reads while the next item runs, the buffer handed back after
//            that item's first S (1-3% faster on the H100, docs/benchmarks.md 2026-12-07). On the
//            H100 (bench/attention_timeline.sh, docs/benchmarks.md 2026-12-07) 7% faster at
//            8 x 12 x 512 x 64, 3-6% causal and grouped-query, 10% at 1 x 32 x 2048 x 128 causal;
//            with CHAIN it lost most of that at D = 64, so CHAIN stays 0
//   BALANCE  wgmma only, 1: causal calls whose K and V fit twice in L2 take their query tiles
//            heaviest first across heads, dealt to the blocks back and forth, instead of head by
//            head in heavy/light pairs (at 8 x 12 x 512 rows the pairs leave 60 of 132 SMs twice
//            the work of the others)
//   SPLIT_TAIL wgmma, persistent, unchained only, 1: non-causal calls of 4 key
//            tiles or more whose last round of items fills at most half the SMs run each of those
//            items as two pieces of half its key tiles on two blocks, the lower one leaving its O
//            and row states in a workspace slot for the other to add (attention_schedule.h's
//            split_tail): at 4 x 14 x 1024 x 64, 448 items on 132 SMs, a last round of 52 items
//            becomes one of 104 pieces. 0 (the default) until it has run on a GPU: written in
//            a session that got no machine (docs/benchmarks.md, forty-third session); the search
//            may take it, through every stage like any point
// The first @require keeps the ring within the 227 KB a block may opt into; the second keeps the
// scores and the output accumulators within 255 registers (BLOCK_N * D = 16384 spills). The
// third offers PATH = 1 for D 64 and 128 with each ring depth (2, 3), with the default mma tile for
// the calls it hands back.
//
// @tune BLOCK_M: 64, 128
// @tune BLOCK_N: 32, 64, 128
// @tune STAGES: 2, 3
// @require (BLOCK_M + 2 * STAGES * BLOCK_N) * (D + 8) * 2 <= 232448
// @require BLOCK_N * D <= 8192
// @tune PATH: 0, 1
// @require PATH == 0 || ((D == 64 || D == 128) && BLOCK_M == 128 && BLOCK_N == 64)
// @tune PINGPONG: 0, 1
// @require PINGPONG == 0 || PATH == 1
// @tune PERSISTENT: 0, 1
// @require PERSISTENT == 0 || PATH == 1
// @tune LAZY_RESCALE: 0, 1, 2
// @require LAZY_RESCALE == 0 || PATH == 1
// @tune BALANCE: 0, 1
// @require BALANCE == 0 || PATH == 1
// @tune CHAIN: 0, 1
// @require CHAIN == 0 || PATH == 1
// @tune TMA_STORE: 0, 1
// @require TMA_STORE == 0 || PATH == 1
// @tune KEYS: 128, 176
// @require KEYS == 128 || PATH == 1
// @tune SPLIT_TAIL: 0, 1
// @require SPLIT_TAIL == 0 || (PATH == 1 && PERSISTENT == 1 && CHAIN == 0)

// Read by the workspace helpers (cuda_kernel.cuh), so defined before they are included.
#ifndef KEEP_WORKSPACE
#define KEEP_WORKSPACE 1
#endif

#include <algorithm>

#include "autokernel/cuda_attention.cuh"
#include "autokernel/cuda_attention_simt.cuh"
#include "autokernel/cuda_kernel.cuh"

#ifndef PATH
#define PATH 1
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef PINGPONG
#define PINGPONG 1
#endif
#ifndef PERSISTENT
#define PERSISTENT 1
#endif
#ifndef LAZY_RESCALE
#define LAZY_RESCALE 2
#endif
#ifndef BALANCE
#define BALANCE 1
#endif
#ifndef KEYS
#define KEYS 128
#endif
#ifndef CHAIN
#define CHAIN 0
#endif
#ifndef TMA_STORE
#define TMA_STORE 1
#endif
#ifndef SPLIT_TAIL
#define SPLIT_TAIL 0
#endif
#if PATH == 1
#define AK_ATTENTION_SPLIT_TAIL SPLIT_TAIL
#define AK_ATTENTION_BALANCE BALANCE
#define AK_ATTENTION_KEYS KEYS
#define AK_ATTENTION_LAZY_RESCALE LAZY_RESCALE
#define AK_ATTENTION_KV_STAGES STAGES
#define AK_ATTENTION_PINGPONG PINGPONG
#define AK_ATTENTION_PERSISTENT PERSISTENT
#define AK_ATTENTION_CHAIN CHAIN
#define AK_ATTENTION_TMA_STORE TMA_STORE
#include "autokernel/cuda_attention_sm90.cuh"
#endif
#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif

namespace {

using namespace ak_cuda;
using namespace ak_attention;

constexpr int kBlockM = BLOCK_M;
constexpr int kBlockN = BLOCK_N;
constexpr int kStages = STAGES;
static_assert(kBlockM % 16 == 0 && kBlockM >= 16 && kBlockM <= 256, "whole warps of 16 rows");
static_assert(kBlockN % 16 == 0 && kBlockN >= 16, "keys come in k-steps of 16");
static_assert(kStages >= 2, "at least double buffering");

// ------------------------------------------------------------------------------------------------
// mma variant

template <typename T, int D>
struct MmaConfig {
  static constexpr int kWarps = kBlockM / 16;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kDimSteps = D / 16;       // k-steps of Q K^T, pairs of d-tiles of P V
  static constexpr int kKeyTiles = kBlockN / 8;  // n-tiles of S
  using QTile = Tile<T, kBlockM, D>;
  using KvTile = Tile<T, kBlockN, D>;
  static constexpr int kSmemBytes = (QTile::kElements + 2 * kStages * KvTile::kElements) * 2;
};

template <typename T, int D>
struct MmaWarp {
  using C = MmaConfig<T, D>;
  int lane, row0;  // row0: the warp's first row within the block's tile
  uint32_t q[C::kDimSteps][4];
  float acc[D / 8][4] = {};
  RowState rows[2];  // rows g and g + 8 of the warp's 16

  __device__ __forceinline__ void load_q(const typename C::QTile& sq) {
#pragma unroll
    for (int kk = 0; kk < C::kDimSteps; ++kk) {
      const int row = row0 + (lane & 7) + ((lane >> 3) & 1) * 8;
      ldmatrix_x4(q[kk], sq.chunk(row, kk * 2 + (lane >> 4)));
    }
  }

  // s = Q K^T over one key tile (fp32).
  __device__ __forceinline__ void scores(const typename C::KvTile& sk, float (&s)[C::kKeyTiles][4]) const {
#pragma unroll
    for (int nt = 0; nt < C::kKeyTiles; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < C::kDimSteps; ++kk) {
#pragma unroll
      for (int nt2 = 0; nt2 < C::kKeyTiles / 2; ++nt2) {
        uint32_t b[4];  // b0, b1 of key n-tile 2 nt2, then of 2 nt2 + 1
        const int key = nt2 * 16 + (lane & 7) + (lane >> 4) * 8;
        ldmatrix_x4(b, sk.chunk(key, kk * 2 + ((lane >> 3) & 1)));
        mma_16816<T>(s[2 * nt2], q[kk], b[0], b[1]);
        mma_16816<T>(s[2 * nt2 + 1], q[kk], b[2], b[3]);
      }
    }
  }

  // Scales s to base-2 units, masks keys >= seq and (causal) keys past the row, folds the tile
  // into the row states and the accumulators, and leaves exp2(s - shift) in s.
  __device__ __forceinline__ void softmax(float (&s)[C::kKeyTiles][4], float scale_log2, bool mask, int n0,
                                          int first_row, int seq, bool causal) {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int nt = 0; nt < C::kKeyTiles; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[nt][e] *= scale_log2;
        if (mask) {
          const int key = n0 + nt * 8 + 2 * t + (e & 1);
          const int row = first_row + g + (e >> 1) * 8;
          if (key >= seq || (causal && key > row)) s[nt][e] = -INFINITY;
        }
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float tile_max = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < C::kKeyTiles; ++nt)
        tile_max = fmaxf(tile_max, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
      float shift;
      const float rescale = rows[r].update(quad_max(tile_max), shift);
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt) {
        acc[dt][2 * r] *= rescale;
        acc[dt][2 * r + 1] *= rescale;
      }
      float sum = 0.0f;
#pragma unroll
      for (int nt = 0; nt < C::kKeyTiles; ++nt) {
        s[nt][2 * r] = fast_exp2(s[nt][2 * r] - shift);
        s[nt][2 * r + 1] = fast_exp2(s[nt][2 * r + 1] - shift);
        sum += s[nt][2 * r] + s[nt][2 * r + 1];
      }
      rows[r].sum += sum;  // this thread's columns only; the quad is summed at the end
    }
  }

  // acc += P V, P taken from the probabilities in s (C layout of n-tiles = A layout of k-steps).
  __device__ __forceinline__ void accumulate(const float (&s)[C::kKeyTiles][4],
                                             const typename C::KvTile& sv) {
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      const uint32_t p[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]), pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                             pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dt2 = 0; dt2 < C::kDimSteps; ++dt2) {
        uint32_t b[4];  // b0, b1 of d-tile 2 dt2, then of 2 dt2 + 1
        const int key = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
        ldmatrix_x4_trans(b, sv.chunk(key, dt2 * 2 + (lane >> 4)));
        mma_16816<T>(acc[2 * dt2], p, b[0], b[1]);
        mma_16816<T>(acc[2 * dt2 + 1], p, b[2], b[3]);
      }
    }
  }

  // Divides by the row sums and writes the warp's 16 rows through its own rows of `sq` (which
  // only this warp read), as 16-byte stores.
  __device__ __forceinline__ void store(const typename C::QTile& sq, T* o, int64_t row_stride, int m0,
                                        int seq) {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float inv = 1.0f / quad_sum(rows[r].sum);
      const int row = row0 + g + r * 8;
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt)
        *reinterpret_cast<uint32_t*>(sq.chunk(row, dt) + 2 * t) =
            pack2<T>(acc[dt][2 * r] * inv, acc[dt][2 * r + 1] * inv);
    }
    __syncwarp();
    constexpr int kChunks = D / 8;
#pragma unroll
    for (int i = 0; i < 16 * kChunks / 32; ++i) {
      const int id = lane + i * 32, row = row0 + id / kChunks, c = id % kChunks;
      if (m0 + row < seq)
        *reinterpret_cast<uint4*>(o + static_cast<int64_t>(m0 + row) * row_stride + c * 8) =
            *reinterpret_cast<const uint4*>(sq.chunk(row, c));
    }
  }
};

template <typename T, int D>
__global__ void __launch_bounds__(MmaConfig<T, D>::kThreads) attention_mma(AttentionArgs<T> a) {
  using C = MmaConfig<T, D>;
  extern __shared__ __align__(128) unsigned char smem[];
  const typename C::QTile sq{reinterpret_cast<T*>(smem)};
  T* const kv_base = sq.base + C::QTile::kElements;
  const auto k_tile = [&](int stage) {
    return typename C::KvTile{kv_base + stage * 2 * C::KvTile::kElements};
  };
  const auto v_tile = [&](int stage) {
    return typename C::KvTile{kv_base + (stage * 2 + 1) * C::KvTile::kElements};
  };

  const int m0 = query_tile() * kBlockM;
  const int h = blockIdx.y, b = blockIdx.z, kv_h = h / a.group;
  const T* q = head_rows(a.q, a.qs, b, h);
  const T* k = head_rows(a.k, a.ks, b, kv_h);
  const T* v = head_rows(a.v, a.vs, b, kv_h);
  const int n_tiles = (key_end(m0, kBlockM, a.seq, a.causal) + kBlockN - 1) / kBlockN;
  const auto load_kv = [&](int tile) {
    k_tile(tile % kStages).template load_async<C::kThreads>(k, a.ks.s, tile * kBlockN, a.seq);
    v_tile(tile % kStages).template load_async<C::kThreads>(v, a.vs.s, tile * kBlockN, a.seq);
  };

  // Q joins the first tile's group; tiles 0 .. kStages - 2 are in flight before the loop.
  sq.template load_async<C::kThreads>(q, a.qs.s, m0, a.seq);
#pragma unroll
  for (int tile = 0; tile < kStages - 1; ++tile) {
    if (tile < n_tiles) load_kv(tile);
    cp_async_commit();
  }

  MmaWarp<T, D> w;
  w.lane = static_cast<int>(threadIdx.x % 32);
  w.row0 = static_cast<int>(threadIdx.x / 32) * 16;
  cp_async_wait<kStages - 2>();  // the first group: Q and tile 0
  __syncthreads();
  w.load_q(sq);  // each warp reads only its own 16 rows of sq, and writes only those in store()
  const int first_row = m0 + w.row0, last_row = first_row + 15;
  float s[C::kKeyTiles][4];
#pragma unroll 1
  for (int tile = 0; tile < n_tiles; ++tile) {
    // Groups committed so far: tiles 0 .. tile + kStages - 2; this tile's is the oldest of them.
    cp_async_wait<kStages - 2>();
    __syncthreads();  // this tile is visible to all, and every warp is done with tile - 1
    // Refill the stage that held tile - 1.
    if (tile + kStages - 1 < n_tiles) load_kv(tile + kStages - 1);
    cp_async_commit();
    const int n0 = tile * kBlockN;
    // A causal warp whose rows all precede the tile's first key has nothing to add.
    if (!a.causal || n0 <= last_row) {
      const bool mask = n0 + kBlockN > a.seq || (a.causal && n0 + kBlockN - 1 > first_row);
      w.scores(k_tile(tile % kStages), s);
      w.softmax(s, a.scale_log2, mask, n0, first_row, a.seq, a.causal);
      w.accumulate(s, v_tile(tile % kStages));
    }
  }
  cp_async_wait<0>();  // no copy may still be landing in shared memory when the block exits
  w.store(sq, head_rows(a.o, a.os, b, h), a.os.s, m0, a.seq);
}

// ------------------------------------------------------------------------------------------------
// host side

constexpr int kMaxDim = 256;

// Sets the block's dynamic shared-memory size, checks it against the device, and launches.
template <typename T, typename Kernel>
int launch_with_smem(Kernel kernel, int tiles, const ak_call* call, int threads, int smem_bytes,
                     const AttentionArgs<T>& args) {
  int device = 0, optin = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess)
    return AK_ERR_LAUNCH;
  if (smem_bytes > optin) return AK_ERR_UNSUPPORTED;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes) != cudaSuccess)
    return AK_ERR_LAUNCH;
  const ak_tensor& q = call->inputs[0];
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(q.shape[1]),
                  static_cast<unsigned>(q.shape[0]));
  kernel<<<grid, threads, smem_bytes, stream_of(call)>>>(args);
  return check_launch();
}

bool strides_whole_vectors(const Strides& s) {
  return s.b % 8 == 0 && s.h % 8 == 0 && s.s % 8 == 0;
}

template <typename T>
bool mma_fits(const AttentionArgs<T>& a) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    const bool aligned = is_aligned16(a.q) && is_aligned16(a.k) && is_aligned16(a.v) && is_aligned16(a.o);
    const bool strided = strides_whole_vectors(a.qs) && strides_whole_vectors(a.ks) &&
                         strides_whole_vectors(a.vs) && strides_whole_vectors(a.os);
    return (a.dim == 64 || a.dim == 128) && aligned && strided;
  }
}

template <typename T>
int launch(const ak_call* call, const AttentionArgs<T>& a) {
  const ak_tensor& q = call->inputs[0];
  if (q.shape[1] > 65535 || q.shape[0] > 65535) return AK_ERR_UNSUPPORTED;  // grid y and z
  if constexpr (sizeof(T) == 2) {
    if (mma_fits(a)) {
#if PATH == 1
      const ak_attention_sm90::Problem p{a.seq, a.group, a.scale_log2, a.causal, 0, 0, 0};
      const int rc = a.dim == 64 ? ak_attention_sm90::launch<T, 64>(call, p)
                                 : ak_attention_sm90::launch<T, 128>(call, p);
      if (rc != AK_ERR_UNSUPPORTED) return rc;
#endif
      const int tiles = (a.seq + kBlockM - 1) / kBlockM;
      const int mma_rc =
          a.dim == 64 ? launch_with_smem(attention_mma<T, 64>, tiles, call, MmaConfig<T, 64>::kThreads,
                                         MmaConfig<T, 64>::kSmemBytes, a)
                      : launch_with_smem(attention_mma<T, 128>, tiles, call, MmaConfig<T, 128>::kThreads,
                                         MmaConfig<T, 128>::kSmemBytes, a);
      // UNSUPPORTED: its tiles need more shared memory than the device has; the CUDA-core variant below.
      if (mma_rc != AK_ERR_UNSUPPORTED) return mma_rc;
    }
  }
  const int tiles = (a.seq + kSimtRows - 1) / kSimtRows;
  const int smem = simt_smem_floats(a.dim) * static_cast<int>(sizeof(float));
  if (a.dim <= 32) return launch_with_smem(attention_simt<T, 32>, tiles, call, kSimtThreads, smem, a);
  if (a.dim <= 64) return launch_with_smem(attention_simt<T, 64>, tiles, call, kSimtThreads, smem, a);
  if (a.dim <= 128) return launch_with_smem(attention_simt<T, 128>, tiles, call, kSimtThreads, smem, a);
  return launch_with_smem(attention_simt<T, 256>, tiles, call, kSimtThreads, smem, a);
}

// q, k, v, o are 4-d with inner stride 1 and shapes that agree; Hkv divides H.
bool shapes_fit(const ak_call* call) {
  const ak_tensor &q = call->inputs[0], &k = call->inputs[1], &v = call->inputs[2], &o = call->outputs[0];
  const ak_tensor* const tensors[] = {&q, &k, &v, &o};
  for (const ak_tensor* t : tensors) {
    if (t->ndim != 4 || t->dtype != q.dtype || t->data == nullptr) return false;
    if (t->strides[3] != 1 && t->shape[3] != 1) return false;
    for (int d = 0; d < 3; ++d)
      if (t->strides[d] < 0) return false;
  }
  for (int d = 0; d < 4; ++d)
    if (o.shape[d] != q.shape[d]) return false;
  for (int d = 0; d < 4; ++d)
    if (k.shape[d] != v.shape[d]) return false;
  const int64_t batch = q.shape[0], heads = q.shape[1], seq = q.shape[2], dim = q.shape[3],
                kv_heads = k.shape[1];
  if (batch < 1 || heads < 1 || seq < 1 || dim < 1 || dim > kMaxDim || kv_heads < 1) return false;
  if (heads % kv_heads != 0 || k.shape[0] != batch || k.shape[2] != seq || k.shape[3] != dim) return false;
  return seq <= INT32_MAX - 1024;
}

Strides strides_of(const ak_tensor& t) {
  return {t.strides[0], t.strides[1], t.strides[2]};
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (call == nullptr || call->abi_version != AK_ABI_VERSION) return AK_ERR_UNSUPPORTED;
  if (call->n_inputs != 3 || call->n_outputs != 1 || call->n_scalars < 2) return AK_ERR_UNSUPPORTED;
  if (!shapes_fit(call)) return AK_ERR_UNSUPPORTED;
  const double causal = call->scalars[1];
  if (causal != 0.0 && causal != 1.0) return AK_ERR_UNSUPPORTED;
  const ak_tensor &q = call->inputs[0], &k = call->inputs[1], &v = call->inputs[2], &o = call->outputs[0];
  return dispatch_float_dtype(q.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const AttentionArgs<T> a{static_cast<const T*>(q.data),
                             static_cast<const T*>(k.data),
                             static_cast<const T*>(v.data),
                             static_cast<T*>(o.data),
                             strides_of(q),
                             strides_of(k),
                             strides_of(v),
                             strides_of(o),
                             static_cast<int>(q.shape[1] / k.shape[1]),
                             static_cast<int>(q.shape[2]),
                             static_cast<int>(q.shape[3]),
                             static_cast<float>(call->scalars[0] * static_cast<double>(kLog2e)),
                             causal != 0.0};
    return launch<T>(call, a);
  });
}
