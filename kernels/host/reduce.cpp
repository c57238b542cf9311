// reduce (host starter kernel): y[r] = sum of x[r, :]. Input x[M, N]; output y[M] in the dtype of
// x; fp32, fp16 and bf16. Sums accumulate in double, so cancellation inside a row costs nothing.
//
// One variant: rows are spread over OpenMP threads, each row summed by one thread. Tuning
// parameters:
//   VEC            independent accumulators per row (vector width of the sum)
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

template <class T>
int reduce(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  const int64_t rows = x.shape[0], n = x.shape[1];
  if (x.ndim != 2 || !has_shape(call->outputs[0], {rows})) return AK_ERR_UNSUPPORTED;
  const T* x_data = static_cast<const T*>(x.data);
  T* y_data = static_cast<T*>(call->outputs[0].data);

  ThreadScratch scratch(n);  // a converted input row
#pragma omp parallel
  {
    float* in_row = scratch.mine();
#pragma omp for schedule(static, ROWS_PER_TASK)
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = float_view(x_data + r * n, n, in_row);
      const double sum = lane_sum<VEC, double>(n, [&](int64_t i) { return row[i]; });
      y_data[r] = from_float<T>(static_cast<float>(sum));
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
                    [&](auto tag) { return reduce<typename decltype(tag)::type>(call); });
  });
}
