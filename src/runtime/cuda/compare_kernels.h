// The judge's comparisons on the device (compare_kernels.cu): each block of a fixed grid writes
// one partial result, which the host merges in block order (merge_scan, lowest_index), so a
// result never depends on the order in which blocks ran.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "runtime/output_scan.h"

namespace ak::cuda {

// The grid every launch below uses for `multiprocessors` SMs: the number of partials written.
unsigned compare_blocks(int multiprocessors);

// parts[block] = that block's scan of `job` (elements of `element_bytes` bytes).
cudaError_t launch_scan_output(cudaStream_t stream, const OutputScanJob& job, unsigned element_bytes,
                               OutputScan* parts, int multiprocessors);

// parts[block] = the lowest byte index in that block's share where a differs from b (b nullptr:
// from `value`), or -1.
cudaError_t launch_first_mismatch(cudaStream_t stream, const void* a, const void* b, unsigned char value,
                                  size_t bytes, int64_t* parts, int multiprocessors);

// Loads the kernels above now (see preload_device_kernels).
cudaError_t preload_compare_kernels();

}  // namespace ak::cuda
