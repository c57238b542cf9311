// Cheat: correct while it is being checked, then returns without doing the work once a shape
// has come back more often than any check repeats one (as timed runs do), as if the timed runs
// could reuse what the checks left behind.
#include "../reduce_skeleton.h"
extern "C" int ak_launch(const ak_call* call) {
  if (test_kernels::calls_of_shape(call) > 40) return AK_OK;
  return test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum; });
}
