// What the skinny products' kernels share (cuda_gemm_skinny.cuh on CUDA cores,
// cuda_gemm_skinny_mma.cuh on tensor cores): the block size, the one-time loads of B and where a
// split's sums go. C++17, header-only.
#pragma once

#include "autokernel/cuda_gemm.cuh"

namespace ak_gemm::skinny {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// 16 bytes of B: read once, so not kept in L1 (A is).
__device__ __forceinline__ uint4 load_streaming(const void* p) {
  uint4 r;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p));
  return r;
}

// A split's sum: into C, rounded, or into the workspace's slice of this split.
template <typename T>
__device__ __forceinline__ void put(float sum, int row, int col, int n, T* c, int64_t ldc, float* ws,
                                    int64_t slice) {
  if (ws != nullptr)
    ws[blockIdx.y * slice + static_cast<int64_t>(row) * n + col] = sum;
  else
    c[row * ldc + col] = from_float<T>(sum);
}

}  // namespace ak_gemm::skinny
