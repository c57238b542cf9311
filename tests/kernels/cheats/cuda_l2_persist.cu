// Cheat (CUDA): an honest reduce that asks the GPU to keep its inputs in the L2 cache across the
// judge's flush. Once the timed runs begin (it tells them by the many buffers of one shape they
// cycle through, as batched_calls.cpp does; setting the limit synchronizes the device, which a
// held stream would turn into a hang), it sets aside the most L2 the device allows for persisting
// accesses, and marks each call's input as a persisting window: the lines of the last slots it
// read survive a flush made of ordinary reads (which evict only ordinary lines), and when those
// slots are launched again, part of their input comes from L2 instead of memory (the bandwidth
// llm.c saw inflated this way). The judge resets persisting lines before each batch's flush.
#include <cuda_runtime.h>

#include "../cuda_reduce.cuh"

struct Seen {
  const void* y;
  long rows, cols, last;
};
static Seen seen[512];
static int known = 0;
static long now = 0;

static bool timed_runs(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  ++now;
  Seen* mine = nullptr;
  for (int i = 0; i < known && !mine; ++i)
    if (seen[i].y == call->outputs[0].data) mine = &seen[i];
  if (!mine && known < 512) mine = &seen[known++];
  if (mine) *mine = {call->outputs[0].data, x.shape[0], x.shape[1], now};
  int recent = 0;
  for (int i = 0; i < known; ++i)
    recent += seen[i].rows == x.shape[0] && seen[i].cols == x.shape[1] && seen[i].last > now - 128;
  return recent >= 8;
}

extern "C" int ak_launch(const ak_call* call) {
  const cudaStream_t stream = static_cast<cudaStream_t>(call->stream);
  if (!timed_runs(call)) return test_kernels::launch_reduce(call, stream, 0);
  static bool set_aside = false;
  int device = 0;
  cudaGetDevice(&device);
  if (!set_aside) {
    int most = 0;
    cudaDeviceGetAttribute(&most, cudaDevAttrMaxPersistingL2CacheSize, device);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, static_cast<size_t>(most));
    set_aside = true;
  }
  const ak_tensor& x = call->inputs[0];
  int window = 0;
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
