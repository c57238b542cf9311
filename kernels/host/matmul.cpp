// matmul (host starter kernel): C[M, N] = A[M, K] · B[K, N], all in one dtype (fp32, fp16 or
// bf16), accumulated in float. B is contiguous, or the transposed view of a contiguous [N, K]
// buffer (a Linear's weight: strides 1 and K), which the panel copy gathers.
//
// One variant: cache-blocked i-k-j. C is cut into BLOCK_M x BLOCK_N tiles spread over OpenMP
// threads; each tile walks K in slices of BLOCK_K, copying the slice of B into a contiguous float
// panel and adding A[i, k] * panel[k, :] into a row of partial sums that the compiler
// vectorizes. Each slice's partial sums go into the tile's accumulator, so a dot product is a sum
// of K / BLOCK_K short float sums rather than one long one. Tuning parameters:
//   BLOCK_M  rows of C per tile: how many rows reuse one packed B panel
//   BLOCK_N  columns of C per tile: the length of the vectorized inner loop
//   BLOCK_K  depth of a B panel: BLOCK_K x BLOCK_N floats should stay in cache
//
// @tune BLOCK_M: 8, 32
// @tune BLOCK_N: 64, 256, 1024
// @tune BLOCK_K: 32, 128, 512
// @require (BLOCK_N <= N || BLOCK_N == 64) && (BLOCK_K <= K || BLOCK_K == 32)
#include "autokernel/host_kernel.h"

#ifndef BLOCK_M
#define BLOCK_M 32
#endif
#ifndef BLOCK_N
#define BLOCK_N 256
#endif
#ifndef BLOCK_K
#define BLOCK_K 128
#endif

namespace {

using namespace ak::host;

struct Dims {
  int64_t m, n, k;
  bool b_nk;  // B held as [N, K]
};

// Adds a[k] * panel[k, :] over the slice into partial[0, width).
void multiply_slice(const float* __restrict a, const float* __restrict panel, int64_t depth, int64_t width,
                    float* __restrict partial) {
  for (int64_t j = 0; j < width; ++j) partial[j] = 0.0f;
  for (int64_t k = 0; k < depth; ++k) {
    const float a_k = a[k];
    const float* __restrict b = panel + k * width;
    for (int64_t j = 0; j < width; ++j) partial[j] += a_k * b[j];
  }
}

// Computes the tile of C at rows [i0, i1), columns [j0, j0 + width). scratch holds the B panel,
// the tile accumulator, one row of partial sums and one converted slice of a row of A.
template <class T>
void compute_tile(const T* a, const T* b, T* c, Dims dims, int64_t i0, int64_t i1, int64_t j0, int64_t width,
                  float* scratch) {
  const int64_t block_k = std::min<int64_t>(BLOCK_K, dims.k);
  float* panel = scratch;
  float* accumulator = panel + block_k * width;
  float* partial = accumulator + (i1 - i0) * width;
  float* a_slice = partial + width;
  for (int64_t e = 0; e < (i1 - i0) * width; ++e) accumulator[e] = 0.0f;

  for (int64_t k0 = 0; k0 < dims.k; k0 += block_k) {
    const int64_t depth = std::min(block_k, dims.k - k0);
    if (dims.b_nk) {
      for (int64_t j = 0; j < width; ++j)
        for (int64_t k = 0; k < depth; ++k) panel[k * width + j] = to_float(b[(j0 + j) * dims.k + k0 + k]);
    } else {
      for (int64_t k = 0; k < depth; ++k) to_floats(b + (k0 + k) * dims.n + j0, width, panel + k * width);
    }
    for (int64_t i = i0; i < i1; ++i) {
      multiply_slice(float_view(a + i * dims.k + k0, depth, a_slice), panel, depth, width, partial);
      float* __restrict row = accumulator + (i - i0) * width;
      for (int64_t j = 0; j < width; ++j) row[j] += partial[j];
    }
  }
  for (int64_t i = i0; i < i1; ++i) from_floats(accumulator + (i - i0) * width, width, c + i * dims.n + j0);
}

template <class T>
int matmul(const ak_call* call) {
  const ak_tensor& a = call->inputs[0];
  const ak_tensor& b = call->inputs[1];
  const bool b_nk = !usable(b);  // then usable_transposed (valid_call)
  const Dims dims{a.shape[0], b.shape[1], a.shape[1], b_nk};
  if (a.ndim != 2 || !has_shape(b, {dims.k, dims.n}) || !has_shape(call->outputs[0], {dims.m, dims.n}))
    return AK_ERR_UNSUPPORTED;
  const int64_t block_m = std::min<int64_t>(BLOCK_M, dims.m);
  const int64_t block_n = std::min<int64_t>(BLOCK_N, dims.n);
  const int64_t block_k = std::min<int64_t>(BLOCK_K, dims.k);
  const int64_t tiles_m = ceil_div(dims.m, block_m), tiles_n = ceil_div(dims.n, block_n);
  const T* a_data = static_cast<const T*>(a.data);
  const T* b_data = static_cast<const T*>(call->inputs[1].data);
  T* c_data = static_cast<T*>(call->outputs[0].data);

  ThreadScratch scratch(block_k * block_n + block_m * block_n + block_n + block_k);
#pragma omp parallel
  {
    float* mine = scratch.mine();
#pragma omp for schedule(static) collapse(2)
    for (int64_t tm = 0; tm < tiles_m; ++tm) {
      for (int64_t tn = 0; tn < tiles_n; ++tn) {
        const int64_t i0 = tm * block_m, j0 = tn * block_n;
        compute_tile(a_data, b_data, c_data, dims, i0, std::min(i0 + block_m, dims.m), j0,
                     std::min(block_n, dims.n - j0), mine);
      }
    }
  }
  return AK_OK;
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (!valid_call(call, 2, 1, 0, /*transposable=*/1) ||
      !all_dtype({&call->inputs[1], &call->outputs[0]}, call->inputs[0].dtype))
    return AK_ERR_UNSUPPORTED;
  return guarded([&] {
    return dispatch(call->inputs[0].dtype,
                    [&](auto tag) { return matmul<typename decltype(tag)::type>(call); });
  });
}
