// Broken on purpose: every other call perturbs its answers by 5e-6 (relative): within every
// tolerance, visible in fp32 bits, so only the determinism stage catches it.
#include "reduce_skeleton.h"
static int calls = 0;
extern "C" int ak_launch(const ak_call* call) {
  const double scale = (calls++ % 2) ? 1.0 + 5e-6 : 1.0;
  return test_kernels::reduce_rows(call, 0, [&](int64_t, double sum) { return sum * scale; });
}
