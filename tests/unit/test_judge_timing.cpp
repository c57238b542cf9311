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

// The judge's writes of the slots' inputs are timed every batch, and reported beside what they cost
// before the module was loaded (measured on a GPU only, where they are judged).
TEST_F(JudgeTiming, EveryBatchsWritesOfTheInputsAreTimedAndReported) {
  JudgeCosts calibrated = real;
  calibrated.refill_s = 1e-4;
  const TimingReport report = time_it(calibrated, [&] { return real; });
  EXPECT_GT(report.refill_us, 0);
  EXPECT_DOUBLE_EQ(report.refill_before_us, 100);
  EXPECT_GT(report.flush_us, 0);
  EXPECT_DOUBLE_EQ(report.flush_before_us, real.flush_s * 1e6);
}

// A kernel left running on the GPU outside its launches shows only in the judge's own device work
// between batches (on a GPU two processes' contexts take turns): its writes of the next inputs and
// its cache flush, far slower than before the module was loaded.
TEST(JudgeBusyDevice, WorkFarSlowerThanCalibratedIsWorkOutsideTheTimedLaunches) {
  const std::vector<double> honest{310e-6, 300e-6, 330e-6, 290e-6, 305e-6};
  EXPECT_EQ(busy_device_reason("writes", honest, 300e-6, 1.5), "");
  const std::vector<double> stretched{2.1e-3, 2.4e-3, 350e-6, 2.2e-3, 2.0e-3};
  const std::string reason = busy_device_reason("writes of the next batch's inputs", stretched, 300e-6, 1.5);
  EXPECT_NE(reason.find("stayed busy outside the timed launches"), std::string::npos) << reason;
  EXPECT_NE(reason.find("writes of the next batch's inputs took 2100 us against 300 us"), std::string::npos)
      << reason;
}

TEST(JudgeBusyDevice, TheMedianIsJudgedAndNothingWithoutACalibration) {
  // One batch preempted by the machine does not fail an honest kernel.
  EXPECT_EQ(busy_device_reason("writes", {300e-6, 9e-3, 310e-6, 305e-6}, 300e-6, 1.5), "");
  EXPECT_EQ(busy_device_reason("writes", {5e-3, 5e-3, 5e-3}, 0, 1.5), "");  // not measured (the host)
  EXPECT_EQ(busy_device_reason("writes", {5e-3, 5e-3}, 300e-6, 1.5), "");   // too few batches to say
  EXPECT_NE(busy_device_reason("writes", {5e-3, 5e-3, 5e-3}, 300e-6, 1.5), "");
  // The limit: factor times the calibration, plus 200 us.
  EXPECT_EQ(busy_device_reason("writes", {6.1e-3, 6.1e-3, 6.1e-3}, 4e-3, 1.5), "");
  EXPECT_NE(busy_device_reason("writes", {6.3e-3, 6.3e-3, 6.3e-3}, 4e-3, 1.5), "");
  EXPECT_EQ(busy_device_reason("flush", {340e-6, 340e-6, 340e-6}, 48e-6, 3.0), "");
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
