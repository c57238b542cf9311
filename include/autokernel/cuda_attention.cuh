// Warp-level tensor-core pieces for attention-style CUDA kernels (kernels/cuda/flash_attention.cu).
// C++17, header-only, no state; sm_80 and later (cp.async, ldmatrix, mma.sync).
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16" with .f16/.bf16 inputs): with
// g = lane / 4 and t = lane % 4,
//   A (16 x 16, row-major), four 32-bit registers of two 16-bit values each (low half = lower
//     column): a0 (row g, cols 2t, 2t+1), a1 (row g+8, same cols), a2 (row g, cols 2t+8, 2t+9),
//     a3 (row g+8, cols 2t+8, 2t+9).
//   B (16 x 8, "col"), two registers: b0 (rows 2t, 2t+1 of col g), b1 (rows 2t+8, 2t+9 of col g).
//   C/D (16 x 8, f32), four floats: c0, c1 (row g, cols 2t, 2t+1), c2, c3 (row g+8, same cols).
// ldmatrix.x4 loads four 8 x 8 matrices of 16-bit values; lanes 8i..8i+7 give the row addresses
// of matrix i, and each lane receives, in register i, two adjacent values of row g (cols 2t,
// 2t+1) of matrix i; with .trans it receives rows 2t and 2t+1 of column g instead.
//
// What is here:
//   Tile<T, Rows, Dim>        a Rows x Dim row-major tile of 16-bit T in shared memory, rows padded
//                             so that ldmatrix and 16-byte accesses are free of bank conflicts
//   cp_async16, cp_async_commit, cp_async_wait<N>
//                             16-byte asynchronous global-to-shared copies, zero-filled when the
//                             source is out of range
//   ldmatrix_x4, ldmatrix_x4_trans, mma_16816<T>, pack2<T>
//   quad_max, quad_sum        reductions over the 4 lanes that share a row of an mma tile
//   RowState                  running maximum and sum of one row of an online (base-2) softmax
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "autokernel/cuda_kernel.cuh"

namespace ak_cuda {

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Copies 16 bytes from global `src` to shared `dst` asynchronously, or writes 16 zero bytes to
// `dst` when !in_range (nothing is read then; `src` must still be a valid address to form).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool in_range) {
  const int src_bytes = in_range ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(src_bytes)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most `Pending` of this thread's committed groups are still in flight.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row_address)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row_address)));
}

// d += a * b for one m16n8k16 tile with fp32 accumulators (layouts in the header comment).
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);

template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                  uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats rounded to 16-bit T in one register: `lo` in the low half (the lower column).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);

template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// A Rows x Dim tile of 16-bit values in shared memory, rows padded by one 16-byte chunk: the row
// pitch is then an odd number of chunks modulo the 8 chunks of the 128-byte bank line, so the 8
// row addresses of one ldmatrix (and 8 lanes' 16-byte accesses to 8 rows) hit 8 different bank
// groups. Addresses stay linear in row and column, so unrolled loops use immediate offsets.
template <typename T, int Rows, int Dim>
struct Tile {
  static_assert(sizeof(T) == 2 && Dim % 16 == 0, "16-bit values, rows of whole k-steps");
  static constexpr int kChunks = Dim / 8;  // 16-byte chunks per row
  static constexpr int kPitch = Dim + 8;   // elements from one row to the next
  static constexpr int kElements = Rows * kPitch;
  T* base;

  // The element offset of chunk `chunk` of row `row`.
  __device__ __forceinline__ static int offset(int row, int chunk) { return row * kPitch + chunk * 8; }
  __device__ __forceinline__ T* chunk(int row, int chunk) const { return base + offset(row, chunk); }

  // Starts the copy of rows [first, first + Rows) of a matrix whose row r is at src + r *
  // row_stride (16-byte aligned); rows at or past `end` are zero-filled. Every thread of a block
  // of Threads threads calls it.
  template <int Threads>
  __device__ __forceinline__ void load_async(const T* src, int64_t row_stride, int first, int end) const {
    static_assert((Rows * kChunks) % Threads == 0, "whole chunks per thread");
#pragma unroll
    for (int i = 0; i < Rows * kChunks / Threads; ++i) {
      const int id = static_cast<int>(threadIdx.x) + i * Threads;
      const int row = id / kChunks, c = id % kChunks;
      const bool in_range = first + row < end;
      const T* from = src + (in_range ? static_cast<int64_t>(first + row) * row_stride + c * 8 : 0);
      cp_async16(chunk(row, c), from, in_range);
    }
  }
};

// Reductions over the 4 lanes of a quad (lanes 4g .. 4g+3: the threads sharing rows of an mma tile).
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// The online-softmax state of one query row: running maximum (base-2 scaled scores) and sum.
struct RowState {
  float max = -INFINITY;
  float sum = 0.0f;

  // Takes a tile's maximum and returns the factor that rescales what was accumulated so far;
  // `shift` is what to subtract from this tile's scores before exp2 (0 while every key so far
  // is masked, so that exp2(-inf - shift) stays 0 and never NaN).
  __device__ __forceinline__ float update(float tile_max, float& shift) {
    const float new_max = fmaxf(max, tile_max);
    shift = new_max == -INFINITY ? 0.0f : new_max;
    const float rescale = fast_exp2(max - shift);  // exp2(-inf) = 0 on the first tile
    max = new_max;
    sum *= rescale;
    return rescale;
  }
  // update, keeping the maximum unless tile_max exceeds it by more than `slack`: the caller's
  // exponentials then stay below 2^slack, and the factor is exactly 1 while the maximum stays.
  __device__ __forceinline__ float update_lazy(float tile_max, float slack, float& shift) {
    if (tile_max > max + slack) return update(tile_max, shift);
    shift = max == -INFINITY ? 0.0f : max;
    return 1.0f;
  }
};

}  // namespace ak_cuda
