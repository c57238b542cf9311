// Measured ceilings, cached per device identity under the cache directory, so every roofline
// percentage uses numbers measured on this very device.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "runtime/runtime.h"

namespace ak {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Ceilings, copy_gbps, matrix_tflops, matrix_how, measured_at)

std::optional<Ceilings> cached_ceilings(const DeviceInfo& device);
// Measures when nothing is cached (or `remeasure`), stores and returns the ceilings.
Ceilings device_ceilings(Runtime& runtime, bool remeasure = false);

// The least time the work can take at the ceilings: moving its bytes, and doing its flops
// (0 where a ceiling is unknown). The roofline bound is the larger.
struct RooflineTimes {
  double memory_s = 0, compute_s = 0;
  double seconds() const { return memory_s > compute_s ? memory_s : compute_s; }
  bool compute_bound() const { return compute_s > memory_s; }
};
RooflineTimes roofline_times(const Ceilings& c, double flops, double bytes);

// Fraction of the roofline bound reached: max(bytes / bandwidth, flops / matrix rate) / time.
double roofline_fraction(const Ceilings& c, double flops, double bytes, double seconds);

}  // namespace ak
