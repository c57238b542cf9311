// The harness on the GPU through the real CLI: the CUDA rmsnorm starter passes, a kernel that
// works outside call->stream is caught, an illegal address is a CRASH that the engine survives.
#include "cuda_harness.h"

namespace ak::test {
namespace {

TEST_F(CudaHarness, RmsnormStarterPassesEveryStage) {
  const auto j = bench(std::string(AK_SOURCE_DIR) + "/kernels/cuda/rmsnorm.cu", "rmsnorm", "4096x4096");
  EXPECT_EQ(j.value("status", ""), "PASS") << j.dump(2);
  EXPECT_EQ(j["stages"].size(), 5u);
  EXPECT_GT(j["gbps"].get<double>(), 100.0);
}

// fp32 at its 1e-4 tolerance through the split-K paths: 4 output tiles over a long K (the GEMM
// splits K 66 ways on an H100), and one output column over K = 256K (the float4 matrix-vector
// kernel, split 64 ways). The stages add the rest: M == 1, N == 1 with odd sizes, small splits.
TEST_F(CudaHarness, MatmulFp32StarterPassesEveryStageWithSplitK) {
  for (const std::string shape : {"256x256x65536", "512x1x262144"}) {
    const auto j =
        bench(std::string(AK_SOURCE_DIR) + "/kernels/cuda/matmul.cu", "matmul", shape, {"--dtype", "fp32"});
    EXPECT_EQ(j.value("status", ""), "PASS") << shape << "\n" << j.dump(2);
  }
}

// The staged epilogue (shared memory, then TMA stores that clip at the edges) at every wgmma
// tile width, and the epilogue from registers, through every stage, on a shape whose M and N
// are not multiples of the tile.
TEST_F(CudaHarness, MatmulTmaStoreEpiloguePassesEveryStage) {
  for (const auto& [defines, dtype] : std::vector<std::pair<std::string, std::string>>{
           {"", "fp16"},  // the defaults: the width picked per call (64 here: 8 x 16 tiles)
           {"#define BLOCK_N 256\n#define STAGES 3", "bf16"},
           {"#define BLOCK_N 128\n#define STAGES 5", "bf16"},
           {"#define BLOCK_N 64", "fp16"},
           {"#define BLOCK_N 192\n#define STAGES 4", "bf16"},
           {"#define TMA_STORE 0\n#define BLOCK_N 256\n#define STAGES 4", "fp16"}}) {
    const auto j = bench(starter_with("matmul", defines), "matmul", "1000x1000x200", {"--dtype", dtype});
    EXPECT_EQ(j.value("status", ""), "PASS") << defines << "\n" << j.dump(2);
  }
}

// The defaults pick the tile width per call (sm90::pick_tile_width); on 132 SMs (H100, H200):
// 64 at 4096 x 256 (32 tiles of 256 would idle most SMs), 192 at 4096 x 768 (one wave of 128
// tiles), 256 at 2048 x 2048 (one wave of 128 tiles, where 192 takes two), 224 at 4096 x 2560
// (three waves of tiles 12% narrower than 256's; B as a Linear's weight, in bf16) and at 4096 x
// 2448 (B[K, N], whose narrow last slab TMA brings in 64 columns wide; the last tile's 208
// columns end inside that slab, clipped at C's edge). The 224-wide tiles first passed every
// stage at 4096 x 896 x 896 (b_nk, bf16) and 4096 x 880 x 256 (fp16) with 224 picked there
// (fortieth session), the same two paths. 112 with 5 stages at 4096 x 896 (two waves of 256
// tiles; B as a Linear's weight, bf16) and at 4096 x 880 (B[K, N], the last tile's 96 columns
// ending inside its narrow slab).
TEST_F(CudaHarness, MatmulDefaultsPassEveryStageAtEachWidthTheyPick) {
  expect_every_stage_passes(std::string(AK_SOURCE_DIR) + "/kernels/cuda/matmul.cu", "matmul",
                            {{"4096x256x768", "fp16"},
                             {"4096x768x256", "fp16"},
                             {"2048x2048x128", "fp16"},
                             {"4096x2560x256:b_nk=1", "bf16"},
                             {"4096x2448x256", "fp16"},
                             {"4096x896x256:b_nk=1", "bf16"},
                             {"4096x880x200", "fp16"}});
}

// The wgmma tiles in clusters of two along N sharing the A tile by TMA multicast (CLUSTER = 2):
// every stage passes (the sweep's and edges' shapes among them) at the widths the defaults pick
// (192 at 4096 x 768, 64 at 4096 x 256, 224 at 4096 x 2560), with B in both layouts and an odd
// number of tile columns, the last pair's second tile wholly past N (1000 x 960 at a forced 192:
// five columns), M and K off the tiles.
TEST_F(CudaHarness, MatmulClustersOfTwoPassEveryStage) {
  const std::string cluster = "#define CLUSTER 2\n#define SPLIT_K 1\n";
  expect_matmul_variants_pass({{cluster, "4096x768x768:b_nk=1", "fp16"},
                               {cluster, "4096x256x768:b_nk=1", "bf16"},
                               {cluster, "4096x2560x256", "fp16"},
                               {cluster + "#define BLOCK_N 192\n#define STAGES 4", "1000x960x200", "bf16"}});
}

// 112-wide wgmma tiles (cuBLAS's at 4096 x 896 x 896), 6 stages: every stage passes with B as a
// Linear's weight over 8 exact tile columns, and as B[K, N] with the last tile's 80 columns
// ending inside the narrow slab (its 64 columns brought in whole, the staging tile's last 48
// columns stored by the unswizzled map), M and K off the tiles.
TEST_F(CudaHarness, MatmulTilesOf112PassEveryStage) {
  const std::string tiles = "#define BLOCK_N 112\n#define STAGES 6\n";
  expect_matmul_variants_pass({{tiles, "4096x896x896:b_nk=1", "bf16"}, {tiles, "1000x976x200", "fp16"}});
}

// Split tails (SPLIT_TAIL = 1, split_tail_plan.h): on 132 SMs each shape's last round of tiles
// fits the grid twice and runs as helper and owner pieces along K. Every stage passes (the
// determinism stage among them: the owner adds in one order) at the width the split-aware defaults
// pick (256 at 4096 x 2560 and 4096 x 2448: 320 tiles, a last round of 56), with B in both
// layouts, an odd k-tile count (9: pieces of 5 and 4), M, N and K off the tiles, a last round
// of 4 (1000 x 4200 at 256) and the direct epilogue (TMA_STORE 0).
TEST_F(CudaHarness, MatmulSplitTailsPassEveryStage) {
  const std::string tail = "#define SPLIT_TAIL 1\n";
  expect_matmul_variants_pass(
      {{tail, "4096x2560x512:b_nk=1", "bf16"},
       {tail, "4096x2448x512", "fp16"},
       {tail + "#define BLOCK_N 128\n#define STAGES 4", "2048x2304x520", "fp16"},
       {tail + "#define BLOCK_N 256\n#define STAGES 3", "1000x4200x600:b_nk=1", "fp16"},
       {tail + "#define BLOCK_N 192\n#define STAGES 4\n#define TMA_STORE 0", "2048x2304x512:b_nk=1",
        "bf16"}});
}

// Decode shapes (M of 1 to 64 against a model's weights) on the wgmma tiles (SKINNY = 0; the
// defaults take M <= 16 to the skinny variant): the output's tiles fill under half the
// SMs, so the defaults cut K into splits (64 tiles of 64 columns, two splits each, on 132 SMs)
// whose partial sums a second kernel adds in order. Every stage passes (determinism among them:
// no atomics), with B in both layouts and four splits forced at BLOCK_N 128, and the defaults'
// splits beat one block per tile (H100: 29.6 against 35.3 us, 64.6 against 92.8; the forced four
// splits of 32 tiles read 29.4 against 28.1 us, so they are checked, not timed against it).
TEST_F(CudaHarness, MatmulSplitKPassesEveryStageAndBeatsOneSplitOnDecodeShapes) {
  struct Case {
    std::string defines, shape, dtype;
    bool faster;  // the splits must beat one split
  };
  for (const auto& [defines, shape, dtype, faster] :
       std::vector<Case>{{"#define SKINNY 0", "16x4096x4096:b_nk=1", "fp16", true},
                         {"#define SKINNY 0", "1x4096x11008", "bf16", true},
                         {"#define BLOCK_N 128\n#define STAGES 4\n#define SPLIT_K 4", "64x4096x4096:b_nk=1",
                          "bf16", false}}) {
    const auto split = bench(starter_with("matmul", defines), "matmul", shape, {"--dtype", dtype});
    ASSERT_EQ(split.value("status", ""), "PASS") << defines << " " << shape << "\n" << split.dump(2);
    if (!faster) continue;
    const auto one = bench(starter_with("matmul", defines + "\n#undef SPLIT_K\n#define SPLIT_K 1"), "matmul",
                           shape, {"--dtype", dtype});
    ASSERT_EQ(one.value("status", ""), "PASS") << defines << " " << shape << "\n" << one.dump(2);
    const double split_us = split["timing"]["median_us"], one_us = one["timing"]["median_us"];
    EXPECT_LT(split_us, 0.9 * one_us) << shape << ": split-K " << split_us << " us, one split " << one_us;
  }
}

// The skinny variant (SKINNY = 1): B read once, on CUDA cores up to SKINNY_SIMT_MAX_M rows and for
// B[K, N], on the tensor cores above (B as [N, K], cuda_gemm_skinny_mma.cuh). Every stage passes
// (their sweeps and edges give it small M against both layouts of B, and the calls it does not take
// go to the tiled variants), each path also at M = 1, with N and K off its tiles, and the register
// form (SKINNY_STAGED 0) with four to eight 8-column operands (M up to 64; the default takes those
// rows through shared memory, tested below); and on decode shapes it beats the wgmma split-K it
// replaces there (SKINNY 0), which reached 0.52-0.78x cuBLAS (H100, twentieth session). At
// 8 x 32000 x 4096 split-K already streams B near the copy ceiling: there skinny must only not lose.
TEST_F(CudaHarness, MatmulSkinnyPassesEveryStageAndBeatsSplitKOnDecodeShapes) {
  struct Case {
    std::string shape, dtype, defines;
    double most;  // of split-K's time; 0: every stage only
  };
  for (const auto& [shape, dtype, defines, most] :
       std::vector<Case>{{"1x4096x4096:b_nk=1", "fp16", "", 0.9},
                         {"1x4096x11008", "bf16", "", 0.9},
                         {"16x4096x4096:b_nk=1", "fp16", "", 0.9},
                         {"32x4096x4096:b_nk=1", "fp16", "", 0.9},
                         {"8x32000x4096:b_nk=1", "bf16", "", 1.0},
                         {"13x1000x1000:b_nk=1", "bf16", "", 0},
                         {"3x1003x1000:b_nk=1", "fp16", "", 0},
                         {"5x1000x1000", "bf16", "", 0},
                         {"1x1000x1000:b_nk=1", "fp16", "#define SKINNY_SIMT_MAX_M 0", 0},
                         {"27x2000x1032:b_nk=1", "bf16", "#define SKINNY_STAGED 0", 0},
                         {"50x2008x1032:b_nk=1", "bf16", "#define SKINNY_STAGED 0", 0},
                         {"61x2008x1032:b_nk=1", "fp16", "#define SKINNY_STAGED 0", 0}}) {
    const auto skinny =
        bench(starter_with("matmul", "#define SKINNY 1\n" + defines), "matmul", shape, {"--dtype", dtype});
    ASSERT_EQ(skinny.value("status", ""), "PASS") << shape << " " << defines << "\n" << skinny.dump(2);
    if (most == 0) continue;
    const auto tiled = bench(starter_with("matmul", "#define SKINNY 0"), "matmul", shape, {"--dtype", dtype});
    ASSERT_EQ(tiled.value("status", ""), "PASS") << shape << "\n" << tiled.dump(2);
    const double skinny_us = skinny["timing"]["median_us"], tiled_us = tiled["timing"]["median_us"];
    EXPECT_LT(skinny_us, most * tiled_us) << shape << ": skinny " << skinny_us << " us, split-K " << tiled_us;
  }
}

// The skinny variant's shared-memory form (SKINNY_STAGED = 1, the default for 17 to 64 rows of A:
// one block an SM, a ring of up to 8 stages, every warp on all of the block's rows of W, the warps'
// k slices added in shared memory): every stage at each block height, 32, 64 and 128 rows of W
// (SKINNY = 32, 64, 128; 1 chooses), with four and eight operands, N not a multiple of the block's rows, K
// not a multiple of the 128-k stages, and K cut into splits (17 x 4096 x 4096 at 64 rows: 64
// blocks, two splits on 132 SMs). SKINNY_WGMMA = 0: by default the wgmma form takes some of these
// calls (64 x 8192 x 4096).
TEST_F(CudaHarness, MatmulSkinnyStagedPassesEveryStage) {
  const std::string staged =
      "#define SKINNY_STAGED 1\n#define SKINNY_WGMMA 0\n#define SKINNY_MAX_M 64\n#define SKINNY ";
  expect_matmul_variants_pass({{staged + "1", "61x2008x1032:b_nk=1", "fp16"},
                               {staged + "1", "64x8192x4096:b_nk=1", "bf16"},
                               {staged + "32", "27x2000x1032:b_nk=1", "bf16"},
                               {staged + "32", "64x4096x4096:b_nk=1", "fp16"},
                               {staged + "64", "61x2008x1032:b_nk=1", "fp16"},
                               {staged + "64", "17x4096x4096:b_nk=1", "fp16"},
                               {staged + "128", "50x2008x1032:b_nk=1", "bf16"},
                               {staged + "128", "64x11008x4096:b_nk=1", "fp16"}});
}

// SKINNY_CLUSTER = 1: K cut over the blocks of a thread block cluster, their sums added through
// distributed shared memory. The plans on 132 SMs (plan_staged, tests/unit/test_skinny_plan.cpp,
// where every cluster fits): 64 x 4096 x 4096 at 256 rows in clusters of 8; 64 x 11008 x 4096 and
// 32 x 11008 x 4096 at 256 in clusters of 3; 64 x 32000 x 4096 at 256 unsplit; N not a multiple of
// the tile and K not of the runs (64 x 4000 x 4104: 128 rows in clusters of 4, the last block's run
// ending in part of a stage); four operands of A (32 x 4096 x 4096: 256 rows, clusters of 8); a
// forced height (48 rows of A at 64 rows of W: clusters of 2); a grouped-query key projection
// (17 x 1024 x 4096: 32 rows, clusters of 4).
TEST_F(CudaHarness, MatmulSkinnyClusterSplitPassesEveryStage) {
  const std::string cluster = "#define SKINNY_CLUSTER 1\n#define SKINNY ";
  expect_matmul_variants_pass({{cluster + "1", "64x4096x4096:b_nk=1", "fp16"},
                               {cluster + "1", "64x11008x4096:b_nk=1", "bf16"},
                               {cluster + "1", "32x11008x4096:b_nk=1", "fp16"},
                               {cluster + "1", "64x32000x4096:b_nk=1", "fp16"},
                               {cluster + "1", "64x4000x4104:b_nk=1", "bf16"},
                               {cluster + "1", "32x4096x4096:b_nk=1", "bf16"},
                               {cluster + "64", "48x4096x4096:b_nk=1", "fp16"},
                               {cluster + "1", "17x1024x4096:b_nk=1", "fp16"}});
}

// The wgmma form of the skinny products (SKINNY_WGMMA, cuda_gemm_skinny_wgmma.cuh), every tile
// width: one wave of tiles (64 x 4096 x 4096), several (64 x 11008 x 4096, persistent), split-K
// chosen (17 x 1024 x 4096: 32 tiles) and forced (SPLIT_K = 4), M short of the wgmma's 64 rows
// (A's box is M rows; the stage's rows past it are never written, their rows of C never stored),
// N not a multiple of the tile and K not of the k-tile (48 x 4000 x 4104); the wide one-wave
// tiles SKINNY_WIDEST = 128 chooses (64 x 11008 x 4096 in 115 tiles of 96, 48 x 14336 x 4096 in
// 128 of 112) and 128 forced with N ragged (33 x 4000 x 4104: 32 tiles, the last past N, split-K
// chosen).
TEST_F(CudaHarness, MatmulSkinnyWgmmaPassesEveryStage) {
  expect_matmul_variants_pass({{"#define SKINNY_WIDEST 128", "64x11008x4096:b_nk=1", "fp16"},
                               {"#define SKINNY_WIDEST 128", "48x14336x4096:b_nk=1", "bf16"},
                               {"#define SKINNY_WGMMA 128", "33x4000x4104:b_nk=1", "fp16"},
                               {"#define SKINNY_WGMMA 32", "64x4096x4096:b_nk=1", "fp16"},
                               {"#define SKINNY_WGMMA 64", "64x4096x4096:b_nk=1", "bf16"},
                               {"#define SKINNY_WGMMA 32", "64x11008x4096:b_nk=1", "bf16"},
                               {"#define SKINNY_WGMMA 32", "17x1024x4096:b_nk=1", "fp16"},
                               {"#define SKINNY_WGMMA 64\n#define SPLIT_K 4", "33x4096x4096:b_nk=1", "fp16"},
                               {"#define SKINNY_WGMMA 32", "48x4000x4104:b_nk=1", "bf16"}});
}

// Stream-K in the wgmma form (SKINNY_STREAM_K, cuda_gemm_stream_k.cuh): a tile cut between two
// blocks (64 x 11008 x 4096: runs of 83-84 k-tiles), between eight (17 x 1024 x 4096: 16 tiles of
// 64 k-tiles over 132 blocks), 128 rows of W a tile with N and K ragged (48 x 4000 x 4104), a
// single row of A, and the earlier rule where it chooses it (SKINNY_WIDEST = 64: 64 x 14336 x 4096
// in 224 tiles of 64).
// Every stage includes determinism: the owners add their helpers' sums in block order.
TEST_F(CudaHarness, MatmulSkinnyStreamKPassesEveryStage) {
  expect_matmul_variants_pass({{"#define SKINNY_STREAM_K 64", "64x11008x4096:b_nk=1", "fp16"},
                               {"#define SKINNY_STREAM_K 64", "17x1024x4096:b_nk=1", "bf16"},
                               {"#define SKINNY_STREAM_K 128", "48x4000x4104:b_nk=1", "bf16"},
                               {"#define SKINNY_STREAM_K 64", "1x4096x4096:b_nk=1", "fp16"},
                               {"#define SKINNY_WIDEST 64", "64x14336x4096:b_nk=1", "fp16"}});
}

// The wgmma form in clusters of two sharing A by TMA multicast (SKINNY_MULTICAST,
// cuda_gemm_skinny_multicast.cuh): the defaults' whole tiles of 32 (64 x 4096 x 4096: 64 pairs),
// more pairs than clusters (33 x 11008 x 4096 at 32 rows: 172 pairs, persistent), an odd count of
// tiles with N and K ragged (48 x 4000 x 4104 at 64 rows: 63 tiles, the last pair's second tile
// past N), and 17 rows (the second block's half of A mostly past M).
TEST_F(CudaHarness, MatmulSkinnyMulticastPassesEveryStage) {
  expect_matmul_variants_pass(
      {{"#define SKINNY_MULTICAST 1", "64x4096x4096:b_nk=1", "fp16"},
       {"#define SKINNY_MULTICAST 1\n#define SKINNY_WGMMA 32", "33x11008x4096:b_nk=1", "bf16"},
       {"#define SKINNY_MULTICAST 1\n#define SKINNY_WGMMA 64", "48x4000x4104:b_nk=1", "bf16"},
       {"#define SKINNY_MULTICAST 1\n#define SKINNY_WGMMA 32", "17x1024x4096:b_nk=1", "fp16"}});
}

// The compute-bound starters built for an Ampere (--arch compute_80: that target's PTX, compiled
// by the driver for this GPU on load). Their Hopper kernels (wgmma, TMA, clusters) are traps in such
// a build, so a PASS says every call went to the code an A100 or an RTX 40 runs: matmul's mma tiles,
// its skinny forms in registers and in shared memory (the cluster split asked for and not taken),
// fp32 on CUDA cores instead of tf32x3; fused_mlp's mma tiles; attention's mma variant.
TEST_F(CudaHarness, ComputeStartersBuiltForAmperePassEveryStage) {
  struct Case {
    std::string file, op, shape, dtype;
  };
  const std::string cuda = std::string(AK_SOURCE_DIR) + "/kernels/cuda/";
  const std::string clusters = starter_with("matmul", "#define SKINNY_CLUSTER 1");
  for (const auto& [file, op, shape, dtype] : std::vector<Case>{
           {cuda + "matmul.cu", "matmul", "1000x1000x200:b_nk=1", "fp16"},
           {cuda + "matmul.cu", "matmul", "300x520x72", "bf16"},
           {cuda + "matmul.cu", "matmul", "8x4096x4096:b_nk=1", "bf16"},
           {clusters, "matmul", "64x4096x4096:b_nk=1", "fp16"},
           {cuda + "matmul.cu", "matmul", "1100x1300x700", "fp32"},
           {cuda + "fused_mlp.cu", "fused_mlp", "1000x256x520", "fp16"},
           {cuda + "fused_mlp.cu", "fused_mlp", "8x4096x11008", "bf16"},
           {cuda + "flash_attention.cu", "flash_attention", "1x8x520x128:causal=0,kv_heads=2", "bf16"},
           {cuda + "flash_attention.cu", "flash_attention", "2x12x512x64:causal=1", "fp16"}}) {
    const auto j = bench(file, op, shape, {"--dtype", dtype, "--arch", "compute_80"});
    EXPECT_EQ(j.value("status", ""), "PASS") << op << " " << shape << " " << dtype << "\n" << j.dump(2);
  }
}

// fp32 on the tensor cores (tf32x3: split operands, three TF32 products): every stage at fp32's
// tolerance with B in both layouts and M, N, K not multiples of the tiles (1100 x 1300 gives 99
// output tiles, over half a wave), and faster than the FFMA path it replaces.
TEST_F(CudaHarness, MatmulFp32OnTensorCoresPassesEveryStageAndBeatsFfma) {
  for (const std::string shape : {"1100x1300x700", "1100x1300x700:b_nk=1", "2048x2048x2048"}) {
    const auto fast =
        bench(std::string(AK_SOURCE_DIR) + "/kernels/cuda/matmul.cu", "matmul", shape, {"--dtype", "fp32"});
    const auto ffma = bench(starter_with("matmul", "#define TF32X3 0"), "matmul", shape, {"--dtype", "fp32"});
    ASSERT_EQ(fast.value("status", ""), "PASS") << shape << "\n" << fast.dump(2);
    ASSERT_EQ(ffma.value("status", ""), "PASS") << shape << "\n" << ffma.dump(2);
    const double fast_us = fast["timing"]["median_us"], ffma_us = ffma["timing"]["median_us"];
    EXPECT_LT(fast_us, 0.9 * ffma_us) << shape << ": tf32x3 " << fast_us << " us, FFMA " << ffma_us << " us";
  }
}

// B as a Linear's [N, K] weight (b_nk = 1): the wgmma (K-major B tiles), mma and fp32 simt paths.
TEST_F(CudaHarness, MatmulTakesALinearsWeightThroughEveryStage) {
  expect_every_stage_passes(
      std::string(AK_SOURCE_DIR) + "/kernels/cuda/matmul.cu", "matmul",
      {{"1000x1000x200:b_nk=1", "fp16"}, {"300x520x72:b_nk=1", "bf16"}, {"257x130x96:b_nk=1", "fp32"}});
}

// TMA_STORE is its default. down's tile width is picked per call, on 132 SMs: 64 at D = 256 (32
// tiles), 192 at 4096 x 768 (one wave of 128 tiles), 256 at 2048 x 4096 (16 x 16 tiles: two
// waves, where 192 would take three).
TEST_F(CudaHarness, FusedMlpTmaStoreEpiloguePassesEveryStage) {
  for (const std::string shape : {"1000x256x520", "4096x768x256", "2048x4096x520"}) {
    const auto j = bench(std::string(AK_SOURCE_DIR) + "/kernels/cuda/fused_mlp.cu", "fused_mlp", shape);
    EXPECT_EQ(j.value("status", ""), "PASS") << shape << "\n" << j.dump(2);
  }
}

// fused_mlp's skinny form for decode (gate and up as skinny products, swiglu, the down product
// skinny): one row on the 7B's MLP (registers, split-K), 48 rows through shared memory with F
// and D not multiples of the tiles; twice as fast as the 128-row tiles it replaces at one row
// (86.4 against 178.0 us on the H200).
TEST_F(CudaHarness, FusedMlpSkinnyDecodePassesEveryStageAndBeatsTheTiles) {
  const std::string file = std::string(AK_SOURCE_DIR) + "/kernels/cuda/fused_mlp.cu";
  const auto skinny = bench(file, "fused_mlp", "1x4096x11008");
  const auto tiles = bench(starter_with("fused_mlp", "#define SKINNY 0"), "fused_mlp", "1x4096x11008");
  ASSERT_EQ(skinny.value("status", ""), "PASS") << skinny.dump(2);
  ASSERT_EQ(tiles.value("status", ""), "PASS") << tiles.dump(2);
  const double skinny_us = skinny["timing"]["median_us"], tiles_us = tiles["timing"]["median_us"];
  EXPECT_LT(skinny_us, 0.7 * tiles_us) << "skinny " << skinny_us << " us, tiles " << tiles_us << " us";
  const auto staged = bench(file, "fused_mlp", "48x1000x2760", {"--dtype", "bf16"});
  EXPECT_EQ(staged.value("status", ""), "PASS") << staged.dump(2);
}

TEST_F(CudaHarness, GoodReducePasses) {
  const auto j = bench(kernel("cuda_good_reduce.cu"), "reduce", "4096x1000");
  EXPECT_EQ(j.value("status", ""), "PASS") << j.dump(2);
}

TEST_F(CudaHarness, WorkOnTheDefaultStreamIsCaught) {
  const auto j = bench(kernel("cuda_default_stream.cu"), "reduce", "4096x1000");
  EXPECT_EQ(j.value("status", ""), "FAIL") << j.dump(2);
  EXPECT_NE(j.value("reason", "").find("outside call->stream"), std::string::npos) << j.dump(2);
}

TEST_F(CudaHarness, IllegalAddressIsACrashAndTheEngineCarriesOn) {
  const auto j = bench(kernel("cuda_illegal_address.cu"), "reduce", "4096x1000");
  EXPECT_EQ(j.value("status", ""), "CRASH") << j.dump(2);
  const auto after = bench(kernel("cuda_good_reduce.cu"), "reduce", "4096x1000", {"--quick"});
  EXPECT_EQ(after.value("status", ""), "PASS") << after.dump(2);
}

}  // namespace
}  // namespace ak::test
