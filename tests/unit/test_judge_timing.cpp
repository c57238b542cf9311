// The judge's clock on the host backend, driven directly: the fixed cost of a batch that it
// subtracts is the smaller of its calibrations before the module was loaded and after the timed
// runs. A calibration disturbed before the module was loaded (an honest softmax once measured at
// -378 us on an H200 that way) is corrected by the later one; a later one made slow (by a kernel's
// code, which by then runs in the launcher) is not believed.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "cli_runner.h"
#include "core/registry.h"
#include "harness/arena.h"
#include "harness/device_case.h"
#include "harness/experiment.h"
#include "harness/launcher.h"
#include "harness/prepared_case.h"
#include "harness/timed_slots.h"
#include "harness/timing.h"
#include "runtime/compiler.h"
#include "runtime/runtime.h"

namespace ak::test {
namespace {

using namespace std::chrono_literals;

// The honest host reduce on 256 x 4096 fp32, set up as run_experiment sets up its timing.
class JudgeTiming : public ::testing::Test {
 protected:
  const Op& op = find_op("reduce");
  const Problem problem = parse_problem("256x4096");
  const Signature signature = op.signature(problem, DType::F32);
  std::unique_ptr<Runtime> runtime = make_runtime(Backend::Host);
  std::unique_ptr<SharedArena> arena = runtime->share(8 * arena_bytes_of(signature) + (size_t{1} << 20));
  ArenaAllocator allocator{*arena};
  Launcher launcher{Backend::Host, *arena, AK_CLI_PATH};
  JudgeCosts real = measure_judge_costs(*runtime, launcher, *arena, TimedSlots::sample_count(signature, 4));
  DeviceCases cases{*runtime};

  TimingReport time_it(const JudgeCosts& before, const std::function<JudgeCosts()>& recalibrate) {
    launcher.load(build_module({kernel("good_reduce.cpp"), {}, Backend::Host, "", 300s}).module);
    const CheckContext ctx{*runtime, allocator, launcher, op, cases};
    TimedSlots slots(ctx, problem, prepare_case(op, {problem, DType::F32, std::string(kRandomCase), 77}), 4);
    TimingOptions options;
    options.max_seconds = 0.2;
    return measure(slots, launcher, *runtime, before, options, recalibrate);
  }
};

TEST_F(JudgeTiming, ADisturbedCalibrationBeforeTheModuleIsCorrectedAfterTheTimedRuns) {
  ASSERT_GT(real.empty_batch_s, 0);
  JudgeCosts disturbed = real;
  disturbed.empty_batch_s = real.empty_batch_s + 0.05;  // 50 ms: far over any batch of this kernel
  const TimingReport report = time_it(disturbed, [&] { return real; });
  EXPECT_GT(report.median_us, 0) << "the disturbed calibration was subtracted";
  EXPECT_DOUBLE_EQ(report.batch_overhead_us, real.empty_batch_s * 1e6);
  EXPECT_DOUBLE_EQ(report.batch_overhead_before_us, disturbed.empty_batch_s * 1e6);
}

TEST_F(JudgeTiming, ASlowerCalibrationAfterTheModuleIsLoadedIsNotBelieved) {
  JudgeCosts slowed = real;
  slowed.empty_batch_s = real.empty_batch_s + 0.05;
  const TimingReport report = time_it(real, [&] { return slowed; });
  EXPECT_DOUBLE_EQ(report.batch_overhead_us, real.empty_batch_s * 1e6);
  EXPECT_DOUBLE_EQ(report.batch_overhead_after_us, slowed.empty_batch_s * 1e6);
  EXPECT_GT(report.median_us, 0);
}

// The stopping rule: samples of a 72 us kernel within 1%, three of whose batches stalled for
// milliseconds. The standard deviation says the median is not known to 0.5% after 100 samples,
// and the judge went on to its time limit (two GPUs starting at once); the median's own error,
// from the robust spread, says it is.
TEST(JudgeStopping, AFewStalledBatchesDoNotKeepTheJudgeTimingToItsLimit) {
  std::vector<double> samples;
  for (int i = 0; i < 100; ++i) samples.push_back(72e-6 * (1.0 + 0.01 * ((i % 7) - 3) / 3.0));
  for (int i = 0; i < 3; ++i) samples.push_back(6e-3);
  const double from_deviation = 1.2533 * relative_noise(samples) / std::sqrt(double(samples.size()));
  EXPECT_GT(from_deviation, 0.05);
  EXPECT_LT(median_standard_error(samples), 0.005);
  EXPECT_GT(median_standard_error(samples), 0.0);
}

TEST(JudgeStopping, NothingIsKnownFromOneSampleOrANonPositiveMedian) {
  EXPECT_EQ(median_standard_error({72e-6}), 1.0);
  EXPECT_EQ(median_standard_error({-1e-6, -2e-6, -1.5e-6, 1e-6}), 1.0);  // a calibration over the batch
}

}  // namespace
}  // namespace ak::test
