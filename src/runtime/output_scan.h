// What Runtime::scan_output reads and finds, and how the findings of parts merge: shared by the
// host's scan and the CUDA kernels (compiled by nvcc too, so the CUDA blocks merge exactly as
// the host's chunks do).
#pragma once

#include <cstddef>
#include <cstdint>

#include "autokernel/host_device.h"
#include "core/dtype.h"

namespace ak {

// One output beside its reference, both in the runtime's memory. The reference holds the
// compared elements in order (every element, or those of `rows`), as float: the tolerances (1e-4
// relative at the tightest) are far above a float's rounding, and it halves what the judge
// uploads.
struct OutputScanJob {
  const void* output = nullptr;  // `numel` elements of `dtype`
  DType dtype = DType::F32;
  int64_t numel = 0;
  const float* reference = nullptr;
  const int64_t* rows = nullptr;  // ascending row indices (a row: `row_len` elements); nullptr = all
  int64_t n_rows = 0;
  int64_t row_len = 1;
  double atol = 0;  // the tolerance's absolute term, already scaled (atol * rms of the reference)
  double rtol = 0;
  std::byte poison{0xFF};  // what every byte of an unwritten element holds
};

// What a scan finds. Indices are the output's element indices, the lowest of each kind; -1 for
// none. Unwritten: every byte still the job's poison. The sums run over the compared elements
// only; the written and finite tests over every element.
struct OutputScan {
  int64_t unwritten = 0;
  int64_t first_unwritten = -1, first_nonfinite = -1, first_violation = -1;
  double ref_sq = 0, diff_sq = 0, max_abs = 0;
  int64_t compared = 0;
};

// The lower of two indices where -1 is "none".
AK_HOST_DEVICE inline int64_t lowest_index(int64_t a, int64_t b) {
  return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

// Adds the findings of a part of the elements to those of the parts before it.
AK_HOST_DEVICE inline void merge_scan(OutputScan& into, const OutputScan& part) {
  into.unwritten += part.unwritten;
  into.first_unwritten = lowest_index(into.first_unwritten, part.first_unwritten);
  into.first_nonfinite = lowest_index(into.first_nonfinite, part.first_nonfinite);
  into.first_violation = lowest_index(into.first_violation, part.first_violation);
  into.ref_sq += part.ref_sq;
  into.diff_sq += part.diff_sq;
  into.max_abs = into.max_abs > part.max_abs ? into.max_abs : part.max_abs;
  into.compared += part.compared;
}

}  // namespace ak
