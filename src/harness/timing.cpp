#include "harness/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <vector>

namespace ak {

double relative_noise(const std::vector<double>& samples) {
  if (samples.size() < 2) return 0.0;
  const double mean =
      std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  double var = 0;
  for (double s : samples) var += (s - mean) * (s - mean);
  var /= static_cast<double>(samples.size() - 1);
  return mean > 0 ? std::sqrt(var) / mean : 0.0;
}

namespace {

double median_of_sorted(const std::vector<double>& sorted) {
  const size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

}  // namespace

double relative_spread(std::vector<double> samples) {
  if (samples.size() < 2) return 0.0;
  std::sort(samples.begin(), samples.end());
  const double median = median_of_sorted(samples);
  for (double& s : samples) s = std::abs(s - median);
  std::sort(samples.begin(), samples.end());
  return median > 0 ? 1.4826 * median_of_sorted(samples) / median : 0.0;
}

TimingReport measure(Runtime& runtime, const std::function<void()>& launch, const TimingOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < options.warmup; ++i) runtime.time_sample(launch);

  std::vector<double> samples;
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  while (static_cast<int>(samples.size()) < options.max_samples) {
    samples.push_back(runtime.time_sample(launch));
    const bool enough = static_cast<int>(samples.size()) >= options.min_samples;
    if (enough && (relative_noise(samples) <= options.target_noise || elapsed() > options.max_seconds)) break;
  }

  TimingReport report;
  report.samples = static_cast<int>(samples.size());
  report.noise = relative_noise(samples);
  report.spread = relative_spread(samples);
  std::sort(samples.begin(), samples.end());
  report.median_us = median_of_sorted(samples) * 1e6;
  report.min_us = samples.front() * 1e6;
  report.max_us = samples.back() * 1e6;
  report.seconds = elapsed();
  return report;
}

}  // namespace ak
