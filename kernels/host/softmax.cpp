// softmax (host starter kernel): y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)).
// Inputs x[M, N]; output y[M, N] in the dtype of x; fp32, fp16 and bf16, computed in float.
//
// One variant: rows are spread over OpenMP threads; each row is four passes (max, exp, sum in
// double, scale). Tuning parameters:
//   VEC            independent accumulators in the max and sum passes (the vector width the
//                  compiler can use for them; 1 keeps the sum scalar)
//   ROWS_PER_TASK  rows per OpenMP chunk: small evens out the threads, large keeps neighbouring
//                  rows on one core
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

void softmax_row(const float* __restrict x, int64_t n, float* __restrict y) {
  const float row_max = lane_max<VEC>(x, n);
  exp_shifted(x, row_max, n, y);
  // A long row of near-equal values sums N values of about 1: the total keeps its digits in double.
  const double total = lane_sum<VEC, double>(n, [&](int64_t i) { return y[i]; });
  const float inverse = static_cast<float>(1.0 / total);
  for (int64_t i = 0; i < n; ++i) y[i] *= inverse;
}

template <class T>
int softmax(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  const ak_tensor& y = call->outputs[0];
  if (x.ndim != 2 || !has_shape(y, {x.shape[0], x.shape[1]})) return AK_ERR_UNSUPPORTED;
  const int64_t rows = x.shape[0], n = x.shape[1];
  const T* x_data = static_cast<const T*>(x.data);
  T* y_data = static_cast<T*>(y.data);

  ThreadScratch scratch(2 * n);  // a converted input row and a float output row
#pragma omp parallel
  {
    float* in_row = scratch.mine();
    float* out_row = in_row + n;
#pragma omp for schedule(static, ROWS_PER_TASK)
    for (int64_t r = 0; r < rows; ++r) {
      T* y_row = y_data + r * n;
      float* out = output_view(y_row, out_row);
      softmax_row(float_view(x_data + r * n, n, in_row), n, out);
      store_outputs(out, n, y_row);
    }
  }
  return AK_OK;
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (!valid_call(call, 1, 1, 0) || call->inputs[0].dtype != call->outputs[0].dtype)
    return AK_ERR_UNSUPPORTED;
  return guarded([&] {
    return dispatch(call->inputs[0].dtype,
                    [&](auto tag) { return softmax<typename decltype(tag)::type>(call); });
  });
}
