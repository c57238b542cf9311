// Cheat (CUDA): correct while it is checked, then on the timed problem launches nothing.
#include "../cuda_reduce.cuh"
static int calls_on_timed_problem = 0;
extern "C" int ak_launch(const ak_call* call) {
  const bool timed_problem = call->inputs[0].shape[0] == 4096 && call->inputs[0].shape[1] == 1000;
  if (timed_problem && ++calls_on_timed_problem > 6) return AK_OK;
  return test_kernels::launch_reduce(call, static_cast<cudaStream_t>(call->stream), 0);
}
