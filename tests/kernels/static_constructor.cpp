// Rejected by the lint: code that runs when the module is loaded, inside the harness process.
#include "reduce_skeleton.h"
__attribute__((constructor)) static void patch_the_harness() {}
extern "C" int ak_launch(const ak_call* call) {
  return test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum; });
}
