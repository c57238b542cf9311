// Shared body of the CUDA test kernels in this folder: a plain correct reduce (y[r] = sum of
// x[r, :], one block per row) that each test kernel launches in its own wrong way.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "autokernel/abi.h"

namespace test_kernels {

__device__ inline float load(const float* p, long i) {
  return p[i];
}
__device__ inline float load(const __half* p, long i) {
  return __half2float(p[i]);
}
__device__ inline float load(const __nv_bfloat16* p, long i) {
  return __bfloat162float(p[i]);
}
__device__ inline void store(float* p, long i, float v) {
  p[i] = v;
}
__device__ inline void store(__half* p, long i, float v) {
  p[i] = __float2half(v);
}
__device__ inline void store(__nv_bfloat16* p, long i, float v) {
  p[i] = __float2bfloat16(v);
}

// The sum of row `row` of x by a block of 256 threads, in thread 0 (`partial`: 256 floats of
// shared memory); a fixed-order tree reduction keeps it deterministic.
template <typename T>
__device__ float block_row_sum(const T* x, long row, long cols, float* partial) {
  float sum = 0;
  for (long j = threadIdx.x; j < cols; j += blockDim.x) sum += load(x, row * cols + j);
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  return partial[0];
}

// One block of 256 threads per row.
template <typename T>
__global__ void reduce_rows(const T* x, T* y, long cols, long offset) {
  __shared__ float partial[256];
  const float sum = block_row_sum(x, blockIdx.x, cols, partial);
  if (threadIdx.x == 0) store(y, blockIdx.x + offset, sum);
}

// Launches reduce_rows for the call's dtype on `stream`, writing y[r + offset].
inline int launch_reduce(const ak_call* call, cudaStream_t stream, long offset) {
  const ak_tensor& x = call->inputs[0];
  const long rows = x.shape[0], cols = x.shape[1];
  void* y = call->outputs[0].data;
  switch (x.dtype) {
    case AK_F32:
      reduce_rows<<<rows, 256, 0, stream>>>(static_cast<const float*>(x.data), static_cast<float*>(y), cols,
                                            offset);
      break;
    case AK_F16:
      reduce_rows<<<rows, 256, 0, stream>>>(static_cast<const __half*>(x.data), static_cast<__half*>(y), cols,
                                            offset);
      break;
    case AK_BF16:
      reduce_rows<<<rows, 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(x.data),
                                            static_cast<__nv_bfloat16*>(y), cols, offset);
      break;
    default: return AK_ERR_UNSUPPORTED;
  }
  return cudaGetLastError() == cudaSuccess ? AK_OK : AK_ERR_LAUNCH;
}

}  // namespace test_kernels
