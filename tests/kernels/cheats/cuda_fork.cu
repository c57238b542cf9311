// Cheat (CUDA): starts a process from ak_launch, through a raw system call.
#include "../cuda_reduce.cuh"
#include "hidden_calls.h"
extern "C" int ak_launch(const ak_call* call) {
  if (cheat::raw6(cheat::kFork) == 0) cheat::raw6(cheat::kExitGroup, 0);
  return test_kernels::launch_reduce(call, static_cast<cudaStream_t>(call->stream), 0);
}
