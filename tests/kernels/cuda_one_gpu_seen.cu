// A correct CUDA reduce that refuses to run where its process sees more than one GPU: the judge's
// launcher must see the judge's GPU alone (a second one would be compute out of the judge's sight).
// It says why on its log and returns an error, which the judge reports.
#include <cstdio>

#include "cuda_reduce.cuh"
extern "C" int ak_launch(const ak_call* call) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count != 1) {
    std::fprintf(stderr, "cuda_one_gpu_seen: the launcher sees %d GPUs\n", count);
    return 1;
  }
  return test_kernels::launch_reduce(call, static_cast<cudaStream_t>(call->stream), 0);
}
