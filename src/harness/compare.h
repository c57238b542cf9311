// Output acceptance: every element written, finite, elementwise within tolerance of the
// reference, and the whole tensor within a relative-norm tolerance. Judged where the output lives
// (Runtime::scan_output); only the summary and, on a failure, the offending element are read back.
#pragma once

#include <cstddef>
#include <string>

#include "core/op.h"
#include "harness/device_case.h"
#include "runtime/runtime.h"

namespace ak {

struct Comparison {
  bool ok = true;
  std::string reason;     // one line naming the first offending element
  double norm_error = 0;  // ||out - ref|| / ||ref|| over the compared elements
  double max_abs_error = 0;
};

// Output `index` of `prepared`, at `output` in device memory, against the device copy of its
// reference. `rows` of the case: only those rows are compared, while every element is still
// checked for being written and finite.
Comparison compare_output(Runtime& runtime, const void* output, const PreparedCase& prepared,
                          const DeviceCase& device, size_t index, const Tolerance& tolerance);

}  // namespace ak
