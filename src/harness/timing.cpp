#include "harness/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <iomanip>
#include <numeric>
#include <sstream>
#include <tuple>
#include <utility>
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

// The median, and 1.4826 times the median absolute deviation (for two or more samples).
std::pair<double, double> median_and_spread(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const double median = median_of_sorted(samples);
  for (double& s : samples) s = std::abs(s - median);
  std::sort(samples.begin(), samples.end());
  return {median, 1.4826 * median_of_sorted(samples)};
}

}  // namespace

double relative_spread(std::vector<double> samples) {
  if (samples.size() < 2) return 0.0;
  const auto [median, spread] = median_and_spread(std::move(samples));
  return median > 0 ? spread / median : 0.0;
}

double median_standard_error(const std::vector<double>& samples) {
  if (samples.size() < 2) return 1.0;
  const auto [median, spread] = median_and_spread(samples);
  return median > 0 ? 1.2533 * spread / median / std::sqrt(static_cast<double>(samples.size())) : 1.0;
}

double median(std::vector<double> samples) {
  if (samples.empty()) return 0.0;
  std::sort(samples.begin(), samples.end());
  return median_of_sorted(samples);
}

// `factor` times the calibration, and 200 us for the device's switches between the two processes.
std::string busy_device_reason(std::string_view judge_work, const std::vector<double>& timed,
                               double calibrated_s, double factor) {
  if (timed.size() < 3 || calibrated_s <= 0) return "";
  const double typical = median(timed), limit = factor * calibrated_s + 200e-6;
  if (typical <= limit) return "";
  std::ostringstream out;
  out << std::fixed << std::setprecision(0)
      << "the device stayed busy outside the timed launches (the judge's " << judge_work << " took "
      << typical * 1e6 << " us against " << calibrated_s * 1e6
      << " us before the module was loaded): work outside the timed launches";
  return out.str();
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// After the launcher says "done", right values may take a moment to be visible to the judge's
// reads; what is still wrong after this is wrong, and the experiment fails.
constexpr double kSettleSeconds = 0.05;

// One timed batch, from the judge's clock start (after it has seen every sampled output still
// poisoned: nothing ran early) to the moment its reads show every sampled output right.
struct Batch {
  double seconds = 0, run_s = 0, confirm_s = 0;
  double launcher_us = -1;  // what the kernel's process says: printed, never judged
  int reads = 0;
};

[[noreturn]] void fail_foreign(const SampleReading& reading) {
  throw Error(ErrorKind::Validation,
              "an output of a timed slot the judge did not launch in this batch was "
              "written (" +
                  reading.first_foreign + "): work done for a call never made");
}

Batch timed_batch(TimedSlots& slots, Launcher& launcher) {
  if (const SampleReading before = slots.read_samples(); !before.all_poisoned())
    throw Error(ErrorKind::Validation, std::to_string(before.written()) +
                                           " sampled output(s) were written before the timed launches were "
                                           "sent: work done outside the timed interval");
  const auto start = Clock::now();
  launcher.start_run(slots.batch_ids());
  Batch batch;
  batch.launcher_us = launcher.finish_run(launcher.asynchronous());
  const auto done = Clock::now();
  for (SampleReading after = slots.read_samples();; after = slots.read_samples()) {
    ++batch.reads;
    if (after.foreign > 0) fail_foreign(after);
    if (after.all_right()) break;
    if (seconds_between(done, Clock::now()) > kSettleSeconds)
      throw Error(ErrorKind::Validation,
                  "after the timed launches: " + std::to_string(after.unwritten) + " of " +
                      std::to_string(after.samples) + " sampled outputs never written, " +
                      std::to_string(after.wrong) + " wrong (first: " + after.first + ")");
  }
  const auto end = Clock::now();
  batch.seconds = seconds_between(start, end);
  batch.run_s = seconds_between(start, done);
  batch.confirm_s = seconds_between(done, end);
  return batch;
}

double seconds_of(const std::function<void()>& work) {
  const auto start = Clock::now();
  work();
  return seconds_between(start, Clock::now());
}

// A device busy with the kernel's own work outside its launches slows the judge's writes of the
// next batch's inputs and its cache flush. The writes come first: a kernel left waiting for them
// (to compute each slot's answer as its inputs arrive) may be done before the flush. (On the
// host the judge's work competes with everything else on the machine, and the sandbox already
// forbids a launcher thread, so the check is the GPU's.)
void check_device_idle_between_launches(const Runtime& runtime, const std::vector<double>& refills,
                                        const std::vector<double>& flushes, const JudgeCosts& costs) {
  if (runtime.info().backend != Backend::Cuda) return;
  // Honest kernels' medians over their calibrations, H200 (docs/benchmarks.md, 2026-11-29): the
  // writes 0.97-1.03x over nine operators (2 to 19 ms a batch), the flush 1.1-1.4x (about 50 us).
  for (const auto& [work, timed, calibrated, factor] :
       {std::tuple{"writes of the next batch's inputs", &refills, costs.refill_s, 1.5},
        std::tuple{"cache flush", &flushes, costs.flush_s, 3.0}})
    if (std::string reason = busy_device_reason(work, *timed, calibrated, factor); !reason.empty())
      throw Error(ErrorKind::Validation, reason);
}

}  // namespace

JudgeCosts measure_judge_costs(Runtime& runtime, Launcher& launcher, const SharedArena& arena,
                               size_t sample_count, int rounds) {
  // As many reads as a timed batch's samples, spread as widely: each of those lands on a page of
  // its own, and after the device has run the other process's work every page's translation is
  // fetched again. Reads packed into one page cost a batch tens of microseconds less than the
  // real ones, which the timed kernels were then charged with.
  std::vector<ByteSpan> spans;
  const size_t stride = std::max<size_t>(4, arena.size() / std::max<size_t>(1, sample_count) / 4 * 4);
  for (size_t i = 0; i < sample_count; ++i) spans.push_back({arena.data() + (i * stride) % arena.size(), 2});
  auto gather = runtime.prepare_gather(spans);
  std::vector<double> batches, flushes;
  for (int r = 0; r < rounds + 1; ++r) {
    const double flush = seconds_of([&] { runtime.flush_cache(); });
    gather->read();
    const double batch = seconds_of([&] {
      launcher.start_empty_run();
      launcher.finish_run(launcher.asynchronous());
      gather->read();
    });
    if (r == 0) continue;  // the first warms both ends
    batches.push_back(batch);
    flushes.push_back(flush);
  }
  return {median(batches), median(flushes)};
}

TimingReport measure(TimedSlots& slots, Launcher& launcher, Runtime& runtime, const JudgeCosts& costs,
                     const TimingOptions& options, const std::function<JudgeCosts()>& recalibrate) {
  const auto start = Clock::now();
  std::vector<double> samples, refills, flushes, runs, confirms, launcher_batches;
  std::vector<std::pair<double, size_t>> batches;  // seconds, launches
  int most_reads = 0;
  for (int index = 0;; ++index) {
    refills.push_back(slots.refill());
    flushes.push_back(seconds_of([&] { runtime.flush_cache(); }));
    const Batch batch = timed_batch(slots, launcher);
    slots.after_batch();
    if (index < options.warmup) continue;
    batches.emplace_back(batch.seconds, slots.batch_ids().size());
    samples.push_back((batch.seconds - costs.empty_batch_s) / static_cast<double>(slots.batch_ids().size()));
    runs.push_back(batch.run_s);
    confirms.push_back(batch.confirm_s);
    launcher_batches.push_back(batch.launcher_us);
    most_reads = std::max(most_reads, batch.reads);
    const int n = static_cast<int>(samples.size());
    const double standard_error = median_standard_error(samples);
    if (n >= options.max_samples) break;
    if (n >= options.min_samples && (standard_error <= options.target_noise ||
                                     seconds_between(start, Clock::now()) > options.max_seconds))
      break;
  }
  check_device_idle_between_launches(runtime, refills, flushes, costs);

  // The cost subtracted is the smaller of the calibrations before the module was loaded and after
  // the timed runs: a disturbed calibration (a busy machine, the previous run's teardown) would
  // otherwise be subtracted from every batch, a time too fast by up to its excess (an honest
  // softmax measured at -378 us on an H200). Subtracting less can only make a kernel slower, so
  // a kernel that slows the second calibration down gains nothing.
  const double after = recalibrate ? recalibrate().empty_batch_s : costs.empty_batch_s;
  const double overhead = std::min(costs.empty_batch_s, after);
  for (size_t i = 0; i < batches.size(); ++i)
    samples[i] = (batches[i].first - overhead) / static_cast<double>(batches[i].second);

  TimingReport report;
  report.samples = static_cast<int>(samples.size());
  report.noise = relative_noise(samples);
  report.spread = relative_spread(samples);
  std::sort(samples.begin(), samples.end());
  report.median_us = median_of_sorted(samples) * 1e6;
  report.min_us = samples.front() * 1e6;
  report.max_us = samples.back() * 1e6;
  report.seconds = seconds_between(start, Clock::now());
  report.slots = static_cast<int>(slots.size());
  report.batch_overhead_us = overhead * 1e6;
  report.batch_overhead_before_us = costs.empty_batch_s * 1e6;
  report.batch_overhead_after_us = after * 1e6;
  report.batch_run_us = median(runs) * 1e6;
  report.batch_confirm_us = median(confirms) * 1e6;
  report.confirm_reads = most_reads;
  report.launcher_batch_us = median(launcher_batches);
  report.refill_us = median(refills) * 1e6;
  report.refill_before_us = costs.refill_s * 1e6;
  report.flush_us = median(flushes) * 1e6;
  report.flush_before_us = costs.flush_s * 1e6;
  return report;
}

}  // namespace ak
