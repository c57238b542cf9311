// fused_mlp (host starter kernel), the SwiGLU feed-forward block:
//   h = silu(x · w_gateᵀ) ⊙ (x · w_upᵀ),   y = h · w_downᵀ,   silu(a) = a / (1 + e^-a).
// Inputs x[M, D], w_gate[F, D], w_up[F, D], w_down[D, F]; output y[M, D]; all one dtype (fp32,
// fp16 or bf16). h stays in float between the two products (never rounded to the dtype).
//
// One variant: x is cut into blocks of BLOCK_M rows spread over OpenMP threads; a thread does
// both products for its block, so h never leaves the thread's scratch. Every weight matrix is
// stored with the reduced dimension contiguous, so each output is a dot product of two
// contiguous rows; weights are taken BLOCK_N rows at a time and reused by all rows of the block.
// Tuning parameters:
//   BLOCK_M  rows of x per block: how many rows reuse each block of weight rows
//   BLOCK_N  weight rows per block: how much of the weights stays in cache for those rows
//   VEC      independent accumulators in each dot product (vector width)
//
// @tune BLOCK_M: 2, 8, 32
// @tune BLOCK_N: 16, 64
// @tune VEC: 1, 8
// @require BLOCK_M <= M || BLOCK_M == 2
#include "autokernel/host_kernel.h"

#ifndef BLOCK_M
#define BLOCK_M 32
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef VEC
#define VEC 8
#endif

namespace {

using namespace ak::host;

struct Dims {
  int64_t m, d, f;
};

template <class T>
struct Weights {
  const T* gate;
  const T* up;
  const T* down;
};

// Per-thread float scratch, carved from one buffer.
struct Scratch {
  float* x;        // BLOCK_M x D, the block of x
  float* h;        // BLOCK_M x F
  float* y;        // BLOCK_M x D
  float* weights;  // BLOCK_N rows of gate and of up (2 x BLOCK_N x D), or of down (BLOCK_N x F)

  static int64_t floats(int64_t block_m, int64_t block_n, Dims dims) {
    return 2 * block_m * dims.d + block_m * dims.f + block_n * std::max(2 * dims.d, dims.f);
  }
  Scratch(float* base, int64_t block_m, Dims dims)
      : x(base), h(x + block_m * dims.d), y(h + block_m * dims.f), weights(y + block_m * dims.d) {}
};

// h[rows, :] = silu(x · gateᵀ) ⊙ (x · upᵀ) for the block's rows.
template <class T>
void gate_and_up(const float* x, int64_t rows, const Weights<T>& w, Dims dims, int64_t block_n, Scratch& s) {
  for (int64_t f0 = 0; f0 < dims.f; f0 += block_n) {
    const int64_t count = std::min(block_n, dims.f - f0);
    const float* gate = float_view(w.gate + f0 * dims.d, count * dims.d, s.weights);
    const float* up = float_view(w.up + f0 * dims.d, count * dims.d, s.weights + count * dims.d);
    for (int64_t i = 0; i < rows; ++i) {
      const float* x_row = x + i * dims.d;
      for (int64_t f = 0; f < count; ++f) {
        const float g = dot<VEC>(x_row, gate + f * dims.d, dims.d);
        const float u = dot<VEC>(x_row, up + f * dims.d, dims.d);
        s.h[i * dims.f + f0 + f] = g / (1.0f + fast_exp(-g)) * u;
      }
    }
  }
}

// out[rows, :] = h · downᵀ for the block's rows.
template <class T>
void down(int64_t rows, const T* w_down, Dims dims, int64_t block_n, Scratch& s, float* out) {
  for (int64_t d0 = 0; d0 < dims.d; d0 += block_n) {
    const int64_t count = std::min(block_n, dims.d - d0);
    const float* weights = float_view(w_down + d0 * dims.f, count * dims.f, s.weights);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t d = 0; d < count; ++d)
        out[i * dims.d + d0 + d] = dot<VEC>(s.h + i * dims.f, weights + d * dims.f, dims.f);
  }
}

template <class T>
int fused_mlp(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  const Dims dims{x.shape[0], x.shape[1], call->inputs[1].shape[0]};
  if (x.ndim != 2 || !has_shape(call->inputs[1], {dims.f, dims.d}) ||
      !has_shape(call->inputs[2], {dims.f, dims.d}) || !has_shape(call->inputs[3], {dims.d, dims.f}) ||
      !has_shape(call->outputs[0], {dims.m, dims.d}))
    return AK_ERR_UNSUPPORTED;
  const Weights<T> weights{static_cast<const T*>(call->inputs[1].data),
                           static_cast<const T*>(call->inputs[2].data),
                           static_cast<const T*>(call->inputs[3].data)};
  const T* x_data = static_cast<const T*>(x.data);
  T* y_data = static_cast<T*>(call->outputs[0].data);
  const int64_t block_m = std::min<int64_t>(BLOCK_M, dims.m);
  const int64_t block_n = BLOCK_N;

  ThreadScratch scratch(Scratch::floats(block_m, block_n, dims));
#pragma omp parallel
  {
    Scratch s(scratch.mine(), block_m, dims);
#pragma omp for schedule(static)
    for (int64_t block = 0; block < ceil_div(dims.m, block_m); ++block) {
      const int64_t i0 = block * block_m, rows = std::min(block_m, dims.m - i0);
      const float* x_block = float_view(x_data + i0 * dims.d, rows * dims.d, s.x);
      gate_and_up(x_block, rows, weights, dims, block_n, s);
      T* y_block = y_data + i0 * dims.d;
      float* out = output_view(y_block, s.y);
      down(rows, weights.down, dims, block_n, s, out);
      store_outputs(out, rows * dims.d, y_block);
    }
  }
  return AK_OK;
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (!valid_call(call, 4, 1, 0) ||
      !all_dtype({&call->inputs[1], &call->inputs[2], &call->inputs[3], &call->outputs[0]},
                 call->inputs[0].dtype))
    return AK_ERR_UNSUPPORTED;
  return guarded([&] {
    return dispatch(call->inputs[0].dtype,
                    [&](auto tag) { return fused_mlp<typename decltype(tag)::type>(call); });
  });
}
