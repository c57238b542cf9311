// A matmul that reads B as row-major [K, N] whatever its strides say: right for a plain B, wrong
// for a Linear's weight (matmul's b_nk = 1), which the harness must present as a transposed view.
#include "autokernel/host_kernel.h"

extern "C" int ak_launch(const ak_call* call) {
  if (call == nullptr || call->n_inputs != 2 || call->n_outputs != 1 || call->inputs[0].dtype != AK_F32)
    return AK_ERR_UNSUPPORTED;
  const ak_tensor& a = call->inputs[0];
  const int64_t m = a.shape[0], k = a.shape[1], n = call->inputs[1].shape[1];
  const float* a_data = static_cast<const float*>(a.data);
  const float* b_data = static_cast<const float*>(call->inputs[1].data);
  float* c = static_cast<float*>(call->outputs[0].data);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t kk = 0; kk < k; ++kk) sum += a_data[i * k + kk] * b_data[kk * n + j];
      c[i * n + j] = sum;
    }
  return AK_OK;
}
