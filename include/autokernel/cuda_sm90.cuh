// Hopper (sm_90a) building blocks shared by the wgmma GEMM (cuda_gemm_sm90.cuh) and the wgmma
// attention (cuda_attention_sm90.cuh): tensor maps made through the runtime's driver entry point,
// mbarriers, TMA loads and stores with their bulk groups, shared-memory matrix descriptors, and
// wgmma with the accumulator in registers. C++17, header-only; the only state is the cached
// driver entry point.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums: types only, no link to the driver library
#include <cudaTypedefs.h>

#include <type_traits>

#include "autokernel/cuda_kernel.cuh"

// The Hopper kernels' bodies are sm_90a code (wgmma, setmaxnreg, TMA with mbarriers). Built for
// another target (sm_80, sm_89, compute_80 PTX, a later architecture) a module keeps their names,
// since its host code is the same for every target, but each body is a trap, and the host
// launches none of them where ak_gemm::hopper_code() says so. sm_90 without the "a" features
// cannot build them at all.
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#if __CUDA_ARCH__ == 900
#error "the Hopper kernels need sm_90a's features (wgmma, setmaxnreg): build for sm_90a, not sm_90"
#endif
#define AK_SM90_CODE 0
#else
#define AK_SM90_CODE 1
#endif

// wgmma's accumulator operands, each list the previous one extended (string literals and
// operand lists concatenate).
#define AK_WGMMA_REGS_16 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define AK_WGMMA_REGS_32 \
  AK_WGMMA_REGS_16 ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
// m64n96 and m64n112 (the decode products' one-wave tiles of W) extend the 32-register list.
#define AK_WGMMA_REGS_48 \
  AK_WGMMA_REGS_32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define AK_WGMMA_REGS_56 AK_WGMMA_REGS_48 ", %48, %49, %50, %51, %52, %53, %54, %55"
#define AK_WGMMA_REGS_64 AK_WGMMA_REGS_56 ", %56, %57, %58, %59, %60, %61, %62, %63"
#define AK_WGMMA_REGS_96                                                                              \
  AK_WGMMA_REGS_64                                                                                    \
  ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, " \
  "%83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"

#define AK_WGMMA_OUTS_16(d)                                                                       \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define AK_WGMMA_OUTS_32(d)                                                                          \
  AK_WGMMA_OUTS_16(d), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),     \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define AK_WGMMA_OUTS_48(d)                                                                          \
  AK_WGMMA_OUTS_32(d), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), \
      "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]),     \
      "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
#define AK_WGMMA_OUTS_56(d)                                                                          \
  AK_WGMMA_OUTS_48(d), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), \
      "+f"(d[54]), "+f"(d[55])
#define AK_WGMMA_OUTS_64(d)                                                                          \
  AK_WGMMA_OUTS_56(d), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), \
      "+f"(d[62]), "+f"(d[63])
// m64n176 (176 = 11 x 16 keys: the attention's wide key tile) extends the 64-register list.
#define AK_WGMMA_REGS_88                                                                              \
  AK_WGMMA_REGS_64                                                                                    \
  ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, " \
  "%83, %84, %85, %86, %87"
#define AK_WGMMA_OUTS_88(d)                                                                          \
  AK_WGMMA_OUTS_64(d), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), \
      "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),     \
      "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),     \
      "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
#define AK_WGMMA_OUTS_96(d)                                                                          \
  AK_WGMMA_OUTS_64(d), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), \
      "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),     \
      "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),     \
      "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),     \
      "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
// m64n224 (the matmul's 224-wide tiles) extends the 96-register list,
// m64n256 the 112-register one.
#define AK_WGMMA_REGS_112 \
  AK_WGMMA_REGS_96        \
  ", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
#define AK_WGMMA_REGS_128 \
  AK_WGMMA_REGS_112       \
  ", %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define AK_WGMMA_OUTS_112(d)                                                                            \
  AK_WGMMA_OUTS_96(d), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]),  \
      "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), \
      "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
#define AK_WGMMA_OUTS_128(d)                                                                                \
  AK_WGMMA_OUTS_112(d), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), \
      "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]),     \
      "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

namespace ak_gemm {
namespace sm90 {

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

// A rows x cols row-major matrix (row stride ld elements) read in boxes of box_rows x 128
// bytes (64 16-bit or 32 fp32 columns), stored in shared memory with the 128-byte swizzle; or,
// with box_cols > 0, in boxes of box_rows x box_cols elements packed row after row, unswizzled
// (box_cols * sizeof(T) a multiple of 16).
template <typename T>
bool make_tensor_map(CUtensorMap* map, const T* base, int64_t rows, int64_t cols, int64_t ld, int box_rows,
                     int box_cols = 0) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld) * sizeof(T)};
  const bool swizzled = box_cols == 0;
  const cuuint32_t box[2] = {
      swizzled ? 128 / static_cast<cuuint32_t>(sizeof(T)) : static_cast<cuuint32_t>(box_cols),
      static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUtensorMapDataType type = std::is_same_v<T, float>    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                               : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return encode(map, type, 2, const_cast<T*>(base), dims, strides, box, element_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzled ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// ---- device: barriers, copies, wgmma ---------------------------------------------------------

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// A producer/consumer ring at bars: `stages` full barriers (the producer's arrive plus the bytes
// its copies bring) and then `stages` empty ones (one arrive per consumer warp). One thread calls
// it; the block synchronizes before anyone waits.
__device__ __forceinline__ void init_ring(uint32_t bars, int stages, int consumer_warps) {
  for (int s = 0; s < stages; ++s) {
    mbar_init(bars + s * 8, 1);
    mbar_init(bars + (stages + s) * 8, consumer_warps);
  }
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One ring of shared-memory buffers with a full and an empty barrier each (init_ring's layout, as
// init_ring(bars, depth, ...) made it): ring position n is buffer n % depth, and its use number n / depth
// completes a phase of parity (n / depth) & 1.
struct Ring {
  uint32_t bars;
  int depth;
  __device__ __forceinline__ uint32_t full(int n) const { return bars + (n % depth) * 8; }
  __device__ __forceinline__ uint32_t empty(int n) const { return bars + (depth + n % depth) * 8; }
  __device__ __forceinline__ uint32_t phase(int n) const { return (n / depth) & 1; }
};

// A block of a producer warpgroup and consumer warpgroups: after init() (one thread: the
// barriers) and a block-wide synchronization, threads 0-127 give registers back (down to
// ProducerRegs) and thread 0 calls produce(); the other warpgroups take them (up to ConsumerRegs)
// and call consume(c), c = 0, 1, ... With two consumer warpgroups, 40 / 232 and 24 / 240 each
// fill the 64K registers of an SM.
template <int ProducerRegs = 40, int ConsumerRegs = 232, class Init, class Produce, class Consume>
__device__ __forceinline__ void split_warpgroups(Init&& init, Produce&& produce, Consume&& consume) {
  static_assert(ProducerRegs % 8 == 0 && ConsumerRegs % 8 == 0, "setmaxnreg takes multiples of 8");
  if (threadIdx.x == 0) init();
  __syncthreads();
  if (threadIdx.x < 128) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(ProducerRegs) : "memory");
    if (threadIdx.x == 0) produce();
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(ConsumerRegs) : "memory");
    consume(static_cast<int>(threadIdx.x / 128) - 1);
  }
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// One try at the phase with this parity: whether it has completed. Suspended, the try asks the
// hardware to suspend the thread until the phase completes (a hint of 10 ms; the phase's
// completion wakes it), where a plain try gives up after a short time of the hardware's choosing.
template <bool Suspended>
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  if constexpr (Suspended)
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n selp.u32 %0, 1, "
        "0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity), "r"(10000000u)
        : "memory");
  else
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, "
        "p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  return done != 0;
}
// Waits until the phase with this parity has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  while (!mbar_try_wait<false>(bar, parity)) {
  }
}
// mbar_wait for a thread that has nothing else to do meanwhile (a producer), suspended between
// tries: the attention producer's plain tries, about 240 a wait, took 10% of the kernel's issue
// slots on the scheduler it shares with consumer warps (Nsight Compute, docs/benchmarks.md,
// 2026-12-06).
__device__ __forceinline__ void mbar_wait_suspended(uint32_t bar, uint32_t parity) {
  while (!mbar_try_wait<true>(bar, parity)) {
  }
}

// Brings `map` (a __grid_constant__ parameter) into the TMA unit's descriptor cache, so that a
// block's first copy does not also wait for the descriptor's fetch (CUTLASS's kernels do this at
// their start). Call once per map, before the first copy that reads it.
__device__ __forceinline__ void prefetch_tensormap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Box (x = column, y = row) of `map` into shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, int x, int y, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}

// ---- device: clusters (a pair of blocks sharing an operand) -----------------------------------

// This block's rank in its thread block cluster.
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}
// An arrive on the barrier at offset `bar` of block `rank`'s shared memory in this cluster, with
// the default release at the block's scope, as CUTLASS's ClusterBarrier: it says only that this
// block's reads of a stage are done (its wgmma groups have completed). Release at the cluster's
// scope fenced every arrive (ERRBAR, MEMBAR): the multicast form took 48 us at 64 x 4096 x 4096,
// where the whole-tile form takes 15.
__device__ __forceinline__ void mbar_arrive_remote(uint32_t bar, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
// Box (x = column, y = row) of `map` into offset `dst` of the shared memory of every block of the
// cluster in `mask`, each completing the bytes it receives on its own barrier at offset `bar`.
__device__ __forceinline__ void tma_load_multicast(uint32_t dst, const CUtensorMap* map, int x, int y,
                                                   uint32_t bar, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], "
      "[%1, "
      "{%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar), "h"(mask)
      : "memory");
}
// Every thread of every block of the cluster: what each did to shared memory before (barrier
// inits, arrivals, the copies its barriers saw complete) is seen by all after.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
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

// wgmma with both operands from shared memory: KIND names k and the types, TAIL the immediates
// after scale-d, scale-a and scale-b (the transposes, which 16-bit types take and TF32 does not).
#define AK_WGMMA_SS(N, REGS, A, B, SCALE, KIND, TAIL)                                \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %" #SCALE                         \
               ", 0;\n"                                                              \
               "wgmma.mma_async.sync.aligned.m64n" #N KIND " {" AK_WGMMA_REGS_##REGS \
               "}, %" #A ", %" #B ", p, 1, 1" TAIL ";\n}\n"                          \
               : AK_WGMMA_OUTS_##REGS(d)                                             \
               : "l"(a), "l"(b), "r"(1))
#define AK_WGMMA(N, REGS, A, B, SCALE, TYPE, TRANS_B) \
  AK_WGMMA_SS(N, REGS, A, B, SCALE, "k16.f32." TYPE "." TYPE, ", 0, " #TRANS_B)

// d (64 x N per warpgroup, fp32) += A (64 x 16 from desc a) * B (16 x N from desc b).
// The four 16-bit forms of one width: fp16 or bf16, B transposed or not.
#define AK_WGMMA_16BIT(N, REGS, A, B, SCALE)                                    \
  do {                                                                          \
    if constexpr (kHalf && TransB) AK_WGMMA(N, REGS, A, B, SCALE, "f16", 1);    \
    if constexpr (kHalf && !TransB) AK_WGMMA(N, REGS, A, B, SCALE, "f16", 0);   \
    if constexpr (!kHalf && TransB) AK_WGMMA(N, REGS, A, B, SCALE, "bf16", 1);  \
    if constexpr (!kHalf && !TransB) AK_WGMMA(N, REGS, A, B, SCALE, "bf16", 0); \
  } while (0)

template <typename T, int N, bool TransB>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], uint64_t a, uint64_t b) {
  constexpr bool kHalf = std::is_same_v<T, __half>;
  static_assert(
      N == 32 || N == 64 || N == 96 || N == 112 || N == 128 || N == 176 || N == 192 || N == 224 || N == 256,
      "wgmma tiles of 32, 64, 96, 112, 128, 176, 192, 224 or 256 columns");
  if constexpr (N == 32) AK_WGMMA_16BIT(32, 16, 16, 17, 18);
  if constexpr (N == 64) AK_WGMMA_16BIT(64, 32, 32, 33, 34);
  if constexpr (N == 96) AK_WGMMA_16BIT(96, 48, 48, 49, 50);
  if constexpr (N == 112) AK_WGMMA_16BIT(112, 56, 56, 57, 58);
  if constexpr (N == 128) AK_WGMMA_16BIT(128, 64, 64, 65, 66);
  if constexpr (N == 176) AK_WGMMA_16BIT(176, 88, 88, 89, 90);
  if constexpr (N == 192) AK_WGMMA_16BIT(192, 96, 96, 97, 98);
  if constexpr (N == 224) AK_WGMMA_16BIT(224, 112, 112, 113, 114);
  if constexpr (N == 256) AK_WGMMA_16BIT(256, 128, 128, 129, 130);
}
#undef AK_WGMMA_16BIT

// d (64 x 128 per warpgroup, fp32) += A (64 x 8 from desc a) * B (8 x 128 from desc b), both TF32
// and K-major (wgmma transposes only 16-bit operands).
__device__ __forceinline__ void wgmma_tf32(float (&d)[64], uint64_t a, uint64_t b) {
  AK_WGMMA_SS(128, 64, 64, 65, 66, "k8.f32.tf32.tf32", "");
}
#undef AK_WGMMA
#undef AK_WGMMA_SS

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

}  // namespace sm90
}  // namespace ak_gemm
