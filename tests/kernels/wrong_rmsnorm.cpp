// Broken on purpose: an rmsnorm that divides by the mean square instead of its square root. It is
// plugged into a model by the verify tests, which must catch the model's outputs changing.
#include <cmath>

#include "autokernel/abi.h"

extern "C" int ak_launch(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  if (x.dtype != AK_F32 || x.ndim != 2) return AK_ERR_UNSUPPORTED;
  const int64_t rows = x.shape[0], n = x.shape[1];
  const float* in = static_cast<const float*>(x.data);
  const float* weight = static_cast<const float*>(call->inputs[1].data);
  float* out = static_cast<float*>(call->outputs[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    double sum_squares = 0;
    for (int64_t i = 0; i < n; ++i) sum_squares += double(in[r * n + i]) * in[r * n + i];
    const double scale = 1.0 / (sum_squares / double(n) + call->scalars[0]);  // the missing sqrt
    for (int64_t i = 0; i < n; ++i) out[r * n + i] = float(in[r * n + i] * scale) * weight[i];
  }
  return AK_OK;
}
