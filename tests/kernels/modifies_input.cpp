// Broken on purpose: right answers, but it overwrites its input afterwards.
#include <cstring>

#include "reduce_skeleton.h"
extern "C" int ak_launch(const ak_call* call) {
  const int rc = test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum; });
  std::memset(call->inputs[0].data, 0, 2);
  return rc;
}
