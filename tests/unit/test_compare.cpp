// The host runtime's comparisons (label cpu): Runtime::scan_output finds the lowest unwritten,
// non-finite and out-of-tolerance elements and sums the norm test over the compared elements
// only; first_difference and first_byte_not find the lowest differing byte at any alignment.
#include <gtest/gtest.h>

#include <cmath>

#include "compare_scenarios.h"

namespace ak {
namespace {

TEST(HostCompare, ScanFindsWhatEachScenarioHolds) {
  auto runtime = make_runtime(Backend::Host);
  for (const auto& s : testing::compare_scenarios()) {
    SCOPED_TRACE(s.name);
    const OutputScan scan = testing::scan_scenario(*runtime, s);
    EXPECT_EQ(scan.unwritten, s.expected.unwritten);
    EXPECT_EQ(scan.first_unwritten, s.expected.first_unwritten);
    EXPECT_EQ(scan.first_nonfinite, s.expected.first_nonfinite);
    EXPECT_EQ(scan.first_violation, s.expected.first_violation);
    EXPECT_EQ(scan.compared, s.expected.compared);
    double ref_sq = 0;
    for (float r : s.reference) ref_sq += double{r} * r;
    EXPECT_NEAR(scan.ref_sq, ref_sq, 1e-9 * ref_sq);
  }
}

TEST(HostCompare, NormSumsMeasureTheRoundingOfTheOutput) {
  auto runtime = make_runtime(Backend::Host);
  const auto s = testing::make_scenario("fp16 rounding", DType::F16, 20'000);
  const OutputScan scan = testing::scan_scenario(*runtime, s);
  const double norm_error = std::sqrt(scan.diff_sq / scan.ref_sq);
  EXPECT_GT(norm_error, 1e-5);  // fp16 rounds: not zero
  EXPECT_LT(norm_error, 1e-3);  // half an fp16 ulp at most
  EXPECT_LE(scan.max_abs, 2.0 / 2048);
}

TEST(HostCompare, FirstDifferenceAndFirstByteNotAtAnyAlignment) {
  auto runtime = make_runtime(Backend::Host);
  testing::expect_first_mismatches(*runtime, (size_t{1} << 20) + 7, 700'001);
}

}  // namespace
}  // namespace ak
