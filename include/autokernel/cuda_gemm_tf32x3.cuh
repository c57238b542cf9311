// fp32 matmul on Hopper's tensor cores at fp32's accuracy (sm_90a only): 3xTF32, for
// kernels/cuda/matmul.cu. C++17, header-only; the pipeline is cuda_gemm_sm90.cuh's (a producer
// warpgroup streaming tiles by TMA into an mbarrier ring, two consumer warpgroups on wgmma, a
// persistent grid of one block per SM), with other operands.
//
// Why 3xTF32: fp32 FFMA peaks at 67 TFLOP/s on an H100, TF32 wgmma at ~495, but a TF32 product
// keeps 10 bits of mantissa (about 1e-3 relative), which fails fp32's tolerances. Each fp32
// operand is split into two TF32 numbers, x = hi + lo with hi = tf32(x) and lo = tf32(x - hi)
// (together 21+ bits), and a b is taken as lo_a hi_b + hi_a lo_b + hi_a hi_b (the small terms
// first), dropping lo_a lo_b (about 2^-22 relative): fp32's accuracy at a third of TF32's rate.
//
// Two kernels on the call's stream:
//   split      A [M, K] -> A_hi, A_lo; B -> B_hi, B_lo as [N, K] (K-major: wgmma takes TF32
//              operands only K-major, so B [K, N] is transposed through a 32 x 32 shared tile;
//              B already [N, K] is split as A). The four live in one stream-ordered workspace
//              (ak_cuda::alloc_workspace), rows padded to 4 floats (16 bytes, for TMA), freed
//              after the GEMM.
//   gemm       128 x 128 output tiles, k-tiles of 32 floats (128 bytes: the 128-byte swizzle
//              row), per stage A_hi, A_lo, B_hi, B_lo (64 KB; 3 stages); per k8 step the three
//              wgmma.m64n128k8.f32.tf32.tf32 into a k-tile's partial sums, which are then added
//              to the totals in registers by FADD: the tensor cores' fp32 accumulation truncates
//              as it aligns its addends, and over a chain of thousands of k that bias reached
//              1.4e-5 of the result's norm at K = 2048 (fp32's tolerance is 1e-5); a chain of 32
//              keeps it at FFMA's level. The epilogue stores from registers. Each output is one
//              fixed-order sum: repeated runs are bitwise equal.
#pragma once

#include "autokernel/cuda_gemm_sm90.cuh"

namespace ak_gemm {
namespace tf32x3 {

using namespace sm90;

// The block (kBM = 128 rows, kThreads, kConsumerWarps) is sm90's; a k-tile is 32 floats, the
// same 128 bytes as its 64 16-bit elements.
constexpr int kBN = 128, kKTile = 32, kStages = 3;
constexpr int kTileBytes = kBM * kKTile * 4;  // one operand part per stage: 128 rows x 128 bytes
constexpr int kStageBytes = 4 * kTileBytes;
constexpr int kSmemBytes = kStages * kStageBytes + 2 * kStages * 8 + 1024;
constexpr size_t kMaxWorkspace = size_t{1} << 30;

// ---- split ------------------------------------------------------------------------------------

__device__ __forceinline__ float round_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}

// The parts of a[r * lda + c] at hi[r * ld + c] and lo[r * ld + c], or, with Transpose, of
// a[c * lda + r] (a is [cols, rows]): 32 x 32 tiles through shared memory, reads and writes
// coalesced either way.
template <bool Transpose>
__global__ void __launch_bounds__(256)
    split_kernel(const float* __restrict__ a, int64_t lda, int rows, int cols, float* __restrict__ hi,
                 float* __restrict__ lo, int64_t ld) {
  __shared__ float tile[32][33];
  const int r0 = static_cast<int>(blockIdx.y) * 32, c0 = static_cast<int>(blockIdx.x) * 32;
  const int tx = static_cast<int>(threadIdx.x % 32), ty = static_cast<int>(threadIdx.x / 32);
  for (int i = ty; i < 32; i += 8) {
    if constexpr (Transpose) {  // a's row c0 + i, column r0 + tx
      const bool in = c0 + i < cols && r0 + tx < rows;
      tile[tx][i] = in ? a[static_cast<int64_t>(c0 + i) * lda + r0 + tx] : 0.0f;
    } else {
      const bool in = r0 + i < rows && c0 + tx < cols;
      tile[i][tx] = in ? a[static_cast<int64_t>(r0 + i) * lda + c0 + tx] : 0.0f;
    }
  }
  __syncthreads();
  for (int i = ty; i < 32; i += 8) {
    if (r0 + i >= rows || c0 + tx >= cols) continue;
    const float x = tile[i][tx], big = round_tf32(x);
    const int64_t at = static_cast<int64_t>(r0 + i) * ld + c0 + tx;
    hi[at] = big;
    lo[at] = round_tf32(x - big);
  }
}

// ---- gemm -------------------------------------------------------------------------------------

struct Grid {
  int tiles_m, tiles_n, k_tiles;
};

// Stage layout: A_hi, A_lo (128 rows of the tile's M), B_hi, B_lo (128 rows of its N), each
// 128 rows x 32 floats in the 128-byte swizzle, as TMA writes it.
__device__ __forceinline__ void produce(const CUtensorMap* const (&maps)[4], uint32_t smem, uint32_t bars,
                                        Grid g) {
  fill_ring<kStages>(WorkPlan{g.tiles_m, g.tiles_n, g.k_tiles}, smem, bars, kStageBytes,
                     [&](TileCoord tile, int kt, uint32_t dst, uint32_t full) {
                       for (int part = 0; part < 4; ++part)
                         tma_load(dst + part * kTileBytes, maps[part], kt * kKTile,
                                  (part < 2 ? tile.m * kBM : tile.n * kBN), full);
                     });
}

template <class Epi>
__device__ __forceinline__ void consume(uint32_t smem, uint32_t bars, Grid g, const Epi& epi, int consumer) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  int stage = 0;
  uint32_t phase = 0;
  for (int t = static_cast<int>(blockIdx.x); t < g.tiles_m * g.tiles_n; t += static_cast<int>(gridDim.x)) {
    const TileCoord tile = tile_of(t, g.tiles_m, g.tiles_n);
    float acc[1][kBN / 2], part[kBN / 2];
#pragma unroll
    for (int i = 0; i < kBN / 2; ++i) acc[0][i] = 0.0f;
    for (int kt = 0; kt < g.k_tiles; ++kt) {
#pragma unroll
      for (int i = 0; i < kBN / 2; ++i) part[i] = 0.0f;
      mbar_wait(bars + stage * 8, phase);
      const uint32_t base = smem + stage * kStageBytes, rows = consumer * 64 * 128;
      const uint32_t a_hi = base + rows, a_lo = base + kTileBytes + rows;
      const uint32_t b_hi = base + 2 * kTileBytes, b_lo = base + 3 * kTileBytes;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kKTile / 8; ++kk) {  // 32 bytes of k per step, as 16-bit k16 steps
        const auto desc = [&](uint32_t at) { return smem_desc(at + kk * 32, 16, 1024); };
        wgmma_tf32(part, desc(a_lo), desc(b_hi));
        wgmma_tf32(part, desc(a_hi), desc(b_lo));
        wgmma_tf32(part, desc(a_hi), desc(b_hi));
      }
      wgmma_commit();
      wgmma_wait<0>();  // the partial sums are in: the stage can be refilled
      if (lane == 0) mbar_arrive(bars + (kStages + stage) * 8);
#pragma unroll
      for (int i = 0; i < kBN / 2; ++i) {
        fence_register(part[i]);
        acc[0][i] += part[i];
      }
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
    store_direct<1, kBN>(acc, tile, consumer, epi);
  }
}

template <class Epi>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_kernel(const __grid_constant__ CUtensorMap a_hi, const __grid_constant__ CUtensorMap a_lo,
                const __grid_constant__ CUtensorMap b_hi, const __grid_constant__ CUtensorMap b_lo,
                const Grid g, const Epi epi) {
#if AK_SM90_CODE
  extern __shared__ unsigned char smem_raw[];
  const uint32_t smem = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const uint32_t bars = smem + kStages * kStageBytes;
  split_warpgroups(
      [&] {
        init_ring(bars, kStages, kConsumerWarps);
        for (const CUtensorMap* map : {&a_hi, &a_lo, &b_hi, &b_lo}) prefetch_tensormap(map);
      },
      [&] {
        const CUtensorMap* const maps[4] = {&a_hi, &a_lo, &b_hi, &b_lo};  // TMA reads them in param space
        produce(maps, smem, bars, g);
      },
      [&](int consumer) { consume(smem, bars, g, epi, consumer); });
#else
  __trap();
#endif
}

// Whether the call is worth the split: an sm_90 device and enough output tiles to fill the SMs
// about halfway (fewer, long-K problems go to the split-K FFMA path), within the workspace cap.
template <BLayout L>
bool worth_it(const GemmProblem<float, 1>& p) {
  if (!hopper_code() || p.lda <= 0 || p.ldb <= 0) return false;
  const int64_t tiles = static_cast<int64_t>((p.m + kBM - 1) / kBM) * ((p.n + kBN - 1) / kBN);
  const int64_t padded_k = (p.k + 3) / 4 * 4;
  const size_t bytes = 2 * static_cast<size_t>(p.m + p.n) * static_cast<size_t>(padded_k) * sizeof(float);
  const bool split_grid_fits = (p.m + 31) / 32 <= 65535 && (p.n + 31) / 32 <= 65535;  // the split's grid y
  return p.k >= kKTile && 2 * tiles >= device_attribute(cudaDevAttrMultiProcessorCount) &&
         bytes <= kMaxWorkspace && tiles <= INT_MAX && split_grid_fits;
}

// AK_ERR_UNSUPPORTED when the workspace or the tensor maps cannot be had (the caller then takes
// the FFMA path); the workspace is freed on the stream after the GEMM whatever happens.
template <BLayout L, class Epi>
int launch_gemm(const GemmProblem<float, 1>& p, const Epi& epi, cudaStream_t stream) {
  const int64_t ld = (p.k + 3) / 4 * 4;
  const size_t a_floats = static_cast<size_t>(p.m) * ld, b_floats = static_cast<size_t>(p.n) * ld;
  const size_t bytes = 2 * (a_floats + b_floats) * sizeof(float);
  void* workspace = nullptr;
  if (!ak_cuda::alloc_workspace(&workspace, bytes, stream)) return AK_ERR_UNSUPPORTED;
  float* const a_hi = static_cast<float*>(workspace);
  float *const a_lo = a_hi + a_floats, *const b_hi = a_lo + a_floats, *const b_lo = b_hi + b_floats;
  CUtensorMap maps[4];
  bool ok = make_tensor_map(&maps[0], a_hi, p.m, p.k, ld, kBM) &&
            make_tensor_map(&maps[1], a_lo, p.m, p.k, ld, kBM) &&
            make_tensor_map(&maps[2], b_hi, p.n, p.k, ld, kBN) &&
            make_tensor_map(&maps[3], b_lo, p.n, p.k, ld, kBN);
  const auto kernel = gemm_kernel<Epi>;
  ok = ok && allow_shared_memory(kernel, kSmemBytes);
  int rc = AK_ERR_UNSUPPORTED;
  if (ok) {
    const dim3 block(256);
    split_kernel<false>
        <<<dim3((p.k + 31) / 32, (p.m + 31) / 32), block, 0, stream>>>(p.a, p.lda, p.m, p.k, a_hi, a_lo, ld);
    if constexpr (L == BLayout::NK)
      split_kernel<false><<<dim3((p.k + 31) / 32, (p.n + 31) / 32), block, 0, stream>>>(p.b[0], p.ldb, p.n,
                                                                                        p.k, b_hi, b_lo, ld);
    else
      split_kernel<true><<<dim3((p.k + 31) / 32, (p.n + 31) / 32), block, 0, stream>>>(p.b[0], p.ldb, p.n,
                                                                                       p.k, b_hi, b_lo, ld);
    const Grid g{(p.m + kBM - 1) / kBM, (p.n + kBN - 1) / kBN, (p.k + kKTile - 1) / kKTile};
    const int sms = device_attribute(cudaDevAttrMultiProcessorCount);
    const int tiles = g.tiles_m * g.tiles_n;
    kernel<<<static_cast<unsigned>(tiles < sms ? tiles : sms), kThreads, kSmemBytes, stream>>>(
        maps[0], maps[1], maps[2], maps[3], g, epi);
    rc = ak_cuda::check_launch();
  }
  (void)ak_cuda::free_workspace(workspace, stream);
  return rc;
}

}  // namespace tf32x3
}  // namespace ak_gemm
