// Broken on purpose: right answers, computed on the legacy default stream instead of
// call->stream, so the harness's timing and ordering would not cover the work.
#include "cuda_reduce.cuh"
extern "C" int ak_launch(const ak_call* call) {
  return test_kernels::launch_reduce(call, nullptr, 0);
}
