// The layouts of decode matmuls (include/autokernel/skinny_plan.h): the wgmma form's one-wave tile
// width, and the cluster split's height of W's tiles and the blocks of a cluster sharing each, from
// the bytes each block brings in, every block in one wave, and only clusters the device runs at
// once. 132 SMs, as on an H100 or H200.
#include <gtest/gtest.h>

#include "autokernel/skinny_plan.h"

namespace ak_gemm::skinny {
namespace {

// The form's heights at 64 rows of A (eight operands) and at 32 (four), with the rings that about
// 200 KB of shared memory holds at each (cuda_gemm_skinny.cuh's StagedForm).
constexpr StagedHeight kEight[] = {{32, 8}, {64, 6}, {128, 4}, {256, 2}};
constexpr StagedHeight kFour[] = {{32, 8}, {64, 8}, {128, 5}, {256, 2}};
constexpr int64_t kSms = 132;

StagedPlan plan(
    int64_t n, int64_t k, int a_rows, int forced_rows = 0,
    int (*fits)(int, int) = [](int, int cluster) { return static_cast<int>(kSms) / cluster; }) {
  return plan_staged(n, k, a_rows, kSms, 128, forced_rows, a_rows == 64 ? kEight : kFour, 4, fits);
}

void expect_plan(const StagedPlan& got, int rows, int cluster, int chunk) {
  EXPECT_EQ(got.rows, rows);
  EXPECT_EQ(got.cluster, cluster);
  EXPECT_EQ(got.chunk, chunk);
}

TEST(SkinnyPlan, TheWgmmaFormTakesTheNarrowestTileThatMakesOneWave) {
  // The 7B's decode shapes: 4096 columns in 128 tiles of 32, 8192 in 128 of 64, 11008 in 115 of
  // 96 (64 would make 172), 14336 in 128 of 112, 16896 in 132 of 128.
  EXPECT_EQ(one_wave_width(4096, kSms, 128), 32);
  EXPECT_EQ(one_wave_width(8192, kSms, 128), 64);
  EXPECT_EQ(one_wave_width(11008, kSms, 128), 96);
  EXPECT_EQ(one_wave_width(14336, kSms, 128), 112);
  EXPECT_EQ(one_wave_width(16896, kSms, 128), 128);
  // Past one wave of the widest, and with the earlier rule's widest (64) past one wave of 64: none
  // (the caller's stream-K or other forms).
  EXPECT_EQ(one_wave_width(16897, kSms, 128), 0);
  EXPECT_EQ(one_wave_width(32000, kSms, 128), 0);
  EXPECT_EQ(one_wave_width(11008, kSms, 64), 0);
  EXPECT_EQ(one_wave_width(8192, kSms, 64), 64);
  // Half a wave or less of the narrowest leaves SMs idle that other forms use: none.
  EXPECT_EQ(one_wave_width(2112, kSms, 128), 0);   // 66 tiles of 32
  EXPECT_EQ(one_wave_width(2144, kSms, 128), 32);  // 67
  // Another device's SM count moves the choice: 114 SMs take 11008 columns in tiles of 112.
  EXPECT_EQ(one_wave_width(11008, 114, 128), 112);
  // Every width it picks is one the form is built for.
  for (const int width : kWgmmaWidths) EXPECT_TRUE(is_wgmma_width(width));
  EXPECT_FALSE(is_wgmma_width(80));
  EXPECT_FALSE(is_wgmma_width(0));
}

TEST(SkinnyPlan, TallTilesSplitOverAClusterBringTheFewestBytesIntoEachBlock) {
  // 64 x 4096 x 4096: 32 rows unsplit bring in 786 KB a block; 256 rows over 8 blocks 327 KB and
  // 57 KB of the others' sums.
  expect_plan(plan(4096, 4096, 64), 256, 8, 512);
  // 64 x 11008 x 4096: 128 rows fill 86 SMs; 256 rows over clusters of 3 fill 129.
  expect_plan(plan(11008, 4096, 64), 256, 3, 1408);
  // 32 rows of A (four operands): the same at 4096 columns; at 1024, 32 rows over 4 blocks (8
  // would leave a block fewer k than its ring of 8 stages).
  expect_plan(plan(4096, 4096, 32), 256, 8, 512);
  expect_plan(plan(1024, 4096, 32), 32, 4, 1024);
  // A short K is not split: a run of 256 k would not fill a ring.
  expect_plan(plan(4096, 512, 64), 32, 1, 512);
}

TEST(SkinnyPlan, OnlyClustersTheDeviceRunsAtOnceAndOnlyOneWave) {
  // 15 clusters of 8 and 30 of 4 fit (a GPC's SMs left over): neither takes 4096 columns in one
  // wave at 256 or at 128 rows; 7 blocks of 256 rows do (16 clusters, 112 blocks).
  const auto packed = [](int, int cluster) { return cluster == 8 ? 15 : cluster == 4 ? 30 : 132 / cluster; };
  const StagedPlan got = plan(4096, 4096, 64, 0, packed);
  expect_plan(got, 256, 7, 640);
  // No cluster at all: one block a tile, the height that fills the SMs with the fewest bytes.
  expect_plan(plan(4096, 4096, 64, 0, [](int, int) { return 0; }), 32, 1, 4096);
  // 40000 columns leave more than 132 tiles even at 256 rows: no plan.
  EXPECT_EQ(plan(40000, 4096, 64).rows, 0);
  // 32000 columns: 125 tiles of 256 rows, unsplit.
  expect_plan(plan(32000, 4096, 64), 256, 1, 4096);
}

TEST(SkinnyPlan, AForcedHeightIsKept) {
  expect_plan(plan(4096, 4096, 64, 64), 64, 2, 2048);
  expect_plan(plan(4096, 4096, 64, 32), 32, 1, 4096);
}

}  // namespace
}  // namespace ak_gemm::skinny
