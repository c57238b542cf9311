// matmul, CUDA: C[i, j] = sum_k A[i, k] * B[k, j], fp32 accumulation, C rounded once.
// Inputs A[M, K], B[K, N] (row-major, inner strides 1, row strides free; or B the transposed
// view of an [N, K] buffer, a Linear's weight: strides 1 and ldb >= K, problem param b_nk = 1);
// output C[M, N] of A's dtype; no scalars. Every variant below takes both layouts of B (fp32's
// [N, K] through the simt tile of cuda_gemm_simt.cuh, without split-K). fp16, bf16 and fp32
// (fp32 keeps fp32's accuracy: FFMA, or three TF32 products of split operands, never one plain
// TF32 product), any M, N, K >= 1. Machinery in include/autokernel/cuda_gemm.cuh (fp16/bf16),
// cuda_gemm_sm90.cuh (wgmma), cuda_gemm_tf32x3.cuh (fp32 on tensor cores) and cuda_gemm_fp32.cuh
// (fp32 FFMA).
//
// Variants, picked per call:
//   mma     fp16/bf16: one BLOCK_M x BLOCK_N tile of C per block, WARPS_M x WARPS_N warps, each
//           a (BLOCK_M / WARPS_M) x (BLOCK_N / WARPS_N) tile of mma.sync.m16n8k16; A and B tiles
//           of BLOCK_K go through XOR-swizzled shared memory, STAGES deep, by cp.async with
//           zero-filled chunks past the edges. Needs rows of A and B 16-byte aligned and K and N
//           multiples of 8 elements.
//   mma, element loads
//           the same with the tiles read element by element (odd K or N, misaligned views).
//   wgmma   fp16/bf16 when WGMMA = 1 and the bases and row strides are 16-byte aligned (any
//           M, N, K): Hopper warpgroup MMA on a persistent grid of one block per SM, 128 x
//           BLOCK_N x 64 tiles brought in by TMA, STAGES deep, a producer warpgroup and two
//           consumer warpgroups (include/autokernel/cuda_gemm_sm90.cuh). Other calls take the
//           mma variants with their default tiles.
//   wgmma, split-K
//           the same where the output's tiles would leave more than half the SMs idle (decode:
//           M = 1..128 against N of a few thousand): each tile's K cut into contiguous runs of
//           at least 4 k-tiles, one per block, into a float workspace, then added in split order
//           and rounded once (include/autokernel/cuda_gemm_splits.cuh).
//   wgmma, split tails
//           the same where a last round of tiles fits the grid twice (SPLIT_TAIL = 1): each of
//           its tiles as two pieces along K on neighbouring blocks, the lower one's fp32 sums
//           added by the upper one before its epilogue (include/autokernel/split_tail_plan.h).
//   wgmma, TMA store
//           the same, C written through a shared-memory staging tile per consumer warpgroup
//           and stored by TMA while the consumers start their next tile (TMA_STORE = 1; C's
//           base and row stride 16-byte aligned, else the stores go from registers).
//   wgmma, clusters of two
//           the same in clusters of two blocks along N (CLUSTER = 2): the pair's tiles share
//           their A tile, each block bringing in 64 of its rows by TMA multicast into both;
//           where no cluster of two fits, the mma variants.
//   skinny  fp16/bf16 when SKINNY = 1 (the default) and M <= SKINNY_MAX_M (8 for B[K, N];
//           decode), rows 16-byte aligned, K (and for B[K, N] N) a multiple of 8: memory-bound,
//           B read once in 16-byte loads. B a Linear's [N, K]: on the tensor cores, up to 16 rows
//           a block per 16 columns of C (mma.m16n8k16 from registers, no shared memory), 17 to
//           64 one block an SM per 32, 64 or 128 columns of C through a cp.async ring up to 8
//           stages deep (SKINNY_STAGED), or up to SKINNY_SIMT_MAX_M rows on CUDA
//           cores, warps owning a few columns of C; B[K, N]: on CUDA cores, lanes owning 8 columns
//           each. Split along K when the columns give too few blocks
//           (include/autokernel/cuda_gemm_skinny.cuh). Other calls take the variants above.
//   tf32x3  fp32 on Hopper when TF32X3 = 1 and the output gives at least half a wave of 128 x
//           128 tiles (K >= 32, the workspace within 1 GiB): A and B split into TF32 halves
//           (x = hi + lo) in a workspace, B transposed to [N, K], then lo_a hi_b + hi_a lo_b +
//           hi_a hi_b on wgmma (tf32, k8) in one fp32 accumulator; the error is fp32's (2^-22
//           of each product dropped). include/autokernel/cuda_gemm_tf32x3.cuh.
//   simt    fp32, N > 1 and M > 1: 128 x 128 x 16 tiles, 8 x 8 outputs per thread, FFMA, two
//           shared buffers; float4 loads and stores when rows are 16-byte aligned and K and N
//           are multiples of 4, element loads otherwise.
//   matvec  fp32, N == 1: memory-bound, a warp per 4 rows of A (float4 loads when A's rows and
//           B are 16-byte aligned, B contiguous and K a multiple of 4).
//   vecmat  fp32, M == 1 (N > 1): memory-bound, a block per 128 columns of B (32 unaligned).
// Blocks walk the tiles in groups of 8 tile rows so that a wave shares A and B in L2.
// Split-K never uses atomics: a split's partial sums go to a workspace and a second kernel adds
// them in split order, so repeated runs are bitwise equal. fp16/bf16 split on the wgmma path
// only (above); the mma variants' every output is one thread's fixed-order sum. fp32 splits K into
// contiguous chunks (blockIdx.y) when the output alone gives few blocks (simt: no more tiles
// than SMs, split up to one wave of 2 blocks per SM; matvec, vecmat: at most 4 blocks per SM,
// split up to 8), each split keeping at least 128 / 2048 / 64 elements of K (simt / matvec /
// vecmat); and whenever K is long (simt over 32768, matvec over 65536, vecmat over 16384), which
// keeps each fp32 chain short: a single chain over K = 1M misses fp32's 1e-4 tolerance. The splits' partial
// sums go to a workspace from cudaMallocAsync on the call's stream and a second kernel adds them in split
// order. No atomics: repeated runs are bitwise equal.
//
// Tuning parameters (-D definitions; the defaults below let the file compile alone; fp32 ignores
// all but SPLIT_K and TF32X3, fp16/bf16 ignore TF32X3):
//   BLOCK_M, BLOCK_N  output tile of a block. BLOCK_N = 0 (wgmma only): picked per call, 192
//                     wide with 4 stages or 256 wide with 3 (STAGES is ignored), whichever
//                     needs fewer tile columns over whole waves, 224 with 3 where its tiles
//                     take more than one wave and save 3% (4096 x 2560: 8% faster than 256),
//                     64 wide with 5 where those would idle more than half the SMs, else 112
//                     with 5 where its waves cost less (4096 x 896: 11% faster than 256)
//                     (sm90::pick_tile_width, include/autokernel/tile_width_plan.h)
//   BLOCK_K           k-depth of a shared-memory stage
//   WARPS_M, WARPS_N  warps along M and N
//   STAGES            shared-memory stages (STAGES - 1 tiles in flight); 6 and 8 for wgmma only
//                     (cuBLAS runs 8 at 4096 x 256 x 768 with tiles of 64 x 128 outputs,
//                     7 at 4096 x 896 x 896; docs/benchmarks.md, twenty-sixth and forty-first sessions)
//   WGMMA             1: the wgmma variant, whose tile is BLOCK_M x BLOCK_N x BLOCK_K = 128 x
//                     (64, 112, 128, 192, 224 or 256) x 64 (WARPS_* stay at 2 x 4 there: the
//                     kernel fixes its own); 192 makes N = 768 a single wave of 128 x 192 tiles
//                     at M = 4096; 112 is cuBLAS's tile at 4096 x 896 x 896 (its 112x128 nvjet,
//                     7 stages: 256 tiles on 132 SMs, two a block, one's epilogue under the
//                     other's main loop; docs/benchmarks.md, forty-first session)
//   TMA_STORE         wgmma only, 1: the epilogue through shared memory and TMA (the staging
//                     tiles, 2 x 64 x BLOCK_N elements, must fit beside the stages); 0: from
//                     registers
//   CLUSTER           wgmma only, 2: blocks in clusters of two along N, each bringing in half
//                     of the A tile both use, which TMA multicasts into both (L2 reads of A
//                     halved, as cuBLAS's 1x2 clusters at 4096 x 768 x 768 and 4096 x 256 x 768,
//                     docs/benchmarks.md, twenty-sixth session); no split-K. 1 (the default):
//                     one block per tile. Not a @tune: it passed every stage on the H100 and
//                     was 5-11% slower than one block per tile at every shape timed, 4096 x
//                     768 x 768 to 4096^3 (docs/benchmarks.md, forty-first session)
//   SPLIT_TAIL        wgmma only (one block a tile, whole tiles), 1: where the persistent grid's
//                     last round of tiles fits the grid twice, each of its tiles runs as two pieces
//                     along K on neighbouring blocks, the lower one's sums added by the upper one
//                     before it stores the tile (include/autokernel/split_tail_plan.h), and
//                     BLOCK_N = 0 counts such a round as half when it picks the width (4096 x 2560
//                     x 4096: 256 wide, two rounds and a halved third, against 224's three rounds,
//                     whose best was 0.96x cuBLAS). 0 (the default): whole tiles only, until it has
//                     been timed on a GPU. Searched only where K gives the pieces their 4 k-tiles
//                     each (K > 448) and M > 64 (the skinny forms take fewer rows)
//   SPLIT_K           fp32 and the wgmma variant: 0 chooses the number of K splits per call
//                     (above); n > 0 takes n whatever the shape (fewer when K is too short to
//                     give each split a tile of K, 16 elements for fp32 and 64 for wgmma, or
//                     the workspace would pass 256 MiB); 1: no split.
//   SKINNY            fp16/bf16, 1: the skinny variant for calls it takes (M <= SKINNY_MAX_M), before
//                     wgmma; SPLIT_K sets its splits as it does wgmma's. 32, 64, 128: the same, with
//                     that many rows of W per block in the shared-memory form (SKINNY_STAGED; 1
//                     chooses). 0 is searched only where M <= 64, and 32 to 128 only where the
//                     shared-memory form takes the call, with the default tiles (the last three
//                     requirements below): elsewhere the values run the same code
//   SKINNY_SIMT_MAX_M the largest M that the skinny variant takes on CUDA cores with B as
//                     [N, K]; above it, the tensor cores. 0: on the H100 the tensor cores were
//                     as fast or faster from M = 1 on 4096 x 4096 (16.7 against 17.9 us; 4%
//                     slower at 1 x 11008 x 4096). Not a @tune: a crossover, measured.
//   SKINNY_STAGED     1 (the default): the skinny variant takes 17 to SKINNY_MAX_M rows (B as
//                     [N, K]) through shared memory, one block an SM whose 8 warps each take a
//                     slice of every stage's k over all the block's rows of W, the slices' sums
//                     added in shared memory at the end (include/autokernel/cuda_gemm_skinny_staged.cuh);
//                     0: the register form, which reads A from L2 M / 16 times W's bytes. On the
//                     H200 (docs/benchmarks.md, 2026-11-28, twenty-sixth session) it beats cuBLAS
//                     up to 32 rows against 4096 columns (32 x 4096 x 4096: 14.0 against 16.4 us)
//                     and the earlier two-blocks-an-SM form at every measured shape. Not a @tune.
//                     Its rows of W per block (SKINNY = 1): the fewest of 32, 64, 128 that leave no
//                     more blocks than SMs; past 128 at more than 32 rows of A the call goes to the
//                     wgmma split-K.
//   SKINNY_CLUSTER    1: the shared-memory form may cut K over the blocks of a thread block
//                     cluster (Hopper; up to 8 blocks sharing one tile of W), their sums added
//                     through distributed shared memory in block order (no workspace, no second
//                     kernel), at the height (32 to 256 rows of W) and cluster size that bring the
//                     fewest bytes into each block with every block in one wave (skinny_plan.h).
//                     0 (the default): timed on the H200 it won nowhere (64 x 4096 x 4096: 18.9
//                     against 18.4 us; 64 x 11008 x 4096: 46.8 against 39.4; forced heights no
//                     better), since what bounds these shapes is the warps' issue, not an SM's
//                     intake (docs/benchmarks.md, twenty-eighth session). Searched where the
//                     shared-memory form may take the call, with the default tiles.
//   SKINNY_WGMMA      1 (the default): with B as [N, K], the call goes first to the wgmma form
//                     (cuda_gemm_skinny_wgmma.cuh: A's M rows against tiles of 32 to 128 rows of
//                     W, TMA into a ring of about 192 KB) where the H200 measured it faster: 33 to
//                     64 rows of A, whole tiles of the narrowest width up to SKINNY_WIDEST that
//                     makes between half a wave and one, no K split (launch_skinny_wgmma), and
//                     SKINNY = 1, SKINNY_STAGED = 1, SKINNY_CLUSTER = 0. 32, 64, 96, 112 or 128
//                     force that width from 17 rows, split-K as SPLIT_K says; 0 never. 64 x 4096 x
//                     4096 15.4 against 18.2 us, 64 x 8192 x 4096 22.8 against 26.9 (cuBLAS 14.4,
//                     21.8). Not a @tune.
//   SKINNY_WIDEST     the widest tile SKINNY_WGMMA = 1 chooses. 128 (the default): where tiles
//                     of 64 rows of W would make more than a wave, one wave of tiles of 96, 112 or
//                     128 rows (64 x 11008 x 4096: 115 tiles of 96), each block bringing in all of A
//                     beside its tile and none cut between blocks. On the H100 (docs/benchmarks.md,
//                     thirty-fourth session) 64 x 11008 x 4096 37.2 against 40.2 us with stream-K at
//                     64 (cuBLAS 35.7), 64 x 14336 x 4096 44.7 against 50.0 (45.3), 33 and 48 rows
//                     of 11008 x 4096 36.9 and 37.3 against 39.4 and 39.6 (38.6, 38.1). 64: the
//                     earlier rule, stream-K there (SKINNY_STREAM_K). Not a @tune.
//   SKINNY_STREAM_K   1 (the default): where SKINNY_WGMMA = 1 chooses, no width up to SKINNY_WIDEST
//                     makes one wave, and 64-row tiles make between one and two waves, stream-K at
//                     64 rows of W a tile (an equal run of (tile, k-tile) iterations an SM, tiles cut between
//                     blocks finished in-kernel: cuda_gemm_stream_k.cuh; on the H200 64 x 11008 x 4096 32.6
//                     against 35.6 us with whole tiles, cuBLAS 26.8; where whole tiles make one wave it costs
//                     about 5 us). 64 or 128 force stream-K at that width for any M up to 64 whenever
//                     SKINNY_WGMMA != 0; 0 never (whole tiles of 64 up to one and a half waves instead). Not
//                     a @tune.
//   SKINNY_MULTICAST  1: where the wgmma form takes whole tiles (chosen or forced by SKINNY_WGMMA),
//                     clusters of two blocks along W's tiles share A: each brings half of A's rows
//                     from L2 and TMA multicasts them to both (cuda_gemm_skinny_multicast.cuh), as
//                     cuBLAS's kernels for these shapes do; no K split. 0 (the default): each
//                     block reads all of A. On the H200 no faster (64 x 4096 x 4096 18.1 against
//                     15.7 us; docs/benchmarks.md, thirtieth session), nor on the H100 at 64 x 4096
//                     x 11008, where A is 1.4 MB (42.9 / 40.6 against 41.8 / 38.9 us fp16 / bf16;
//                     forty-first session). Not a @tune.
//   SKINNY_MAX_M      the largest M the skinny variant takes (B as [N, K]: up to 64; B[K, N]: 8).
//                     64 with the staged form (64 x 4096 x 4096: 18.4 us against split-K's 29.4
//                     on the H200); with the register form it lost to split-K above 32 rows.
//                     Not a @tune.
//   KEEP_WORKSPACE    1 (the default): the split-K and stream-K workspaces up to 16 MB are kept
//                     per stream between calls (cuda_kernel.cuh's KeptWorkspaces; a graph's
//                     capture still takes its own from the pool), so a call enqueues no pool
//                     alloc and free: on the H200 64 x 11008 x 4096 31.9 against 32.6 us, 64 x
//                     14336 x 4096 38.0 against 39.1, no change at one wave or split-K (thirty-
//                     first session). 0: from the pool around each call. Not a @tune.
//   TF32X3            fp32 only: 1 takes the tf32x3 variant where it applies; 0 FFMA only.
//                     Not a @tune: fp16/bf16 searches would time it for nothing.
//
// @tune BLOCK_M: 64, 128, 256
// @tune BLOCK_N: 0, 64, 112, 128, 192, 224, 256
// @tune BLOCK_K: 32, 64
// @tune WARPS_M: 1, 2, 4
// @tune WARPS_N: 1, 2, 4
// @tune STAGES: 2, 3, 4, 5, 6, 8
// @tune WGMMA: 0, 1
// @tune TMA_STORE: 0, 1
// @tune SPLIT_K: 0, 1, 2, 4
// @tune SKINNY: 0, 1, 32, 64, 128
// @require BLOCK_M % (WARPS_M * 16) == 0 && (BLOCK_N % (WARPS_N * 16) == 0 || WGMMA == 1)
// @require WARPS_M * WARPS_N >= 4
// @require BLOCK_M / WARPS_M <= 64 && BLOCK_N / WARPS_N <= 64
// @require WARPS_M * WARPS_N * ((BLOCK_M / WARPS_M) * (BLOCK_N / WARPS_N) / 32 + 72) <= 2048
// @require (BLOCK_M / WARPS_M) * (BLOCK_N / WARPS_N) <= 4096
// @require STAGES * (BLOCK_M + BLOCK_N) * BLOCK_K * 2 <= 226 * 1024
// @require WGMMA == 0 || (BLOCK_M == 128 && BLOCK_K == 64 && STAGES >= 3)
// @require (BLOCK_N != 112 && BLOCK_N != 192 && BLOCK_N != 224) || WGMMA == 1
// @require STAGES <= 5 || WGMMA == 1
// @require BLOCK_N != 0 || (WGMMA == 1 && STAGES == 3)
// @require TMA_STORE == 0 || (WGMMA == 1 && STAGES * (128 + BLOCK_N) * 128 + BLOCK_N * 256 <= 226 * 1024)
// @require WGMMA == 0 || (WARPS_M == 2 && WARPS_N == 4)
// @require SPLIT_K == 0 || WGMMA == 1 || SKINNY != 0
// @require SKINNY != 0 || M <= 64
// @require SKINNY <= 1 || (b_nk == 1 && M > 16 && M <= 64)
// @require SKINNY <= 1 || (BLOCK_M == 128 && BLOCK_N == 0 && WGMMA == 1 && STAGES == 3 && TMA_STORE == 1)
// @tune SPLIT_TAIL: 0, 1
// @require SPLIT_TAIL == 0 || (WGMMA == 1 && SPLIT_K <= 1 && M > 64 && K > 448)
// @tune SKINNY_CLUSTER: 0, 1
// @require SKINNY_CLUSTER == 0 || (b_nk == 1 && M > 16 && M <= 64 && SKINNY != 0 && SPLIT_K == 0)
// @require SKINNY_CLUSTER == 0 || (BLOCK_M == 128 && BLOCK_N == 0 && TMA_STORE == 1)
#include <optional>

// Read by the workspace helpers (cuda_kernel.cuh), so defined before they are included.
#ifndef KEEP_WORKSPACE
#define KEEP_WORKSPACE 1
#endif

#include "autokernel/cuda_gemm.cuh"
#include "autokernel/cuda_gemm_fp32.cuh"
#include "autokernel/cuda_gemm_simt.cuh"
#include "autokernel/cuda_gemm_skinny.cuh"
#include "autokernel/cuda_gemm_skinny_wgmma_launch.cuh"
#include "autokernel/cuda_gemm_sm90_launch.cuh"
#include "autokernel/cuda_gemm_tf32x3.cuh"

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 0
#endif
#ifndef BLOCK_K
#define BLOCK_K 64
#endif
#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 4
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef WGMMA
#define WGMMA 1
#endif
#ifndef TMA_STORE
#define TMA_STORE 1
#endif
#ifndef SPLIT_K
#define SPLIT_K 0
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef SPLIT_TAIL
#define SPLIT_TAIL 0
#endif
#ifndef TF32X3
#define TF32X3 1
#endif
#ifndef SKINNY
#define SKINNY 1
#endif
#ifndef SKINNY_SIMT_MAX_M
#define SKINNY_SIMT_MAX_M 0
#endif
#ifndef SKINNY_MAX_M
#define SKINNY_MAX_M 64
#endif
#ifndef SKINNY_STAGED
#define SKINNY_STAGED 1
#endif
#ifndef SKINNY_WGMMA
#define SKINNY_WGMMA 1
#endif
#ifndef SKINNY_STREAM_K
#define SKINNY_STREAM_K 1
#endif
#ifndef SKINNY_MULTICAST
#define SKINNY_MULTICAST 0
#endif
#ifndef SKINNY_WIDEST
#define SKINNY_WIDEST 128
#endif
#ifndef SKINNY_CLUSTER
#define SKINNY_CLUSTER 0
#endif

namespace {

using namespace ak_gemm;

// With WGMMA the tuning parameters shape the wgmma tile; calls it cannot take get these tiles.
using Tile = std::conditional_t<WGMMA != 0, MmaTile<128, 128, 32, 2, 4, 4>,
                                MmaTile<BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES>>;

bool is_matrix(const ak_tensor& t, int64_t rows, int64_t cols) {
  if (t.ndim != 2 || t.shape[0] != rows || t.shape[1] != cols) return false;
  // A single column has no inner stride to speak of.
  return (cols == 1 || t.strides[1] == 1) && t.strides[0] >= 0;
}

// B[K, N] as a view of a contiguous [N, K] buffer (a Linear's weight, row stride strides[1]).
bool is_transposed_matrix(const ak_tensor& t, int64_t rows, int64_t cols) {
  if (t.ndim != 2 || t.shape[0] != rows || t.shape[1] != cols) return false;
  return (rows == 1 || t.strides[0] == 1) && t.strides[1] >= rows;
}

// How B is stored, when the call's shapes and strides fit at all.
std::optional<BLayout> layout_of(const ak_call* call) {
  const ak_tensor& a = call->inputs[0];
  const ak_tensor& b = call->inputs[1];
  const ak_tensor& c = call->outputs[0];
  if (a.ndim != 2 || b.ndim != 2) return std::nullopt;
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (m < 1 || n < 1 || k < 1 || m > INT_MAX - 512 || n > INT_MAX - 512 || k > INT_MAX - 512)
    return std::nullopt;
  if (!is_matrix(a, m, k) || !is_matrix(c, m, n)) return std::nullopt;
  if (is_matrix(b, k, n)) return BLayout::KN;
  if (is_transposed_matrix(b, k, n)) return BLayout::NK;
  return std::nullopt;
}

static_assert(BLOCK_N != 0 || WGMMA != 0, "BLOCK_N = 0 (picked per call) is a wgmma tile width");

template <typename T, BLayout L>
int launch_wgmma(const GemmProblem<T, 1>& p, const StoreC<T>& store, cudaStream_t stream) {
  constexpr bool kStaged = TMA_STORE != 0;
  if constexpr (BLOCK_N == 0) {
    return sm90::launch_wgmma_gemm_auto_width<T, L, kStaged, CLUSTER>(p, store, stream, SPLIT_K,
                                                                      SPLIT_TAIL != 0);
  } else {
    return sm90::launch_wgmma_gemm<T, L, 1, BLOCK_N, STAGES, kStaged, CLUSTER>(p, store, stream, SPLIT_K,
                                                                               SPLIT_TAIL != 0);
  }
}

// B stored as L says: KN, B[k][n] at b[k * ldb + n]; NK, at b[n * ldb + k].
template <typename T, BLayout L>
int launch(const ak_call* call) {
  const ak_tensor& a = call->inputs[0];
  const ak_tensor& b = call->inputs[1];
  const ak_tensor& c = call->outputs[0];
  const int m = static_cast<int>(a.shape[0]), k = static_cast<int>(a.shape[1]),
            n = static_cast<int>(b.shape[1]);
  const int64_t ldb = L == BLayout::NK ? b.strides[1] : b.strides[0];
  const GemmProblem<T, 1> p{
      static_cast<const T*>(a.data), {static_cast<const T*>(b.data)}, a.strides[0], ldb, m, n, k};
  const cudaStream_t stream = ak_cuda::stream_of(call);
  if constexpr (sizeof(T) == 4) {
    if constexpr (TF32X3 != 0) {
      if (tf32x3::worth_it<L>(p)) {
        const int rc =
            tf32x3::launch_gemm<L>(p, make_store(static_cast<float*>(c.data), c.strides[0], m, n), stream);
        if (rc != AK_ERR_UNSUPPORTED) return rc;
      }
    }
    if constexpr (L == BLayout::NK)
      return launch_simt_gemm<BLayout::NK, 1>(p, make_store(static_cast<float*>(c.data), c.strides[0], m, n),
                                              stream);
    else
      return fp32::launch_matmul(p, static_cast<float*>(c.data), c.strides[0], SPLIT_K, stream);
  } else {
    const StoreC<T> store = make_store(static_cast<T*>(c.data), c.strides[0], m, n);
    // A forced height (SKINNY > 1) or the cluster split asks for the shared-memory form, and
    // SKINNY_STAGED = 0 for the register form: those keep the call.
    if constexpr (SKINNY != 0 && L == BLayout::NK &&
                  (SKINNY_WGMMA > 1 || (SKINNY_WGMMA == 1 && SKINNY_STREAM_K > 1) ||
                   (SKINNY_WGMMA == 1 && SKINNY == 1 && SKINNY_CLUSTER == 0 && SKINNY_STAGED != 0))) {
      const int rc = m > SKINNY_MAX_M ? AK_ERR_UNSUPPORTED
                                      : skinny_wgmma::launch_skinny_wgmma(
                                            p, store, stream, SPLIT_K, SKINNY_WGMMA == 1 ? 0 : SKINNY_WGMMA,
                                            SKINNY_STREAM_K, SKINNY_MULTICAST, SKINNY_WIDEST);
      if (rc != AK_ERR_UNSUPPORTED) return rc;
    }
    if constexpr (SKINNY != 0) {
      const int rc = skinny::launch_skinny_gemm<T, L, SKINNY_CLUSTER != 0>(
          p, static_cast<T*>(c.data), c.strides[0], stream, SPLIT_K,
          {SKINNY_SIMT_MAX_M, SKINNY_MAX_M, SKINNY_STAGED != 0, SKINNY > 1 ? SKINNY : 0});
      if (rc != AK_ERR_UNSUPPORTED) return rc;
    }
    if constexpr (WGMMA != 0) {
      if (sm90::wgmma_eligible(p)) {
        const int rc = launch_wgmma<T, L>(p, store, stream);
        if (rc != AK_ERR_UNSUPPORTED) return rc;
      }
    }
    return launch_mma_gemm<T, L, 1, Tile>(p, store, stream);
  }
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (call == nullptr || call->abi_version != AK_ABI_VERSION) return AK_ERR_UNSUPPORTED;
  if (call->n_inputs != 2 || call->n_outputs != 1) return AK_ERR_UNSUPPORTED;
  const int32_t dtype = call->inputs[0].dtype;
  const std::optional<BLayout> layout = layout_of(call);
  if (call->inputs[1].dtype != dtype || call->outputs[0].dtype != dtype || !layout) return AK_ERR_UNSUPPORTED;
  return ak_cuda::dispatch_float_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return *layout == BLayout::NK ? launch<T, BLayout::NK>(call) : launch<T, BLayout::KN>(call);
  });
}
