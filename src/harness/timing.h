// Timing by the judge's own clock. The kernel's process reports no time: the judge starts its
// clock, checks that the sampled outputs of every slot still hold their poison (nothing ran
// early), asks the launcher to run one launch per slot back to back, and stops the clock when
// the sampled outputs hold the right values, read by the judge itself. A batch's time, less the
// judge's fixed cost of a batch (the smaller of its measures before the module was loaded and
// after the timed runs: the kernel's code can inflate neither past the first), over the number of
// launches, is one sample. Inputs are fresh every batch
// and the caches flushed before it (harness/timed_slots.h). Samples until the median's standard
// error is under the target or a cap on count or time is reached.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/launcher.h"
#include "harness/result.h"
#include "harness/timed_slots.h"
#include "runtime/runtime.h"

namespace ak {

struct TimingOptions {
  int warmup = 1;  // batches not counted (the first launches load the kernel's code)
  int min_samples = 10;
  int max_samples = 2000;
  double max_seconds = 3.0;
  double target_noise = 0.005;  // relative standard error of the median
};

// What the judge's own work costs when no kernel code is loaded, measured before the module is:
struct JudgeCosts {
  // One batch with no kernel launch in it: the round trip to the launcher, the launcher's own
  // smallest device work (so that the device switches between the two processes' work as in a
  // real batch) and a read of the sampled outputs. Subtracted from every batch.
  double empty_batch_s = 0;
  // One cache flush. A flush that takes far longer once the module is loaded means the kernel's
  // process keeps the device busy between its launches (work outside the timed launches).
  double flush_s = 0;
  // The device writes of one refill of the timed slots (TimedSlots::time_refill; 0: not measured,
  // not judged). A kernel left running that computed each slot's next answer while the judge
  // wrote its inputs, and ended before the flush, would slow these, and nothing else.
  double refill_s = 0;
};
JudgeCosts measure_judge_costs(Runtime& runtime, Launcher& launcher, const SharedArena& arena,
                               size_t sample_count, int rounds = 31);

// Throws Error(Validation) when the kernel wrote before the launches were sent, or its sampled
// outputs are not right after them; Error(Launch/Crash) from the launcher.
// `recalibrate`, when given, measures the judge's costs again after the timed runs (the module is
// loaded by then, so only a smaller figure than `costs` is believed).
TimingReport measure(TimedSlots& slots, Launcher& launcher, Runtime& runtime, const JudgeCosts& costs,
                     const TimingOptions& options, const std::function<JudgeCosts()>& recalibrate = {});

// The reason a device-bound piece of the judge's own work between batches (`judge_work`: what it
// is, e.g. "cache flush"), timed at `timed` (its median is judged), says the kernel's process kept
// the device busy outside the timed launches: over `factor` times `calibrated_s`, measured before
// the module was loaded, plus 200 us; "" when it does not (or nothing was calibrated). On a GPU
// the contexts of two processes take turns, so the kernel's work outside its launches slows the
// judge's.
std::string busy_device_reason(std::string_view judge_work, const std::vector<double>& timed,
                               double calibrated_s, double factor);

// The median (0 for none).
double median(std::vector<double> samples);
// Relative standard deviation of samples (0 for fewer than two).
double relative_noise(const std::vector<double>& samples);
// 1.4826 * the median absolute deviation, over the median: a robust relative spread, equal to
// relative_noise for normal samples (0 for fewer than two).
double relative_spread(std::vector<double> samples);
// The relative standard error of the median, from the robust spread: what the judge's stopping
// rule holds under target_noise. From the standard deviation instead, a few batches stalled for
// milliseconds (two GPUs starting at once, 2026-11-26) kept a 72 us kernel timing for its whole
// max_seconds though they do not move the median. 1 (not yet known) for fewer than two samples
// or a median that is not positive (a calibration subtracted too much).
double median_standard_error(const std::vector<double>& samples);

}  // namespace ak
