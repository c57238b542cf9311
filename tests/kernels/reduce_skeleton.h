// Shared body of the test kernels in this folder: a correct host reduce (y[r] = sum of x[r, :])
// with hooks, so that each broken kernel is a one-line deviation from a working one.
#pragma once

#include "autokernel/host_kernel.h"

namespace test_kernels {

using namespace ak::host;

// The exact sum of a row of n elements.
template <class T>
double row_sum(const T* row, int64_t n) {
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += to_float(row[j]);
  return sum;
}

// Writes y[r] = value(r, row r of x, n) for every row r < rows + row_delta.
template <class Value>
int map_rows(const ak_call* call, int64_t row_delta, Value value) {
  if (!valid_call(call, 1, 1, 0)) return AK_ERR_UNSUPPORTED;
  const ak_tensor& x = call->inputs[0];
  const int64_t rows = x.shape[0], n = x.shape[1];
  return dispatch(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(x.data);
    T* out = static_cast<T*>(call->outputs[0].data);
    for (int64_t r = 0; r < rows + row_delta; ++r)
      out[r] = from_float<T>(static_cast<float>(value(r, in + r * n, n)));
    return AK_OK;
  });
}

// Writes y[r] = finish(r, exact row sum) for every row r < rows + row_delta.
template <class Finish>
int reduce_rows(const ak_call* call, int64_t row_delta, Finish finish) {
  return map_rows(call, row_delta,
                  [&](int64_t r, const auto* row, int64_t n) { return finish(r, row_sum(row, n)); });
}

// How many calls of x's shape this one is (1 for the first): a check repeats a shape a few
// times, the timed runs many times.
inline int calls_of_shape(const ak_call* call) {
  struct Seen {
    int64_t rows = 0, cols = 0;
    int calls = 0;
  };
  static Seen seen[64];
  const int64_t rows = call->inputs[0].shape[0], cols = call->inputs[0].shape[1];
  for (Seen& s : seen) {
    if (s.calls == 0) s = {rows, cols, 0};
    if (s.rows == rows && s.cols == cols) return ++s.calls;
  }
  return 1;
}

}  // namespace test_kernels
