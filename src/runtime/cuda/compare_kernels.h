// The judge's comparisons on the device (compare_kernels.cu): each block of a fixed grid writes
// one partial result, which the host merges in block order, so a result never depends on the
// order in which blocks ran.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ak::cuda {

// One block's findings over the elements it visited. Indices: kNoIndex when none.
struct ScanPart {
  long long unwritten;
  long long first_unwritten, first_nonfinite, first_violation;
  double ref_sq, diff_sq, max_abs;
  long long compared;
};
inline constexpr long long kNoIndex = 0x7fffffffffffffffLL;

// What scan_output reads; the element type as the ABI numbers it (AK_F32, AK_F16, ...).
struct ScanArgs {
  const void* output;
  int dtype;
  unsigned element_bytes;
  long long numel;
  const float* reference;
  const long long* rows;  // nullptr: every element is compared
  long long n_rows, row_len;
  double atol, rtol;
  unsigned char poison;
};

// The grid every launch below uses for `multiprocessors` SMs: the number of partials written.
unsigned compare_blocks(int multiprocessors);

cudaError_t launch_scan_output(cudaStream_t stream, const ScanArgs& args, ScanPart* parts,
                               int multiprocessors);

// parts[block] = the lowest byte index in that block's share where a differs from b (b nullptr:
// from `value`), or kNoIndex.
cudaError_t launch_first_mismatch(cudaStream_t stream, const void* a, const void* b, unsigned char value,
                                  size_t bytes, long long* parts, int multiprocessors);

// Loads the kernels above now (see preload_device_kernels).
cudaError_t preload_compare_kernels();

}  // namespace ak::cuda
