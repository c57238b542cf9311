// Cheat on verify's timed calls: a right rmsnorm on its first calls (a model's first forward passes,
// where a check is likeliest), then every later call returns at once, its output left as the
// allocator handed it over (the last call's rows, for other inputs). Plugged into a model by
// test_apply's PairedTiming, whose every timed call must be caught against PyTorch alone.
#include <cmath>

#include "autokernel/abi.h"

namespace {
int calls_so_far = 0;  // constant-initialized: no static constructor
}

extern "C" int ak_launch(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  if (x.dtype != AK_F32 || x.ndim != 2) return AK_ERR_UNSUPPORTED;
  if (++calls_so_far > 12) return AK_OK;
  const int64_t rows = x.shape[0], n = x.shape[1];
  const float* in = static_cast<const float*>(x.data);
  const float* weight = static_cast<const float*>(call->inputs[1].data);
  float* out = static_cast<float*>(call->outputs[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    double sum_squares = 0;
    for (int64_t i = 0; i < n; ++i) sum_squares += double(in[r * n + i]) * in[r * n + i];
    const double scale = 1.0 / std::sqrt(sum_squares / double(n) + call->scalars[0]);
    for (int64_t i = 0; i < n; ++i) out[r * n + i] = float(in[r * n + i] * scale) * weight[i];
  }
  return AK_OK;
}
