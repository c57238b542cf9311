// Cheat: load-time code through a global object's constructor (no attribute, no section name
// for the lint to see) that starts a process to work outside the sandbox's reach.
#include "../reduce_skeleton.h"
#include "hidden_calls.h"
struct Helper {
  Helper() {
    if (cheat::raw6(cheat::kFork) == 0) cheat::raw6(cheat::kExitGroup, 0);
  }
};
static Helper helper;
extern "C" int ak_launch(const ak_call* call) {
  return test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum; });
}
