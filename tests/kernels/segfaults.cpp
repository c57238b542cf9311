// Broken on purpose: MODE=1 dereferences a null pointer; MODE=0 is correct. Tuning over it must
// record the crash and still find the working configuration.
// @tune MODE: 0, 1
#include "reduce_skeleton.h"
#ifndef MODE
#define MODE 1
#endif
extern "C" int ak_launch(const ak_call* call) {
  if (MODE == 1) {
    volatile int* nowhere = nullptr;
    *nowhere = 1;
  }
  return test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum; });
}
