#include "harness/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"

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

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// After the launcher says "done", right values may take a moment to be visible to the judge's
// reads; what is still wrong after this is wrong, and the experiment fails.
constexpr double kSettleSeconds = 0.05;

// One timed batch: seconds from the judge's clock start to the moment its reads show every
// sampled output right.
double timed_batch(TimedSlots& slots, Launcher& launcher, const std::vector<int>& ids) {
  const auto start = Clock::now();
  if (const SampleReading before = slots.read_samples(); !before.all_poisoned())
    throw Error(ErrorKind::Validation, std::to_string(before.samples - before.unwritten) +
                                           " sampled output(s) were written before the "
                                           "timed launches were sent: work done outside the timed interval");
  launcher.start_run(ids);
  launcher.finish_run(launcher.asynchronous());
  const auto done = Clock::now();
  SampleReading after = slots.read_samples();
  while (!after.all_right()) {
    if (seconds_between(done, Clock::now()) > kSettleSeconds)
      throw Error(ErrorKind::Validation,
                  "after the timed launches: " + std::to_string(after.unwritten) + " of " +
                      std::to_string(after.samples) + " sampled outputs never written, " +
                      std::to_string(after.wrong) + " wrong (first: " + after.first + ")");
    after = slots.read_samples();
  }
  return seconds_between(start, Clock::now());
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return median_of_sorted(v);
}

}  // namespace

double measure_batch_overhead(Runtime& runtime, Launcher& launcher, const SharedArena& arena,
                              size_t sample_count, int rounds) {
  std::vector<ByteSpan> spans;
  for (size_t i = 0; i < sample_count; ++i) spans.push_back({arena.data() + (i * 4) % arena.size(), 2});
  auto gather = runtime.prepare_gather(spans);
  std::vector<double> times;
  for (int r = 0; r < rounds + 1; ++r) {
    const auto start = Clock::now();
    gather->read();
    launcher.start_empty_run();
    launcher.finish_run(launcher.asynchronous());
    gather->read();
    if (r > 0) times.push_back(seconds_between(start, Clock::now()));  // the first warms both ends
  }
  return median_of(times);
}

TimingReport measure(TimedSlots& slots, Launcher& launcher, Runtime& runtime, double overhead_s,
                     const TimingOptions& options) {
  const auto start = Clock::now();
  const std::vector<int> ids = slots.launch_ids();
  const double launches = static_cast<double>(ids.size());
  std::vector<double> samples;
  for (int batch = 0;; ++batch) {
    slots.refill();
    runtime.flush_cache();
    const double seconds = timed_batch(slots, launcher, ids);
    if (batch < options.warmup) continue;
    samples.push_back((seconds - overhead_s) / launches);
    const int n = static_cast<int>(samples.size());
    const double median = median_of(samples);
    const double standard_error =
        median > 0 ? 1.2533 * relative_noise(samples) / std::sqrt(static_cast<double>(n)) : 1.0;
    if (n >= options.max_samples) break;
    if (n >= options.min_samples && (standard_error <= options.target_noise ||
                                     seconds_between(start, Clock::now()) > options.max_seconds))
      break;
  }

  TimingReport report;
  report.samples = static_cast<int>(samples.size());
  report.noise = relative_noise(samples);
  report.spread = relative_spread(samples);
  std::sort(samples.begin(), samples.end());
  report.median_us = median_of_sorted(samples) * 1e6;
  report.min_us = samples.front() * 1e6;
  report.max_us = samples.back() * 1e6;
  report.seconds = seconds_between(start, Clock::now());
  return report;
}

}  // namespace ak
