// Timing the nvbench way: warm-up, a cold cache and a held stream for every sample (the
// runtime's time_sample), and samples until the relative noise is under the target or a cap on
// count or time is reached. Reports the median.
#pragma once

#include <functional>

#include "harness/result.h"
#include "runtime/runtime.h"

namespace ak {

struct TimingOptions {
  int warmup = 3;
  int min_samples = 10;
  int max_samples = 2000;
  double max_seconds = 3.0;
  double target_noise = 0.005;  // relative standard deviation
};

TimingReport measure(Runtime& runtime, const std::function<void()>& launch, const TimingOptions& options);

// Relative standard deviation of samples (0 for fewer than two).
double relative_noise(const std::vector<double>& samples);
// 1.4826 * the median absolute deviation, over the median: a robust relative spread, equal to
// relative_noise for normal samples (0 for fewer than two).
double relative_spread(std::vector<double> samples);

}  // namespace ak
