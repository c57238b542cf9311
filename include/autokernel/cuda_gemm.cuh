// GEMM machinery shared by kernels/cuda/matmul.cu and kernels/cuda/fused_mlp.cu. C++17,
// header-only, no state beyond cached device attributes.
//
// acc[m, n] = sum_k A[m, k] * B_j(k, n) for NB right-hand matrices B_0..B_{NB-1} that share the
// same (m, n) tile (NB = 2 computes a gate and an up projection together); an epilogue functor
// gets each pair of adjacent outputs (n even) and does the storing.
//
// What is here:
//   BLayout            how B is stored: KN (B[k][n], n contiguous: a plain matmul) or NK
//                      (B[n][k], k contiguous: torch.nn.Linear weights)
//   GemmProblem<T,NB>  pointers, row strides (elements) and sizes
//   MmaGemm<...>       fp16/bf16 tensor cores through mma.sync.m16n8k16 (fp32 accumulators),
//                      ldmatrix from XOR-swizzled shared memory, a STAGES-deep cp.async pipeline
//                      with zero-filled out-of-range chunks; Vec=false loads element by element
//                      instead (rows that are not 16-byte aligned), same compute
//   StoreC<T>          the plain epilogue: C[m, n] = acc, rounded once. An epilogue functor
//                      stores a pair of outputs; for the staged (TMA) store of the sm90 kernel
//                      it also has combine (the value of one output from its NB accumulators)
//                      and target (the StoreC of C).
//   tile_of            block index -> (tile_m, tile_n), grouped along M so that neighbouring
//                      blocks share A and B tiles in L2
// The device's attributes, the module probes and the launch helpers (clusters among them):
// cuda_gemm_device.cuh, included here.
// Deterministic: each output is one thread's fixed-order sum; no atomics, no split-K here.
// Hopper (wgmma, TMA, mbarriers): cuda_gemm_sm90.cuh; fp32 FFMA tiles: cuda_gemm_simt.cuh;
// matmul's fp32 (split-K, matrix-vector): cuda_gemm_fp32.cuh.
#pragma once

#include <limits.h>

#include <type_traits>

#include "autokernel/cuda_gemm_device.cuh"
#include "autokernel/cuda_kernel.cuh"

namespace ak_gemm {

using ak_cuda::from_float;
using ak_cuda::to_float;

enum class BLayout { KN, NK };

template <typename T, int NB>
struct GemmProblem {
  const T* a;
  const T* b[NB];
  int64_t lda, ldb;  // row strides in elements: A[m][k] at a[m * lda + k]; B per its layout
  int m, n, k;
};

// Whether the tile loaders may use 16-byte copies: every row starts 16-byte aligned and the
// contiguous extent of each matrix is whole 16-byte chunks (so a chunk is all in or all out).
template <typename T, int NB>
bool rows_vectorizable(const GemmProblem<T, NB>& p, BLayout layout) {
  constexpr int kVec = 16 / sizeof(T);
  bool ok = ak_cuda::is_aligned16(p.a) && p.lda % kVec == 0 && p.k % kVec == 0 && p.ldb % kVec == 0;
  for (int j = 0; j < NB; ++j) ok = ok && ak_cuda::is_aligned16(p.b[j]);
  return ok && (layout == BLayout::NK ? p.k : p.n) % kVec == 0;
}

// C[m, n] = acc rounded once; pairs go out as one 4-byte store when the row allows it.
template <typename T>
struct StoreC {
  T* c;
  int64_t ldc;
  int m, n;
  bool pairs;  // c 4-byte aligned and ldc even: (row, even n) pairs are 4-byte aligned

  // For epilogues that stage C in shared memory: the value of one output, and where C is.
  __device__ __forceinline__ static float combine(const float (&v)[1]) { return v[0]; }
  const StoreC& target() const { return *this; }

  __device__ __forceinline__ void operator()(int row, int col, const float (&v0)[1],
                                             const float (&v1)[1]) const {
    if (row >= m || col >= n) return;
    T* p = c + static_cast<int64_t>(row) * ldc + col;
    if constexpr (sizeof(T) == 2) {
      if (pairs && col + 1 < n) {
        T two[2] = {from_float<T>(v0[0]), from_float<T>(v1[0])};
        *reinterpret_cast<uint32_t*>(p) = *reinterpret_cast<const uint32_t*>(two);
        return;
      }
    }
    p[0] = from_float<T>(v0[0]);
    if (col + 1 < n) p[1] = from_float<T>(v1[0]);
  }
};

template <typename T>
StoreC<T> make_store(T* c, int64_t ldc, int m, int n) {
  const bool pairs = (reinterpret_cast<uintptr_t>(c) & 3u) == 0 && ldc % 2 == 0;
  return {c, ldc, m, n, pairs};
}

// Block `linear` of a grid of tiles_m * tiles_n blocks -> its tile, walking GROUP_M tile rows at
// a time down each column so that a wave of blocks reuses a few rows of A and columns of B.
struct TileCoord {
  int m, n;
};
__device__ __forceinline__ TileCoord tile_of(int linear, int tiles_m, int tiles_n) {
  constexpr int kGroupM = 8;
  const int per_group = kGroupM * tiles_n;
  const int group = linear / per_group;
  const int first_m = group * kGroupM;
  const int group_rows = min(tiles_m - first_m, kGroupM);
  const int in_group = linear - group * per_group;
  return {first_m + in_group % group_rows, in_group / group_rows};
}

// ---- Tensor-core path (mma.sync, sm_80 and later) ----------------------------------------------

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, zero-filled when !valid (then nothing is read from `src`).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a * b for one m16n8k16 tile (row-major A fragment, column-major B fragment).
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (sizeof(T) == 2 && std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// Element offset of 16-byte chunk `chunk` of row `row` in a shared tile of COLS 2-byte elements
// per row. The chunk index is XORed with bits of the row so that the 8 rows an ldmatrix phase
// reads at the same logical chunk fall in 8 different 16-byte bank groups.
template <int COLS>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  constexpr int kChunks = COLS / 8;
  static_assert(kChunks >= 4 && (kChunks & (kChunks - 1)) == 0, "rows of 4, 8, 16... chunks");
  const int x = kChunks >= 8 ? (row & 7) : ((row >> 1) & 3);
  return row * COLS + ((chunk ^ x) << 3);
}

// A ROWS x COLS tile at (row0, col0) of a rows x cols matrix with row stride `ld` into shared
// memory; what lies outside the matrix reads as zero. Vec: one cp.async per 16-byte chunk (rows
// 16-byte aligned, cols whole chunks); otherwise element loads, stored as the same chunks.
template <typename T, int ROWS, int COLS, int THREADS, bool Vec>
__device__ __forceinline__ void load_tile(T* tile, const T* g, int64_t ld, int row0, int rows, int col0,
                                          int cols) {
  constexpr int kChunksPerRow = COLS / 8, kChunks = ROWS * kChunksPerRow;
  if constexpr (Vec) {
#pragma unroll
    for (int i = 0; i < (kChunks + THREADS - 1) / THREADS; ++i) {
      const int chunk = static_cast<int>(threadIdx.x) + i * THREADS;
      if (kChunks % THREADS != 0 && chunk >= kChunks) break;
      const int r = chunk / kChunksPerRow, c = chunk % kChunksPerRow;
      const int grow = row0 + r, gcol = col0 + c * 8;
      const bool valid = grow < rows && gcol < cols;
      cp_async16(smem_addr(tile + swizzled<COLS>(r, c)),
                 valid ? g + static_cast<int64_t>(grow) * ld + gcol : g, valid);
    }
  } else {
    // One chunk at a time: unrolled, the element loads of every chunk would be live at once.
#pragma unroll 1
    for (int chunk = static_cast<int>(threadIdx.x); chunk < kChunks; chunk += THREADS) {
      const int r = chunk / kChunksPerRow, c = chunk % kChunksPerRow;
      const int grow = row0 + r, gcol = col0 + c * 8;
      ak_cuda::Vec16<T> v;
      T* e = reinterpret_cast<T*>(&v.raw);
      const T* src = g + static_cast<int64_t>(grow < rows ? grow : 0) * ld;
#pragma unroll
      for (int j = 0; j < 8; ++j)
        e[j] = (grow < rows && gcol + j < cols) ? src[gcol + j] : from_float<T>(0.0f);
      *reinterpret_cast<uint4*>(tile + swizzled<COLS>(r, c)) = v.raw;
    }
  }
}

template <int BM, int BN, int BK, int WarpsM, int WarpsN, int Stages>
struct MmaTile {
  static constexpr int kBM = BM, kBN = BN, kBK = BK, kWarpsN = WarpsN, kStages = Stages;
  static constexpr int kThreads = WarpsM * WarpsN * 32;
  static constexpr int kWarpM = BM / WarpsM, kWarpN = BN / WarpsN;
  static constexpr int kFragM = kWarpM / 16, kFragN = kWarpN / 8;
  static_assert(BM % (WarpsM * 16) == 0 && BN % (WarpsN * 16) == 0, "warp tiles of whole 16x16 blocks");
  static_assert(BK % 32 == 0 && BN % 32 == 0 && Stages >= 2, "tiles of whole swizzle rows");
  static constexpr int kAElems = BM * BK, kBElems = BN * BK;
  template <int NB>
  static constexpr int kStageElems = kAElems + NB* kBElems;
  template <int NB>
  static constexpr int kSmemBytes = Stages* kStageElems<NB> * 2;
  // Blocks per SM to ask ptxas for: a budget of 128 registers per thread when the accumulators,
  // the fragments of one k-step, ~24 for loop state and ~4 per 16-byte chunk a thread copies
  // per stage fit in it (several blocks per SM), else no budget (one block, up to 255).
  template <int NB>
  static constexpr int kRegsEstimate = NB* kFragM* kFragN * 4 + kFragM * 4 + kFragN * 2 + 24 +
                                       4 * ((kStageElems<NB> / 8 + kThreads - 1) / kThreads);
  template <int NB>
  static constexpr int kMinBlocks = kRegsEstimate<NB> <= 128 ? 65536 / (kThreads * 128) : 1;
};

template <typename T, BLayout L, int NB, class Tile>
using MmaAcc = float[NB][Tile::kFragM][Tile::kFragN][4];

// All BK / 16 k-steps of one shared-memory stage for this warp's tile.
template <typename T, BLayout L, int NB, class Tile>
__device__ __forceinline__ void mma_stage(const T* a_tile, const T* b_tiles, MmaAcc<T, L, NB, Tile>& acc,
                                          int warp_m0, int warp_n0, int lane) {
  constexpr int BK = Tile::kBK, BN = Tile::kBN;
#pragma unroll
  for (int ks = 0; ks < BK / 16; ++ks) {
    uint32_t af[Tile::kFragM][4];
#pragma unroll
    for (int fm = 0; fm < Tile::kFragM; ++fm)
      ldmatrix_x4(af[fm],
                  smem_addr(a_tile + swizzled<BK>(warp_m0 + fm * 16 + (lane & 15), ks * 2 + (lane >> 4))));
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
      const T* b_tile = b_tiles + nb * Tile::kBElems;
      uint32_t bf[Tile::kFragN][2];
#pragma unroll
      for (int f2 = 0; f2 < Tile::kFragN / 2; ++f2) {
        uint32_t r[4];
        if constexpr (L == BLayout::NK) {
          const int n = warp_n0 + f2 * 16 + (lane & 7) + (lane >> 4) * 8;
          ldmatrix_x4(r, smem_addr(b_tile + swizzled<BK>(n, ks * 2 + ((lane >> 3) & 1))));
        } else {
          const int k = ks * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
          ldmatrix_x4_trans(r, smem_addr(b_tile + swizzled<BN>(k, (warp_n0 + f2 * 16) / 8 + (lane >> 4))));
        }
        bf[2 * f2][0] = r[0];
        bf[2 * f2][1] = r[1];
        bf[2 * f2 + 1][0] = r[2];
        bf[2 * f2 + 1][1] = r[3];
      }
#pragma unroll
      for (int fm = 0; fm < Tile::kFragM; ++fm)
#pragma unroll
        for (int fn = 0; fn < Tile::kFragN; ++fn) mma_16816<T>(acc[nb][fm][fn], af[fm], bf[fn]);
    }
  }
}

template <typename T, BLayout L, int NB, class Tile, bool Vec>
__device__ __forceinline__ void mma_load_stage(T* stage, const GemmProblem<T, NB>& p, int m0, int n0,
                                               int kt) {
  constexpr int BM = Tile::kBM, BN = Tile::kBN, BK = Tile::kBK, kThreads = Tile::kThreads;
  const int k0 = kt * BK;
  load_tile<T, BM, BK, kThreads, Vec>(stage, p.a, p.lda, m0, p.m, k0, p.k);
#pragma unroll
  for (int nb = 0; nb < NB; ++nb) {
    T* b_tile = stage + Tile::kAElems + nb * Tile::kBElems;
    if constexpr (L == BLayout::NK)
      load_tile<T, BN, BK, kThreads, Vec>(b_tile, p.b[nb], p.ldb, n0, p.n, k0, p.k);
    else
      load_tile<T, BK, BN, kThreads, Vec>(b_tile, p.b[nb], p.ldb, k0, p.k, n0, p.n);
  }
}

// One BM x BN output tile per block; Stages - 1 k-tiles in flight while one is computed.
// Element loads need more registers than the fast path; they get one block per SM.
template <typename T, BLayout L, int NB, class Tile, bool Vec, class Epi>
__global__ void __launch_bounds__(Tile::kThreads, Vec ? Tile::template kMinBlocks<NB> : 1)
    mma_gemm_kernel(const GemmProblem<T, NB> p, const Epi epi) {
  constexpr int BM = Tile::kBM, BN = Tile::kBN, BK = Tile::kBK, Stages = Tile::kStages;
  constexpr int kStageElems = Tile::template kStageElems<NB>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  const TileCoord tile = tile_of(static_cast<int>(blockIdx.x), (p.m + BM - 1) / BM, (p.n + BN - 1) / BN);
  const int m0 = tile.m * BM, n0 = tile.n * BN;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int warp_m0 = (warp / Tile::kWarpsN) * Tile::kWarpM, warp_n0 = (warp % Tile::kWarpsN) * Tile::kWarpN;
  const int k_tiles = (p.k + BK - 1) / BK;

  MmaAcc<T, L, NB, Tile> acc;
#pragma unroll
  for (int nb = 0; nb < NB; ++nb)
#pragma unroll
    for (int fm = 0; fm < Tile::kFragM; ++fm)
#pragma unroll
      for (int fn = 0; fn < Tile::kFragN; ++fn)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[nb][fm][fn][i] = 0.0f;

#pragma unroll
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < k_tiles) mma_load_stage<T, L, NB, Tile, Vec>(smem + s * kStageElems, p, m0, n0, s);
    cp_async_commit();
  }
#pragma unroll 1
  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<Stages - 2>();
    __syncthreads();  // stage kt has landed for everyone; stage kt - 1 is free to refill
    const int next = kt + Stages - 1;
    if (next < k_tiles)
      mma_load_stage<T, L, NB, Tile, Vec>(smem + (next % Stages) * kStageElems, p, m0, n0, next);
    cp_async_commit();
    const T* stage = smem + (kt % Stages) * kStageElems;
    mma_stage<T, L, NB, Tile>(stage, stage + Tile::kAElems, acc, warp_m0, warp_n0, lane);
  }
  cp_async_wait<0>();

  // Accumulator fragment: rows lane / 4 and lane / 4 + 8, columns 2 * (lane % 4) + {0, 1}.
#pragma unroll
  for (int fm = 0; fm < Tile::kFragM; ++fm)
#pragma unroll
    for (int fn = 0; fn < Tile::kFragN; ++fn)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float v0[NB], v1[NB];
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
          v0[nb] = acc[nb][fm][fn][2 * half];
          v1[nb] = acc[nb][fm][fn][2 * half + 1];
        }
        epi(m0 + warp_m0 + fm * 16 + half * 8 + lane / 4, n0 + warp_n0 + fn * 8 + (lane % 4) * 2, v0, v1);
      }
}

template <typename T, BLayout L, int NB, class Tile, class Epi>
int launch_mma_gemm(const GemmProblem<T, NB>& p, const Epi& epi, cudaStream_t stream) {
  static_assert(sizeof(T) == 2, "tensor-core path: fp16 and bf16");
  const int64_t tiles =
      static_cast<int64_t>((p.m + Tile::kBM - 1) / Tile::kBM) * ((p.n + Tile::kBN - 1) / Tile::kBN);
  if (tiles > INT_MAX) return AK_ERR_UNSUPPORTED;
  const auto kernel = rows_vectorizable(p, L) ? mma_gemm_kernel<T, L, NB, Tile, true, Epi>
                                              : mma_gemm_kernel<T, L, NB, Tile, false, Epi>;
  constexpr int kBytes = Tile::template kSmemBytes<NB>;
  if (!allow_shared_memory(kernel, kBytes)) return AK_ERR_UNSUPPORTED;
  kernel<<<static_cast<unsigned>(tiles), Tile::kThreads, kBytes, stream>>>(p, epi);
  return ak_cuda::check_launch();
}

}  // namespace ak_gemm
