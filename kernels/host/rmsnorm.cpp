// rmsnorm (host starter kernel): y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight.
// Inputs x[M, N], weight[N]; scalar eps; output y[M, N] in the dtype of x; fp32, fp16, bf16.
//
// One variant: rows are spread over OpenMP threads; each row is a sum-of-squares pass (in
// double, so rows of large values neither overflow nor lose digits) and a scale pass.
// Tuning parameters:
//   VEC            independent accumulators in the sum of squares (vector width)
//   ROWS_PER_TASK  rows per OpenMP chunk
//
// @tune VEC: 1, 4, 8, 16
// @tune ROWS_PER_TASK: 1, 16
// @require ROWS_PER_TASK <= M || ROWS_PER_TASK == 1
#include "autokernel/host_kernel.h"

#ifndef VEC
#define VEC 8
#endif
#ifndef ROWS_PER_TASK
#define ROWS_PER_TASK 1
#endif

namespace {

using namespace ak::host;

void rmsnorm_row(const float* __restrict x, const float* __restrict weight, int64_t n, double eps,
                 float* __restrict y) {
  const double sum_squares = lane_sum<VEC, double>(n, [&](int64_t i) {
    const double v = x[i];
    return v * v;
  });
  const float inverse_rms = static_cast<float>(1.0 / std::sqrt(sum_squares / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inverse_rms * weight[i];
}

template <class T>
int rmsnorm(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  const int64_t rows = x.shape[0], n = x.shape[1];
  if (x.ndim != 2 || !has_shape(call->inputs[1], {n}) || !has_shape(call->outputs[0], {rows, n}))
    return AK_ERR_UNSUPPORTED;
  std::vector<float> weight;
  if (!copy_as_floats(call->inputs[1], weight)) return AK_ERR_UNSUPPORTED;
  const double eps = call->scalars[0];
  const T* x_data = static_cast<const T*>(x.data);
  T* y_data = static_cast<T*>(call->outputs[0].data);

  ThreadScratch scratch(2 * n);  // a converted input row and a float output row
#pragma omp parallel
  {
    float* in_row = scratch.mine();
    float* out_row = in_row + n;
#pragma omp for schedule(static, ROWS_PER_TASK)
    for (int64_t r = 0; r < rows; ++r) {
      T* y_row = y_data + r * n;
      float* out = output_view(y_row, out_row);
      rmsnorm_row(float_view(x_data + r * n, n, in_row), weight.data(), n, eps, out);
      store_outputs(out, n, y_row);
    }
  }
  return AK_OK;
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (!valid_call(call, 2, 1, 1) || call->inputs[0].dtype != call->outputs[0].dtype)
    return AK_ERR_UNSUPPORTED;
  return guarded([&] {
    return dispatch(call->inputs[0].dtype,
                    [&](auto tag) { return rmsnorm<typename decltype(tag)::type>(call); });
  });
}
