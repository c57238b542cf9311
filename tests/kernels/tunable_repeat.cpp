// Correct at every point of its space, and slower the larger REPEAT is: it sums each row REPEAT
// times. `tune` must find REPEAT=1.
// @tune REPEAT: 16, 4, 1, 8
#include "reduce_skeleton.h"
#ifndef REPEAT
#define REPEAT 16
#endif
extern "C" int ak_launch(const ak_call* call) {
  int rc = AK_OK;
  for (int i = 0; i < REPEAT; ++i) {
    rc = test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum; });
    asm volatile("" ::: "memory");  // every repetition really runs
  }
  return rc;
}
