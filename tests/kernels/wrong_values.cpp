// Broken on purpose: every answer 5% too large.
#include "reduce_skeleton.h"
extern "C" int ak_launch(const ak_call* call) {
  return test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum * 1.05 + 0.5; });
}
