// Broken on purpose: writes zeros everywhere (passes any absolute tolerance on small outputs).
#include "reduce_skeleton.h"
extern "C" int ak_launch(const ak_call* call) {
  return test_kernels::reduce_rows(call, 0, [](int64_t, double) { return 0.0; });
}
