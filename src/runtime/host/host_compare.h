// The comparisons of Runtime (scan_output, first_difference, first_byte_not) on host memory, in
// parallel over fixed chunks merged in order, so no result depends on the number of threads.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/runtime.h"

namespace ak {

OutputScan scan_output_on_host(const OutputScanJob& job);
int64_t first_difference_on_host(const void* a, const void* b, size_t bytes);
int64_t first_byte_not_on_host(const void* data, std::byte value, size_t bytes);

}  // namespace ak
