// Cheat: right while it is being checked; once a shape has come back more often than any check
// repeats one (as the timed runs do), every eighth call writes finite values that are wrong (as a
// kernel that skips part of its work now and then would). The timed runs' samples only see that
// the outputs were written; the units checked in every launched slot see the values.
#include "../reduce_skeleton.h"
struct Seen {
  int64_t rows = 0, cols = 0;
  int calls = 0;
};
static Seen seen[64];
extern "C" int ak_launch(const ak_call* call) {
  const int64_t rows = call->inputs[0].shape[0], cols = call->inputs[0].shape[1];
  bool off = false;
  for (Seen& s : seen) {
    if (s.calls == 0) s = {rows, cols, 0};
    if (s.rows != rows || s.cols != cols) continue;
    ++s.calls;
    off = s.calls > 40 && s.calls % 8 == 0;
    break;
  }
  return test_kernels::reduce_rows(call, 0, [off](int64_t, double sum) { return off ? 1.5 * sum + 1 : sum; });
}
