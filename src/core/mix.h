// Counter-based pseudo-random positions, the same on the host and on a CUDA device: the judge
// fills a timed slot on the device and rebuilds any of its elements on the host (drawn_inputs.h).
#pragma once

#include <cstdint>

#include "autokernel/host_device.h"

namespace ak {

// A splitmix64 finalizer: a bijection, and consecutive inputs give unrelated outputs.
AK_HOST_DEVICE inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// The high 64 bits of a * b: a uniform 64-bit `a` scaled to [0, b).
AK_HOST_DEVICE inline uint64_t mul_high(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  const uint64_t a_lo = a & 0xffffffffULL, a_hi = a >> 32, b_lo = b & 0xffffffffULL, b_hi = b >> 32;
  const uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi;
  const uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffULL) + lo_hi;
  return a_hi * b_hi + (hi_lo >> 32) + (cross >> 32);
#endif
}

// Elements are drawn in runs of this many bytes (a 16-byte load on the device), or one by one
// when the source holds fewer.
inline constexpr uint64_t kDrawRunBytes = 16;

AK_HOST_DEVICE inline uint64_t draw_run_elements(uint64_t element_bytes, uint64_t count) {
  const uint64_t run = element_bytes < kDrawRunBytes ? kDrawRunBytes / element_bytes : 1;
  return count >= run ? run : 1;
}

// Where element `index` of a drawn tensor comes from in a source of `count` elements: its run of
// `run` elements is a run of the source chosen by `key`, at the same offset in the run.
AK_HOST_DEVICE inline uint64_t drawn_position(uint64_t key, uint64_t index, uint64_t count, uint64_t run) {
  const uint64_t runs = count / run;
  return mul_high(mix64(key + index / run), runs) * run + index % run;
}

}  // namespace ak
