// The CUDA runtime's comparisons (label gpu) against the host runtime's on the same data: the
// same indices and counts, the same sums to rounding, at any alignment of the buffers.
#include <gtest/gtest.h>

#include "compare_scenarios.h"
#include "runtime/cuda/cuda_runtime.h"

namespace ak {
namespace {

TEST(CudaCompare, ScanAgreesWithTheHostOnEveryScenario) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
  auto cuda = make_runtime(Backend::Cuda);
  auto host = make_runtime(Backend::Host);
  for (const auto& s : testing::compare_scenarios()) {
    SCOPED_TRACE(s.name);
    const OutputScan want = testing::scan_scenario(*host, s);
    const OutputScan got = testing::scan_scenario(*cuda, s);
    EXPECT_EQ(got.unwritten, want.unwritten);
    EXPECT_EQ(got.first_unwritten, want.first_unwritten);
    EXPECT_EQ(got.first_nonfinite, want.first_nonfinite);
    EXPECT_EQ(got.first_violation, want.first_violation);
    EXPECT_EQ(got.compared, want.compared);
    EXPECT_NEAR(got.ref_sq, want.ref_sq, 1e-9 * want.ref_sq);
    if (want.first_nonfinite < 0 && want.unwritten == 0) {
      EXPECT_NEAR(got.diff_sq, want.diff_sq, 1e-9 * want.diff_sq + 1e-300);
      EXPECT_EQ(got.max_abs, want.max_abs);
    }
  }
}

TEST(CudaCompare, ScanIsBitwiseRepeatable) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
  auto cuda = make_runtime(Backend::Cuda);
  const auto s = testing::make_scenario("repeat", DType::F16, 3'000'017);
  const OutputScan first = testing::scan_scenario(*cuda, s);
  for (int run = 0; run < 3; ++run) {
    const OutputScan again = testing::scan_scenario(*cuda, s);
    EXPECT_EQ(again.diff_sq, first.diff_sq);
    EXPECT_EQ(again.ref_sq, first.ref_sq);
  }
}

TEST(CudaCompare, FirstDifferenceAndFirstByteNotAtAnyAlignment) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
  auto runtime = make_runtime(Backend::Cuda);
  testing::expect_first_mismatches(*runtime, (size_t{1} << 24) + 7, 9'700'001);
}

}  // namespace
}  // namespace ak
