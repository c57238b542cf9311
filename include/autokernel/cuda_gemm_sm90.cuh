// Hopper GEMM for kernels/cuda/matmul.cu and kernels/cuda/fused_mlp.cu (sm_90a only): wgmma
// from shared memory filled by TMA bulk tensor copies, an mbarrier pipeline between a producer
// warpgroup and two consumer warpgroups, and a persistent grid of one block per SM. C++17,
// header-only; the only state is the cached driver entry point.
//
// Block: 384 threads. Warpgroup 0 is the producer: after giving registers back (setmaxnreg) one
// thread walks the block's tiles and, per 64-deep k-tile, waits for a free stage (its `empty`
// mbarrier), arms the stage's `full` mbarrier with the byte count and issues the TMA copies of
// the A tile (128 x 64) and the NB B tiles. Warpgroups 1 and 2 are consumers of rows 0-63 and
// 64-127 of the tile: per k-tile they wait on `full`, issue 4 k16 steps of
// wgmma.m64n{BN}k16 per B matrix, commit, and once the previous k-tile's group has completed
// (wgmma.wait_group 1) release its stage with one arrive per warp. After the last k-tile the
// producer already fills the stages for the block's next tile, and the accumulators leave in
// one of two ways:
//   direct   through the epilogue functor, straight from registers (4-byte global stores: the
//            LSU queue throttles them while the tensor cores wait);
//   staged   (Staged = true, where the staging tiles fit beside the stages and C suits TMA)
//            each consumer rounds its 64 x BN outputs into its own staging tile in shared
//            memory, then one thread sends it to C by TMA stores and the warpgroup starts its
//            next tile at once; the next epilogue first waits until those stores have read the
//            staging tile. TMA clips the edges, so any M and N work.
//
// Shared-memory layouts, all in the 128-byte swizzle that TMA writes (16-byte chunk c of row r
// of each 1024-byte group of 8 rows stored at chunk c ^ (r % 8)):
//   A        K-major: 128 rows of 64 k (128 bytes); descriptor stride between 8-row groups
//            (SBO) 1024 bytes; the k16 step s starts 32 s bytes further in (inside the swizzle
//            row, as the canonical K-major layout allows).
//   B, NK    K-major as A: BN rows of 64 k.
//   B, KN    MN-major: BN / 64 slabs of 64 k-rows x 64 n (128 bytes), one TMA box each;
//            descriptor LBO = 8192 bytes (next 64 columns of n), SBO = 1024 bytes (next 8
//            k-rows), the k16 step s starts 2048 s bytes in; wgmma transposes B (imm-trans-b 1).
// Out-of-range rows and columns of a box read as zeros (TMA fills them), so any M, N, K work
// as long as the row strides are multiples of 16 bytes and the bases 16-byte aligned
// (wgmma_eligible()).
//
// Accumulators (PTX ISA, wgmma D fragment for .m64nNk16 with f32): warp w of a consumer
// warpgroup holds rows 16 w + lane / 4 (+ 8); d[4 j + {0, 1}] and d[4 j + {2, 3}] are columns
// 8 j + 2 (lane % 4) + {0, 1} of those two rows.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums: types only, no link to the driver library
#include <cudaTypedefs.h>

#include "autokernel/cuda_gemm.cuh"

// wgmma's accumulator operands, each list the previous one extended (string literals and
// operand lists concatenate).
#define AK_WGMMA_REGS_32                                                                                 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define AK_WGMMA_REGS_64                                                                              \
  AK_WGMMA_REGS_32                                                                                    \
  ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, " \
  "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define AK_WGMMA_REGS_96                                                                              \
  AK_WGMMA_REGS_64                                                                                    \
  ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, " \
  "%83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define AK_WGMMA_REGS_128                                                                                \
  AK_WGMMA_REGS_96                                                                                       \
  ", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, " \
  "%113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"

#define AK_WGMMA_OUTS_32(d)                                                                                 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),           \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),            \
      "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),            \
      "+f"(d[30]), "+f"(d[31])
#define AK_WGMMA_OUTS_64(d)                                                                          \
  AK_WGMMA_OUTS_32(d), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), \
      "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]),     \
      "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]),     \
      "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]),     \
      "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define AK_WGMMA_OUTS_96(d)                                                                          \
  AK_WGMMA_OUTS_64(d), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), \
      "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),     \
      "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),     \
      "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),     \
      "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define AK_WGMMA_OUTS_128(d)                                                                            \
  AK_WGMMA_OUTS_96(d), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]),  \
      "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), \
      "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), \
      "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), \
      "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

namespace ak_gemm {
namespace sm90 {

constexpr int kBM = 128, kBK = 64, kThreads = 384, kConsumerWarps = 8;

// ---- host: tensor maps ---------------------------------------------------------------------

// cuTensorMapEncodeTiled through the runtime, so that the module needs no libcuda link.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

// A rows x cols row-major matrix (row stride ld elements) read in boxes of box_rows x 64
// columns (128 bytes), stored in shared memory with the 128-byte swizzle.
template <typename T>
bool make_tensor_map(CUtensorMap* map, const T* base, int64_t rows, int64_t cols, int64_t ld, int box_rows) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld) * sizeof(T)};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUtensorMapDataType type =
      std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return encode(map, type, 2, const_cast<T*>(base), dims, strides, box, element_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// What TMA needs: 16-byte aligned bases and row strides (edges need nothing: boxes zero-fill).
template <typename T, int NB>
bool wgmma_eligible(const GemmProblem<T, NB>& p) {
  bool ok = sizeof(T) == 2 && ak_cuda::is_aligned16(p.a) && p.lda % 8 == 0 && p.ldb % 8 == 0 && p.lda > 0 &&
            p.ldb > 0 && device_attribute(cudaDevAttrComputeCapabilityMajor) == 9;
  for (int j = 0; j < NB; ++j) ok = ok && ak_cuda::is_aligned16(p.b[j]);
  return ok;
}

// ---- device: barriers, copies, wgmma ---------------------------------------------------------

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Waits until the phase with this parity has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, "
        "p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// Box (x = column, y = row) of `map` into shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, int x, int y, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}

// Shared-memory matrix descriptor (PTX ISA, "matrix descriptor format"): start address, leading
// and stride byte offsets (all >> 4), 128-byte swizzle in bits 62-63.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16) |
         (static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
// Keeps the compiler from moving accesses to `v` across a wgmma wait.
__device__ __forceinline__ void fence_register(float& v) {
  asm volatile("" : "+f"(v)::"memory");
}

#define AK_WGMMA(N, REGS, A, B, SCALE, TYPE, TRANS_B)                                                    \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %" #SCALE                                             \
               ", 0;\n"                                                                                  \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" AK_WGMMA_REGS_##REGS \
               "}, %" #A ", %" #B ", p, 1, 1, 0, " #TRANS_B ";\n}\n"                                     \
               : AK_WGMMA_OUTS_##REGS(d)                                                                 \
               : "l"(a), "l"(b), "r"(1))

// d (64 x N per warpgroup, fp32) += A (64 x 16 from desc a) * B (16 x N from desc b).
template <typename T, int N, bool TransB>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], uint64_t a, uint64_t b) {
  constexpr bool kHalf = std::is_same_v<T, __half>;
  if constexpr (N == 64) {
    if constexpr (kHalf && TransB) AK_WGMMA(64, 32, 32, 33, 34, "f16", 1);
    if constexpr (kHalf && !TransB) AK_WGMMA(64, 32, 32, 33, 34, "f16", 0);
    if constexpr (!kHalf && TransB) AK_WGMMA(64, 32, 32, 33, 34, "bf16", 1);
    if constexpr (!kHalf && !TransB) AK_WGMMA(64, 32, 32, 33, 34, "bf16", 0);
  } else if constexpr (N == 192) {
    if constexpr (kHalf && TransB) AK_WGMMA(192, 96, 96, 97, 98, "f16", 1);
    if constexpr (kHalf && !TransB) AK_WGMMA(192, 96, 96, 97, 98, "f16", 0);
    if constexpr (!kHalf && TransB) AK_WGMMA(192, 96, 96, 97, 98, "bf16", 1);
    if constexpr (!kHalf && !TransB) AK_WGMMA(192, 96, 96, 97, 98, "bf16", 0);
  } else if constexpr (N == 128) {
    if constexpr (kHalf && TransB) AK_WGMMA(128, 64, 64, 65, 66, "f16", 1);
    if constexpr (kHalf && !TransB) AK_WGMMA(128, 64, 64, 65, 66, "f16", 0);
    if constexpr (!kHalf && TransB) AK_WGMMA(128, 64, 64, 65, 66, "bf16", 1);
    if constexpr (!kHalf && !TransB) AK_WGMMA(128, 64, 64, 65, 66, "bf16", 0);
  } else {
    static_assert(N == 256, "wgmma tiles of 64, 128, 192 or 256 columns");
    if constexpr (kHalf && TransB) AK_WGMMA(256, 128, 128, 129, 130, "f16", 1);
    if constexpr (kHalf && !TransB) AK_WGMMA(256, 128, 128, 129, 130, "f16", 0);
    if constexpr (!kHalf && TransB) AK_WGMMA(256, 128, 128, 129, 130, "bf16", 1);
    if constexpr (!kHalf && !TransB) AK_WGMMA(256, 128, 128, 129, 130, "bf16", 0);
  }
}
#undef AK_WGMMA

// ---- device: the staged epilogue's stores ----------------------------------------------------

// Box (x = column, y = row) of `map` from shared memory, in the thread's bulk group; TMA skips
// the box's elements outside the tensor.
__device__ __forceinline__ void tma_store(const CUtensorMap* map, uint32_t src, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(x), "r"(y), "r"(src)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Until this thread's committed stores have read their shared memory (their writes may still
// be on the way; the grid's end completes them).
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// Makes this thread's shared-memory writes visible to the TMA unit (the async proxy).
__device__ __forceinline__ void fence_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// A barrier among the 128 threads of one consumer warpgroup (ids 1, 2; 0 is __syncthreads).
__device__ __forceinline__ void warpgroup_sync(int consumer) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + consumer) : "memory");
}
__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}

// ---- the kernel ------------------------------------------------------------------------------

// Staged = true reserves, per consumer warpgroup, a 64 x BN staging tile for the epilogue
// (BN / 64 slabs of 64 rows x 128 bytes in the 128-byte swizzle) when it fits beside the stages;
// W::kStaged says whether it did.
template <BLayout L, int NB, int BN, int Stages, bool Staged = false>
struct WgmmaTile {
  static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256, "wgmma n of 64, 128, 192 or 256");
  static constexpr int kABytes = kBM * kBK * 2, kBBytes = BN * kBK * 2;
  static constexpr int kStageBytes = kABytes + NB * kBBytes;
  static constexpr int kSlabBytes = 64 * 128, kStagingBytes = 2 * (BN / 64) * kSlabBytes;
  // Stages, the staging tiles, then a full and an empty barrier per stage, plus slack to align
  // the stages to the 1024 bytes of a swizzle pattern.
  static constexpr int kMaxSmem = 227 * 1024;
  static constexpr bool kStaged =
      Staged && Stages * kStageBytes + kStagingBytes + 2 * Stages * 8 + 1024 <= kMaxSmem;
  static constexpr int kSmemBytes =
      Stages * kStageBytes + (kStaged ? kStagingBytes : 0) + 2 * Stages * 8 + 1024;
};

struct WgmmaGrid {
  int tiles_m, tiles_n, k_tiles;
  int staged;  // 1: the epilogue stores through the staging tiles and map_c
};

template <BLayout L, int NB, int BN, int Stages>
__device__ __forceinline__ void produce(const CUtensorMap* map_a, const CUtensorMap* map_b0,
                                        const CUtensorMap* map_b1, uint32_t smem, uint32_t bars,
                                        WgmmaGrid g) {
  using W = WgmmaTile<L, NB, BN, Stages>;
  int stage = 0;
  uint32_t phase = 0;
  for (int t = static_cast<int>(blockIdx.x); t < g.tiles_m * g.tiles_n; t += static_cast<int>(gridDim.x)) {
    const TileCoord tile = tile_of(t, g.tiles_m, g.tiles_n);
    for (int kt = 0; kt < g.k_tiles; ++kt) {
      const uint32_t full = bars + stage * 8, empty = bars + (Stages + stage) * 8;
      mbar_wait(empty, phase ^ 1);  // a fresh barrier counts its previous phase as complete
      mbar_arrive_expect_tx(full, W::kStageBytes);
      const uint32_t dst = smem + stage * W::kStageBytes;
      tma_load(dst, map_a, kt * kBK, tile.m * kBM, full);
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        const CUtensorMap* map_b = nb == 0 ? map_b0 : map_b1;
        const uint32_t b = dst + W::kABytes + nb * W::kBBytes;
        if constexpr (L == BLayout::NK) {
          tma_load(b, map_b, kt * kBK, tile.n * BN, full);
        } else {
#pragma unroll
          for (int s = 0; s < BN / 64; ++s)
            tma_load(b + s * 8192, map_b, tile.n * BN + 64 * s, kt * kBK, full);
        }
      }
      if (++stage == Stages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

// The accumulators of one consumer warpgroup (64 rows of the tile) through the epilogue functor,
// straight from registers.
template <int NB, int BN, class Epi>
__device__ __forceinline__ void store_direct(const float (&acc)[NB][BN / 2], TileCoord tile, int consumer,
                                             const Epi& epi) {
  const int warp = static_cast<int>(threadIdx.x / 32) % 4, lane = static_cast<int>(threadIdx.x % 32);
  const int row = tile.m * kBM + consumer * 64 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float v0[NB], v1[NB];
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        v0[nb] = acc[nb][4 * j + 2 * half];
        v1[nb] = acc[nb][4 * j + 2 * half + 1];
      }
      epi(row + 8 * half, tile.n * BN + 8 * j + 2 * (lane % 4), v0, v1);
    }
}

// The same values (Epi::combine of the NB accumulators, rounded once to T) written into the
// consumer's staging tile, then sent to C by TMA from one thread. The consumer goes on to its
// next tile while the copy drains; the next epilogue first waits until the copy has read the
// staging tile. Rows r of a slab hold chunk c at c ^ (r % 8) (the map's 128-byte swizzle): for
// one store instruction the 32 lanes hit 32 different banks.
template <typename T, int NB, int BN, class Epi>
__device__ __forceinline__ void store_staged(const float (&acc)[NB][BN / 2], TileCoord tile, int consumer,
                                             uint32_t staging, const CUtensorMap* map_c) {
  const int warp = static_cast<int>(threadIdx.x / 32) % 4, lane = static_cast<int>(threadIdx.x % 32);
  const bool issuer = threadIdx.x % 128 == 0;
  if (issuer) bulk_wait_read();
  warpgroup_sync(consumer);
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float v0[NB], v1[NB];
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        v0[nb] = acc[nb][4 * j + 2 * half];
        v1[nb] = acc[nb][4 * j + 2 * half + 1];
      }
      const T two[2] = {from_float<T>(Epi::combine(v0)), from_float<T>(Epi::combine(v1))};
      const int r = warp * 16 + lane / 4 + 8 * half;  // r % 8 == lane / 4
      const uint32_t addr =
          staging + (j / 8) * (64 * 128) + r * 128 + (((j % 8) ^ (lane / 4)) * 16) + 4 * (lane % 4);
      st_shared_u32(addr, *reinterpret_cast<const uint32_t*>(two));
    }
  fence_async_shared();
  warpgroup_sync(consumer);
  if (issuer) {
#pragma unroll
    for (int s = 0; s < BN / 64; ++s)
      tma_store(map_c, staging + s * (64 * 128), tile.n * BN + 64 * s, tile.m * kBM + consumer * 64);
    bulk_commit();
  }
}

template <typename T, BLayout L, int NB, int BN, int Stages, bool Staged, class Epi>
__device__ __forceinline__ void consume(uint32_t smem, uint32_t bars, WgmmaGrid g, const Epi& epi,
                                        const CUtensorMap* map_c, int consumer) {
  using W = WgmmaTile<L, NB, BN, Stages, Staged>;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const uint32_t staging = smem + Stages * W::kStageBytes + consumer * (W::kStagingBytes / 2);
  int stage = 0;
  uint32_t phase = 0;
  for (int t = static_cast<int>(blockIdx.x); t < g.tiles_m * g.tiles_n; t += static_cast<int>(gridDim.x)) {
    const TileCoord tile = tile_of(t, g.tiles_m, g.tiles_n);
    float acc[NB][BN / 2];
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[nb][i] = 0.0f;
    int held = -1;  // the stage the last committed group still reads
    for (int kt = 0; kt < g.k_tiles; ++kt) {
      mbar_wait(bars + stage * 8, phase);
      const uint32_t a = smem + stage * W::kStageBytes + consumer * 64 * 128;
      const uint32_t b0 = smem + stage * W::kStageBytes + W::kABytes;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        const uint64_t desc_a = smem_desc(a + kk * 32, 16, 1024);
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
          const uint32_t b = b0 + nb * W::kBBytes;
          if constexpr (L == BLayout::NK)
            wgmma<T, BN, false>(acc[nb], desc_a, smem_desc(b + kk * 32, 16, 1024));
          else
            wgmma<T, BN, true>(acc[nb], desc_a, smem_desc(b + kk * 2048, 8192, 1024));
        }
      }
      wgmma_commit();
      wgmma_wait<1>();  // the previous k-tile's group is done: its stage can be refilled
      if (held >= 0 && lane == 0) mbar_arrive(bars + (Stages + held) * 8);
      held = stage;
      if (++stage == Stages) {
        stage = 0;
        phase ^= 1;
      }
    }
    wgmma_wait<0>();
    if (held >= 0 && lane == 0) mbar_arrive(bars + (Stages + held) * 8);
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) fence_register(acc[nb][i]);

    if constexpr (W::kStaged) {
      if (g.staged) {
        store_staged<T, NB, BN, Epi>(acc, tile, consumer, staging, map_c);
        continue;
      }
    }
    store_direct<NB, BN>(acc, tile, consumer, epi);
  }
  if constexpr (W::kStaged) {
    if (g.staged && threadIdx.x % 128 == 0) bulk_wait_read();  // the block's memory outlives the reads
  }
}

template <typename T, BLayout L, int NB, int BN, int Stages, bool Staged, class Epi>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b0,
                      const __grid_constant__ CUtensorMap map_b1, const __grid_constant__ CUtensorMap map_c,
                      const WgmmaGrid g, const Epi epi) {
  using W = WgmmaTile<L, NB, BN, Stages, Staged>;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t smem = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const uint32_t bars = smem + Stages * W::kStageBytes + (W::kStaged ? W::kStagingBytes : 0);
  if (threadIdx.x == 0) {
    for (int s = 0; s < Stages; ++s) {
      mbar_init(bars + s * 8, 1);                          // full: the producer's arrive + bytes
      mbar_init(bars + (Stages + s) * 8, kConsumerWarps);  // empty: one arrive per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (threadIdx.x == 0) produce<L, NB, BN, Stages>(&map_a, &map_b0, &map_b1, smem, bars, g);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    consume<T, L, NB, BN, Stages, Staged>(smem, bars, g, epi, &map_c,
                                          static_cast<int>(threadIdx.x / 128) - 1);
  }
}

// AK_ERR_UNSUPPORTED when the tensor maps cannot be made (the caller then takes another path).
// Staged: store C through shared memory and TMA (epi.target() names C; Epi::combine gives each
// value) where the staging tiles fit and C's base and row stride suit TMA; else from registers.
template <typename T, BLayout L, int NB, int BN, int Stages, bool Staged = false, class Epi>
int launch_wgmma_gemm(const GemmProblem<T, NB>& p, const Epi& epi, cudaStream_t stream) {
  using W = WgmmaTile<L, NB, BN, Stages, Staged>;
  CUtensorMap maps[4];
  if (!make_tensor_map(&maps[0], p.a, p.m, p.k, p.lda, kBM)) return AK_ERR_UNSUPPORTED;
  for (int nb = 0; nb < NB; ++nb) {
    const bool made = L == BLayout::NK ? make_tensor_map(&maps[1 + nb], p.b[nb], p.n, p.k, p.ldb, BN)
                                       : make_tensor_map(&maps[1 + nb], p.b[nb], p.k, p.n, p.ldb, 64);
    if (!made) return AK_ERR_UNSUPPORTED;
  }
  if (NB == 1) maps[2] = maps[1];
  maps[3] = maps[0];
  int staged = 0;
  if constexpr (W::kStaged) {
    const auto& c = epi.target();
    staged = ak_cuda::is_aligned16(c.c) && c.ldc % 8 == 0 && c.ldc >= c.n &&
             make_tensor_map(&maps[3], c.c, c.m, c.n, c.ldc, 64);
  }
  const WgmmaGrid g{(p.m + kBM - 1) / kBM, (p.n + BN - 1) / BN, (p.k + kBK - 1) / kBK, staged};
  const int64_t tiles = static_cast<int64_t>(g.tiles_m) * g.tiles_n;
  const int sms = device_attribute(cudaDevAttrMultiProcessorCount);
  if (tiles > INT_MAX || sms <= 0) return AK_ERR_UNSUPPORTED;
  const auto kernel = wgmma_gemm_kernel<T, L, NB, BN, Stages, Staged, Epi>;
  if (!allow_shared_memory(kernel, W::kSmemBytes)) return AK_ERR_UNSUPPORTED;
  const unsigned blocks = static_cast<unsigned>(tiles < sms ? tiles : sms);
  kernel<<<blocks, kThreads, W::kSmemBytes, stream>>>(maps[0], maps[1], maps[2], maps[3], g, epi);
  return ak_cuda::check_launch();
}

}  // namespace sm90
}  // namespace ak_gemm
