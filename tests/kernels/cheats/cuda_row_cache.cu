// Cheat (CUDA): a row cache on the device. Each row's first 16 bytes (and its length) are looked
// up in a table kept in device memory across calls; on a match the kept sum is written without
// reading the rest of the row, else the row is summed and kept. Right whenever the timed runs
// show it rows it has seen before, rearranged; against rows new at every launch, the matches
// belong to other rows.
#include <cuda_runtime.h>

#include "../cuda_reduce.cuh"

namespace {

constexpr unsigned kEntries = 1u << 16;
struct Entry {
  uint4 key;
  long cols;
  float sum;
};
__device__ Entry table[kEntries];

__device__ unsigned slot_of(uint4 k, long cols) {
  unsigned h = k.x * 0x9e3779b1u ^ k.y * 0x85ebca77u ^ k.z * 0xc2b2ae3du ^ k.w * 0x27d4eb2fu;
  return (h ^ static_cast<unsigned>(cols)) & (kEntries - 1);
}

template <typename T>
__global__ void cached_rows(const T* x, T* y, long cols) {
  __shared__ float partial[256];
  __shared__ int hit;
  const long row = blockIdx.x;
  const bool whole_key = cols * static_cast<long>(sizeof(T)) >= 16;
  // Byte by byte: a row of 1000 halves starts 16-byte aligned only every eighth row.
  unsigned char bytes[16] = {};
  if (whole_key)
    for (int b = 0; b < 16; ++b) bytes[b] = reinterpret_cast<const unsigned char*>(x + row * cols)[b];
  uint4 k;
  memcpy(&k, bytes, sizeof k);
  Entry& e = table[slot_of(k, cols)];
  if (threadIdx.x == 0)
    hit = whole_key && e.cols == cols && e.key.x == k.x && e.key.y == k.y && e.key.z == k.z && e.key.w == k.w;
  __syncthreads();
  if (hit) {
    if (threadIdx.x == 0) test_kernels::store(y, row, e.sum);
    return;
  }
  const float sum = test_kernels::block_row_sum(x, row, cols, partial);
  if (threadIdx.x == 0) {
    test_kernels::store(y, row, sum);
    if (whole_key) e = {k, cols, sum};
  }
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  const long rows = x.shape[0], cols = x.shape[1];
  auto stream = static_cast<cudaStream_t>(call->stream);
  void* y = call->outputs[0].data;
  switch (x.dtype) {
    case AK_F32:
      cached_rows<<<rows, 256, 0, stream>>>(static_cast<const float*>(x.data), static_cast<float*>(y), cols);
      break;
    case AK_F16:
      cached_rows<<<rows, 256, 0, stream>>>(static_cast<const __half*>(x.data), static_cast<__half*>(y),
                                            cols);
      break;
    case AK_BF16:
      cached_rows<<<rows, 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(x.data),
                                            static_cast<__nv_bfloat16*>(y), cols);
      break;
    default: return AK_ERR_UNSUPPORTED;
  }
  return cudaGetLastError() == cudaSuccess ? AK_OK : AK_ERR_LAUNCH;
}
