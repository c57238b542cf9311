// Output acceptance: every element written, finite, elementwise within tolerance of the float64
// reference, and the whole tensor within a relative-norm tolerance.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/op.h"

namespace ak {

struct Comparison {
  bool ok = true;
  std::string reason;     // one line naming the first offending element
  double norm_error = 0;  // ||out - ref|| / ||ref||
  double max_abs_error = 0;
};

// `rows` empty compares everything; otherwise only those rows (all but the last dim) are compared
// against the reference, while every element is still checked for being written and finite.
Comparison compare_output(const TensorSpec& spec, const std::vector<std::byte>& got, const Values& reference,
                          const Tolerance& tolerance, const std::vector<int64_t>& rows);

// sqrt(mean(ref^2)) over the compared elements (all, or the rows): the scale of the tolerance's
// absolute term.
double reference_rms(const Values& reference, const std::vector<int64_t>& rows);

}  // namespace ak
