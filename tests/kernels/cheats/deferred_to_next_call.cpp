// Cheat: on the timed problem, writes the last row only at the next call, so each launch looks
// shorter by the work it leaves behind (and the batch's last launch never finishes it).
#include <cstring>

#include "../reduce_skeleton.h"
static ak_call owed{};
static bool owing = false;
extern "C" int ak_launch(const ak_call* call) {
  if (owing) test_kernels::reduce_rows(&owed, 0, [](int64_t, double sum) { return sum; });
  owing = false;
  const bool timed = call->inputs[0].shape[0] >= 96;
  const int rc = test_kernels::reduce_rows(call, timed ? -1 : 0, [](int64_t, double sum) { return sum; });
  if (timed) {
    owed = *call;
    owing = true;
  }
  return rc;
}
