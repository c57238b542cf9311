// The loop's bookkeeping (src/loop/decision.h) and its git wrapper, without running kernels.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_runner.h"
#include "core/error.h"
#include "core/paths.h"
#include "harness/timing.h"
#include "loop/decision.h"
#include "loop/git_repo.h"

namespace ak {
namespace {

ExperimentResult passed(double us, double noise = 0.002, int samples = 100, double roofline = 0.5) {
  ExperimentResult r;
  r.status = Status::Pass;
  r.timing.median_us = us;
  r.timing.noise = noise;
  r.timing.samples = samples;
  r.roofline = roofline;
  return r;
}

KernelState measured(double baseline, double best, double noise = 0.002) {
  KernelState k;
  k.name = "k";
  k.baseline_us = baseline;
  k.best_us = best;
  k.best_noise = noise;
  return k;
}

TEST(LoopDecision, FirstPassIsTheBaselineAndFailuresAreFailed) {
  KernelState fresh;
  EXPECT_EQ(decide(fresh, passed(100), 0.005), "baseline");
  ExperimentResult crashed;
  crashed.status = Status::Crash;
  EXPECT_EQ(decide(fresh, crashed, 0.005), "failed");
  EXPECT_EQ(decide(measured(100, 100), crashed, 0.005), "failed");
}

TEST(LoopDecision, KeepsOnlyGainsBeyondTheNoiseAndTheMinimum) {
  const KernelState k = measured(100, 100, 0.002);
  EXPECT_EQ(decide(k, passed(90), 0.005), "kept");
  EXPECT_EQ(decide(k, passed(99.8), 0.005), "reverted");  // 0.2% < the 0.5% minimum
  EXPECT_EQ(decide(k, passed(101), 0.005), "reverted");
  // The same 2% gain, measured with 10% noise over 10 samples, is noise.
  const KernelState noisy = measured(100, 100, 0.10);
  EXPECT_GT(keep_threshold(noisy, passed(98, 0.10, 10), 0.005), 0.02);
  EXPECT_EQ(decide(noisy, passed(98, 0.10, 10), 0.005), "reverted");
}

TEST(LoopDecision, APreemptedSampleDoesNotHideAGain) {
  // Samples around 100 us, one of them preempted for 30 ms (as on a loaded CI machine): the
  // standard deviation explodes, the median and its robust spread do not.
  std::vector<double> samples;
  for (int i = 0; i < 30; ++i) samples.push_back(100e-6 * (1.0 + 0.002 * (i % 5 - 2)));
  samples.push_back(30e-3);
  EXPECT_GT(relative_noise(samples), 1.0);
  EXPECT_LT(relative_spread(samples), 0.01);
  KernelState k = measured(100, 100, relative_noise(samples));
  k.best_spread = relative_spread(samples);
  ExperimentResult faster = passed(50, relative_noise(samples), static_cast<int>(samples.size()));
  faster.timing.spread = relative_spread(samples);
  EXPECT_EQ(decide(k, faster, 0.005), "kept");
  // Judged by the standard deviation alone, the 2x gain would be "noise".
  faster.timing.spread = 0;
  k.best_spread = 0;
  EXPECT_EQ(decide(k, faster, 0.005), "reverted");
  // And a real spread still protects: the same 2% gain at 10% robust spread over 10 samples.
  KernelState spread_out = measured(100, 100, 0.10);
  spread_out.best_spread = 0.10;
  ExperimentResult small_gain = passed(98, 0.10, 10);
  small_gain.timing.spread = 0.10;
  EXPECT_EQ(decide(spread_out, small_gain, 0.005), "reverted");
}

TEST(LoopDecision, ApplyCountsAndStopsOnPatienceAndRoofline) {
  RunState state;
  state.settings.patience = 2;
  state.settings.roofline_target = 0.9;
  state.kernels = {KernelState{}, KernelState{}};
  state.kernels[0].name = "a";
  state.kernels[1].name = "b";
  apply(state, {1, "a", "", "PASS", "baseline", "c0", 100, 0.01, 0.5, 50, 1.0});
  EXPECT_DOUBLE_EQ(state.kernels[0].baseline_us, 100);
  apply(state, {2, "a", "X=1", "PASS", "kept", "c1", 80, 0.01, 0.6, 50, 2.0});
  EXPECT_EQ(state.kernels[0].kept, 1);
  EXPECT_EQ(state.kernels[0].best_config, "X=1");
  EXPECT_EQ(state.head, "c1");
  apply(state, {3, "a", "X=2", "FAIL", "failed", "", 0, 0, 0, 0, 3.0});
  EXPECT_TRUE(state.kernels[0].done.empty());
  apply(state, {4, "a", "X=3", "PASS", "reverted", "", 85, 0.01, 0.55, 50, 4.5});
  EXPECT_EQ(state.kernels[0].done, kDonePatience);
  EXPECT_EQ(state.kernels[0].experiments, 4);
  EXPECT_EQ(state.kernels[0].failed, 1);
  EXPECT_DOUBLE_EQ(state.kernels[0].seconds, 4.5);
  EXPECT_EQ(state.experiments, 4);
  apply(state, {5, "b", "", "PASS", "baseline", "c1", 10, 0.01, 0.95, 50, 5.0});
  EXPECT_EQ(state.kernels[1].done, kDoneRoofline);
  EXPECT_THROW(apply(state, {6, "nope", "", "PASS", "kept", "", 1, 0, 0, 1, 6}), Error);
}

TEST(LoopDecision, PicksUnmeasuredFirstThenTheLargestEndToEndGain) {
  RunState state;
  state.kernels.resize(3);
  state.kernels[0] = measured(100, 100);
  state.kernels[0].name = "k0";
  state.kernels[0].share = 0.6;
  state.kernels[0].best_roofline = 0.95;  // big share, little headroom: 0.6 * 0.05 = 0.03
  state.kernels[1] = measured(100, 100);
  state.kernels[1].name = "k1";
  state.kernels[1].share = 0.2;
  state.kernels[1].best_roofline = 0.4;  // 0.2 * 0.6 = 0.12
  state.kernels[2].name = "k2";
  EXPECT_EQ(pick_next(state), &state.kernels[2]);  // no baseline yet
  state.kernels[2] = measured(50, 50);
  state.kernels[2].name = "k2";
  state.kernels[2].share = 0.2;
  state.kernels[2].best_roofline = 0.7;  // 0.2 * 0.3 = 0.06
  EXPECT_EQ(pick_next(state), &state.kernels[1]);
  state.kernels[1].done = kDonePatience;
  EXPECT_EQ(pick_next(state), &state.kernels[2]);
  state.kernels[0].done = state.kernels[2].done = kDoneBudget;
  EXPECT_EQ(pick_next(state), nullptr);
}

TEST(LoopDecision, ProjectedSpeedupIsAmdahl) {
  std::vector<KernelState> kernels{measured(100, 50), measured(10, 10)};
  kernels[0].share = 0.5;  // halved
  kernels[1].share = 0.1;  // unchanged; the other 0.4 of the model untouched
  EXPECT_NEAR(projected_speedup(kernels), 1.0 / (0.4 + 0.25 + 0.1), 1e-12);
}

TEST(LoopGit, CommitsResetsAndLogs) {
  const auto dir = test::scratch_dir("loop-git");
  GitRepo repo = GitRepo::init(dir);
  write_file_atomically(dir / "a.txt", "one\n");
  repo.create_branch("autokernel/test");
  const std::string first = repo.commit_all("first");
  write_file_atomically(dir / "a.txt", "two\n");
  const std::string second = repo.commit_all("second");
  EXPECT_EQ(repo.current_branch(), "autokernel/test");
  write_file_atomically(dir / "a.txt", "half-done edit\n");
  write_file_atomically(dir / "stray.txt", "untracked\n");
  EXPECT_FALSE(repo.is_clean());
  repo.reset_hard(first);
  EXPECT_EQ(read_text_file(dir / "a.txt"), "one\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "stray.txt"));
  EXPECT_TRUE(repo.is_clean());
  const auto log = repo.log();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].hash, first);
  EXPECT_NE(first, second);
  EXPECT_THROW(repo.reset_hard("no-such-commit"), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ak
