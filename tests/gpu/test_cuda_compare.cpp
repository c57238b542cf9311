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
  const size_t bytes = (size_t{1} << 24) + 7;
  auto a = runtime->allocate(bytes + 1), b = runtime->allocate(bytes + 1);
  runtime->fill(a->data(), std::byte{0x5A}, bytes + 1);
  runtime->fill(b->data(), std::byte{0x5A}, bytes + 1);
  auto* pa = static_cast<std::byte*>(a->data());
  auto* pb = static_cast<std::byte*>(b->data());
  EXPECT_EQ(runtime->first_difference(pa, pb, bytes), -1);
  EXPECT_EQ(runtime->first_byte_not(pa + 1, std::byte{0x5A}, bytes), -1);
  const std::byte zero{0}, one{1};
  runtime->upload(pb + bytes - 1, &zero, 1);
  runtime->upload(pb + 9'700'001, &one, 1);
  runtime->upload(pb + 9'700'013, &one, 1);
  EXPECT_EQ(runtime->first_difference(pa, pb, bytes), 9'700'001);
  EXPECT_EQ(runtime->first_difference(pa + 1, pb + 1, bytes), 9'700'000);
  EXPECT_EQ(runtime->first_byte_not(pb, std::byte{0x5A}, bytes), 9'700'001);
  EXPECT_EQ(runtime->first_byte_not(pb + 9'700'002, std::byte{0x5A}, 100), 11);
  EXPECT_EQ(runtime->first_byte_not(pb, std::byte{0x5A}, 9'700'001), -1);
}

}  // namespace
}  // namespace ak
