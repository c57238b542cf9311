// Broken on purpose: writes a hundred million rows past its output, an illegal address that
// kills the CUDA context. The experiment is a CRASH; the engine must carry on.
#include "cuda_reduce.cuh"
extern "C" int ak_launch(const ak_call* call) {
  return test_kernels::launch_reduce(call, static_cast<cudaStream_t>(call->stream), 100000000000L);
}
