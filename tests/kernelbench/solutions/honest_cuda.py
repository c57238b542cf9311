# An honest solution written the KernelBench way: a CUDA softmax through
# torch.utils.cpp_extension.load_inline, one block per row (max, sum of exponentials, write),
# launched on the current stream.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

template <bool Max>
__device__ float block_reduce(float v, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffff, v, offset);
    v = Max ? fmaxf(v, other) : v + other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? shared[threadIdx.x] : (Max ? -INFINITY : 0.f);
  if (warp == 0)
    for (int offset = 16; offset > 0; offset /= 2) {
      const float other = __shfl_xor_sync(0xffffffff, v, offset);
      v = Max ? fmaxf(v, other) : v + other;
    }
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  return shared[0];
}

__global__ void softmax_rows(const float* x, float* y, long cols) {
  __shared__ float shared[32];
  const float* in = x + blockIdx.x * cols;
  float* out = y + blockIdx.x * cols;
  float m = -INFINITY;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, in[c]);
  m = block_reduce<true>(m, shared);
  float s = 0.f;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) s += expf(in[c] - m);
  s = block_reduce<false>(s, shared);
  const float inv = 1.f / s;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(in[c] - m) * inv;
}

torch::Tensor softmax(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32, "a 2-D float32 CUDA tensor");
  x = x.contiguous();
  auto y = torch::empty_like(x);
  softmax_rows<<<x.size(0), 1024, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                                        x.size(1));
  return y;
}
"""

module = load_inline(name="autokernel_test_softmax", cpp_sources="torch::Tensor softmax(torch::Tensor x);",
                     cuda_sources=CUDA, functions=["softmax"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return module.softmax(x)
