// Cheat: right while it is being checked; once a shape has come back more often than any check
// repeats one (as the timed runs do), every eighth call writes finite values that are wrong (as a
// kernel that skips part of its work now and then would). The timed runs' samples only see that
// the outputs were written; the units checked in every launched slot see the values.
#include "../reduce_skeleton.h"
extern "C" int ak_launch(const ak_call* call) {
  const int calls = test_kernels::calls_of_shape(call);
  const bool off = calls > 40 && calls % 8 == 0;
  return test_kernels::reduce_rows(call, 0, [off](int64_t, double sum) { return off ? 1.5 * sum + 1 : sum; });
}
