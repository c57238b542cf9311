// Cheat: correct while it is being checked, then returns without doing the work once a shape
// has come back more often than any check repeats one (as timed runs do), as if the timed runs
// could reuse what the checks left behind.
#include "../reduce_skeleton.h"
struct Seen {
  int64_t rows = 0, cols = 0;
  int calls = 0;
};
static Seen seen[64];
extern "C" int ak_launch(const ak_call* call) {
  const int64_t rows = call->inputs[0].shape[0], cols = call->inputs[0].shape[1];
  for (Seen& s : seen) {
    if (s.calls == 0) s = {rows, cols, 0};
    if (s.rows != rows || s.cols != cols) continue;
    if (++s.calls > 40) return AK_OK;
    break;
  }
  return test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum; });
}
