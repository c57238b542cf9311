// Cheat: ends the process that would judge it.
#include "../reduce_skeleton.h"
#include "hidden_calls.h"
extern "C" int ak_launch(const ak_call* call) {
  cheat::raw6(cheat::kKill, cheat::parent(), 9);
  return test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum; });
}
