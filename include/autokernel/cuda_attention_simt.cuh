// The arguments every variant of kernels/cuda/flash_attention.cu takes, and its simt variant: the
// fallback for what the tensor-core variants cannot take (fp32, head dims other than 64 and 128,
// unaligned views). C++17, header-only, no state.
//
// simt: a block of 128 threads owns 32 query rows of one head (4 threads per row, each holding a
// quarter of the output columns) and walks the keys 32 at a time through fp32 shared-memory
// tiles: scores by plain FMAs, an online base-2 softmax per row, P V accumulated in registers,
// one division at the end. Deterministic: every output element is written once by one thread.
#pragma once

#include <stdint.h>

#include "autokernel/cuda_attention.cuh"
#include "autokernel/cuda_kernel.cuh"

namespace ak_attention {

using namespace ak_cuda;

struct Strides {
  int64_t b, h, s;  // in elements; the inner (D) stride is 1
};

template <typename T>
struct AttentionArgs {
  const T* q;
  const T* k;
  const T* v;
  T* o;
  Strides qs, ks, vs, os;
  int group;  // query heads per key/value head
  int seq, dim;
  float scale_log2;  // scale * log2(e)
  bool causal;
};

// The rows of one (batch, head) of a tensor.
template <typename T>
__device__ __forceinline__ T* head_rows(T* base, const Strides& s, int b, int h) {
  return base + static_cast<int64_t>(b) * s.b + static_cast<int64_t>(h) * s.h;
}

// The query tile of this block: the last tiles (with the most keys when causal) start first.
__device__ __forceinline__ int query_tile() {
  return static_cast<int>(gridDim.x - 1 - blockIdx.x);
}

// Keys a query tile starting at m0 of `rows` rows looks at: [0, key_end).
__device__ __forceinline__ int key_end(int m0, int rows, int seq, bool causal) {
  return causal ? min(seq, m0 + rows) : seq;
}

// ------------------------------------------------------------------------------------------------
// simt variant

constexpr int kSimtRows = 32, kSimtKeys = 32, kSimtThreads = 128;  // 4 threads per query row

// Shared-memory floats: Q and K rows padded to an odd length (no bank conflicts across rows),
// V rows, and the tile's probabilities (rows padded by one).
__host__ __device__ __forceinline__ int simt_pitch(int dim) {
  return dim | 1;
}
__host__ __device__ __forceinline__ int simt_smem_floats(int dim) {
  return (kSimtRows + kSimtKeys) * simt_pitch(dim) + kSimtKeys * dim + kSimtRows * (kSimtKeys + 1);
}

// Rows [first, first + count) of a head into shared floats with row pitch `pitch`, zero past end.
template <typename T>
__device__ __forceinline__ void load_rows_f32(float* dst, int pitch, const T* src, int64_t row_stride,
                                              int first, int count, int end, int dim) {
  for (int id = static_cast<int>(threadIdx.x); id < count * dim; id += kSimtThreads) {
    const int row = id / dim, d = id % dim;
    dst[row * pitch + d] =
        first + row < end ? to_float(src[static_cast<int64_t>(first + row) * row_stride + d]) : 0.0f;
  }
}

// DMax: the largest D this instance handles; each thread holds DMax / 4 output columns.
template <typename T, int DMax>
__global__ void __launch_bounds__(kSimtThreads) attention_simt(AttentionArgs<T> a) {
  constexpr int kCols = DMax / 4;
  extern __shared__ float fsmem[];
  const int dim = a.dim, pitch = simt_pitch(dim);
  float* const sq = fsmem;
  float* const sk = sq + kSimtRows * pitch;
  float* const sv = sk + kSimtKeys * pitch;
  float* const sp = sv + kSimtKeys * dim;

  const int m0 = query_tile() * kSimtRows;
  const int h = blockIdx.y, b = blockIdx.z, kv_h = h / a.group;
  const T* k = head_rows(a.k, a.ks, b, kv_h);
  const T* v = head_rows(a.v, a.vs, b, kv_h);
  const int r = static_cast<int>(threadIdx.x) / 4, quarter = static_cast<int>(threadIdx.x) % 4;
  const int row = m0 + r;
  load_rows_f32(sq, pitch, head_rows(a.q, a.qs, b, h), a.qs.s, m0, kSimtRows, a.seq, dim);

  float acc[kCols] = {};
  RowState state;
  const int end = key_end(m0, kSimtRows, a.seq, a.causal);
#pragma unroll 1
  for (int n0 = 0; n0 < end; n0 += kSimtKeys) {
    __syncthreads();  // the previous tile's readers are done (and Q has landed)
    load_rows_f32(sk, pitch, k, a.ks.s, n0, kSimtKeys, a.seq, dim);
    load_rows_f32(sv, dim, v, a.vs.s, n0, kSimtKeys, a.seq, dim);
    __syncthreads();
    float s[kSimtKeys / 4] = {};  // keys quarter + 4 j
#pragma unroll 4
    for (int d = 0; d < dim; ++d) {
      const float qd = sq[r * pitch + d];
#pragma unroll
      for (int j = 0; j < kSimtKeys / 4; ++j) s[j] = fmaf(qd, sk[(quarter + 4 * j) * pitch + d], s[j]);
    }
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kSimtKeys / 4; ++j) {
      const int key = n0 + quarter + 4 * j;
      s[j] = key >= a.seq || (a.causal && key > row) ? -INFINITY : s[j] * a.scale_log2;
      tile_max = fmaxf(tile_max, s[j]);
    }
    float shift;
    const float rescale = state.update(quad_max(tile_max), shift);
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[c] *= rescale;
#pragma unroll
    for (int j = 0; j < kSimtKeys / 4; ++j) {
      const float p = fast_exp2(s[j] - shift);
      state.sum += p;
      sp[r * (kSimtKeys + 1) + quarter + 4 * j] = p;
    }
    __syncwarp();  // a row's probabilities come from the 4 threads of its quad, in this warp
#pragma unroll 1
    for (int key = 0; key < kSimtKeys; ++key) {
      const float p = sp[r * (kSimtKeys + 1) + key];
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int d = quarter + 4 * c;
        if (d < dim) acc[c] = fmaf(p, sv[key * dim + d], acc[c]);
      }
    }
  }
  const float inv = 1.0f / quad_sum(state.sum);
  if (row >= a.seq) return;
  T* o = head_rows(a.o, a.os, b, h) + static_cast<int64_t>(row) * a.os.s;
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    const int d = quarter + 4 * c;
    if (d < dim) o[d] = from_float<T>(acc[c] * inv);
  }
}

}  // namespace ak_attention
