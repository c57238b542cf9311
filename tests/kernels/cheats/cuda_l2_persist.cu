// Cheat (CUDA): an honest reduce that asks the GPU to keep its inputs in the L2 cache across the
// judge's flush. It sets aside the most L2 the device allows for persisting accesses and marks
// each call's input as a persisting window: the lines of the last slots it read survive a flush
// made of ordinary reads (which evict only ordinary lines), and when the judge launches those
// slots again after refilling them, part of their input comes from L2 instead of memory (the
// bandwidth llm.c saw inflated this way). The judge resets persisting lines before each batch.
#include <cuda_runtime.h>

#include "../cuda_reduce.cuh"

extern "C" int ak_launch(const ak_call* call) {
  const cudaStream_t stream = static_cast<cudaStream_t>(call->stream);
  static bool set_aside = false;
  if (!set_aside) {
    int device = 0, most = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&most, cudaDevAttrMaxPersistingL2CacheSize, device);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, static_cast<size_t>(most));
    set_aside = true;
  }
  const ak_tensor& x = call->inputs[0];
  int device = 0, window = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&window, cudaDevAttrMaxAccessPolicyWindowSize, device);
  size_t bytes = static_cast<size_t>(x.shape[0] * x.shape[1]) * (x.dtype == AK_F32 ? 4 : 2);
  if (bytes > static_cast<size_t>(window)) bytes = static_cast<size_t>(window);
  cudaStreamAttrValue policy{};
  policy.accessPolicyWindow.base_ptr = x.data;
  policy.accessPolicyWindow.num_bytes = bytes;
  policy.accessPolicyWindow.hitRatio = 1.0f;
  policy.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  policy.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &policy);
  return test_kernels::launch_reduce(call, stream, 0);
}
