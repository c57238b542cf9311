// Shared body of the test kernels that use the workspace fused_mlp's signature gives (abi.h): a
// plain host fused_mlp whose intermediate h[M, F], rounded to x's dtype, goes through
// call->workspace between its two products, with a hook that may skip the first product.
#pragma once

#include <cmath>

#include "autokernel/host_kernel.h"

namespace test_kernels {

using namespace ak::host;

// y = h w_down^T with h = silu(x w_gate^T) * (x w_up^T) in the workspace; compute_h(call) says
// whether to write h (an honest kernel always does).
template <class ComputeH>
int mlp_through_workspace(const ak_call* call, ComputeH compute_h) {
  if (!valid_call(call, 4, 1, 0)) return AK_ERR_UNSUPPORTED;
  const ak_tensor& x = call->inputs[0];
  const int64_t m = x.shape[0], d = x.shape[1], f = call->inputs[1].shape[0];
  return dispatch(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (call->workspace == nullptr || call->workspace_bytes < m * f * static_cast<int64_t>(sizeof(T)))
      return AK_ERR_UNSUPPORTED;
    const T *in = static_cast<const T*>(x.data), *gate = static_cast<const T*>(call->inputs[1].data),
            *up = static_cast<const T*>(call->inputs[2].data),
            *down = static_cast<const T*>(call->inputs[3].data);
    T* h = static_cast<T*>(call->workspace);
    if (compute_h(call))
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < f; ++j) {
          float g = 0, u = 0;
          for (int64_t k = 0; k < d; ++k) {
            g += to_float(in[i * d + k]) * to_float(gate[j * d + k]);
            u += to_float(in[i * d + k]) * to_float(up[j * d + k]);
          }
          h[i * f + j] = from_float<T>(g / (1.0f + std::exp(-g)) * u);
        }
    T* y = static_cast<T*>(call->outputs[0].data);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t k = 0; k < d; ++k) {
        float sum = 0;
        for (int64_t j = 0; j < f; ++j) sum += to_float(h[i * f + j]) * to_float(down[k * f + j]);
        y[i * d + k] = from_float<T>(sum);
      }
    return AK_OK;
  });
}

}  // namespace test_kernels
