// rotary_embedding (host starter kernel): rotates each pair (x[i], x[i + D/2]) of a row at
// position s by the angle whose cosine and sine are cos[s, i] and sin[s, i]:
//   y[i] = x[i] cos - x[i + D/2] sin,   y[i + D/2] = x[i + D/2] cos + x[i] sin.
// Inputs x[B, H, S, D], cos[S, D/2], sin[S, D/2]; output y[B, H, S, D] in the dtype of x;
// fp32, fp16 and bf16. D must be even. x and y may be any views with whole rows ([B, S, H, D]
// buffers seen as [B, H, S, D] among them); the tables contiguous.
//
// Variants (ORDER):
//   0  rows in memory order: (b, h, s) outer to inner; a chunk of rows shares a head
//   1  positions outer: (s, b, h), so one cos/sin row serves B * H rows in a row
// Tuning parameters:
//   ORDER          as above
//   ROWS_PER_TASK  rows per OpenMP chunk
//
// @tune ORDER: 0, 1
// @tune ROWS_PER_TASK: 1, 8, 64, 512
// @require ROWS_PER_TASK <= B * H * S || ROWS_PER_TASK == 1
#include "autokernel/host_kernel.h"

#ifndef ORDER
#define ORDER 0
#endif
#ifndef ROWS_PER_TASK
#define ROWS_PER_TASK 8
#endif

namespace {

using namespace ak::host;

void rotate_row(const float* __restrict x, const float* __restrict cos, const float* __restrict sin,
                int64_t half, float* __restrict y) {
  for (int64_t i = 0; i < half; ++i) {
    y[i] = x[i] * cos[i] - x[i + half] * sin[i];
    y[i + half] = x[i + half] * cos[i] + x[i] * sin[i];
  }
}

template <class T>
int rotary_embedding(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  const int64_t batch = x.shape[0], heads = x.shape[1], seq = x.shape[2], dim = x.shape[3];
  const int64_t half = dim / 2;
  if (x.ndim != 4 || dim != 2 * half || !has_shape(call->inputs[1], {seq, half}) ||
      !has_shape(call->inputs[2], {seq, half}) || !has_shape(call->outputs[0], {batch, heads, seq, dim}))
    return AK_ERR_UNSUPPORTED;
  std::vector<float> cos, sin;
  if (!copy_as_floats(call->inputs[1], cos) || !copy_as_floats(call->inputs[2], sin))
    return AK_ERR_UNSUPPORTED;
  const T* x_data = static_cast<const T*>(x.data);
  const ak_tensor& y = call->outputs[0];
  T* y_data = static_cast<T*>(y.data);
  const int64_t rows = batch * heads * seq;
  // Row (b, h, s) of a view: b, h and s by its strides.
  auto row_of = [&](const ak_tensor& t, int64_t r) {
    return (r / (heads * seq)) * t.strides[0] + (r / seq % heads) * t.strides[1] + (r % seq) * t.strides[2];
  };

  ThreadScratch scratch(2 * dim);  // a converted input row and a float output row
#pragma omp parallel
  {
    float* in_row = scratch.mine();
    float* out_row = in_row + dim;
#pragma omp for schedule(static, ROWS_PER_TASK)
    for (int64_t task = 0; task < rows; ++task) {
      // ORDER 1 walks positions outermost; the row it lands on is the same set either way.
      const int64_t s = ORDER == 0 ? task % seq : task / (batch * heads);
      const int64_t r = ORDER == 0 ? task : (task % (batch * heads)) * seq + s;
      T* y_row = y_data + row_of(y, r);
      float* out = output_view(y_row, out_row);
      rotate_row(float_view(x_data + row_of(x, r), dim, in_row), cos.data() + s * half, sin.data() + s * half,
                 half, out);
      store_outputs(out, dim, y_row);
    }
  }
  return AK_OK;
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (!valid_rows_call(call, 3, 1, 0) || !usable(call->inputs[1]) || !usable(call->inputs[2]) ||
      call->inputs[0].dtype != call->outputs[0].dtype)
    return AK_ERR_UNSUPPORTED;
  return guarded([&] {
    return dispatch(call->inputs[0].dtype,
                    [&](auto tag) { return rotary_embedding<typename decltype(tag)::type>(call); });
  });
}
