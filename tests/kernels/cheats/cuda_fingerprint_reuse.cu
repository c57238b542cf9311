// Cheat (CUDA): the trust issue's first finding, on the GPU. Remembers the input's address and
// first bytes, and launches nothing when they are unchanged and the output still holds a result
// (not the poison), as between the timed repetitions of a harness that neither poisoned nor
// varied them.
#include <cuda_runtime.h>

#include <cstring>

#include "../cuda_reduce.cuh"
static const void* last_input = nullptr;
static unsigned char last_first[16] = {};
extern "C" int ak_launch(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  unsigned char first[16], out[4];
  cudaMemcpy(first, x.data, sizeof first, cudaMemcpyDeviceToHost);
  cudaMemcpy(out, call->outputs[0].data, sizeof out, cudaMemcpyDeviceToHost);
  const bool written = !(out[0] == 0xFF && out[1] == 0xFF && out[2] == 0xFF && out[3] == 0xFF);
  if (x.data == last_input && !std::memcmp(first, last_first, sizeof first) && written) return AK_OK;
  last_input = x.data;
  std::memcpy(last_first, first, sizeof first);
  return test_kernels::launch_reduce(call, static_cast<cudaStream_t>(call->stream), 0);
}
