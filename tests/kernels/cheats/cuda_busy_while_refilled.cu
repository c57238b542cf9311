// Cheat (CUDA): work outside the timed launches that ends before the judge's cache flush. On the
// timed problem, each launch computes honestly on call->stream and then leaves a kernel on a
// stream of its own (made through an assembler name the lint does not read) that waits for the
// judge to write that slot's next inputs and then works for a while: the shape of a kernel that
// computes each slot's next answer as its inputs arrive, for its launch to copy out. Nothing is
// written outside a launch and the flush finds the device idle; only the judge's writes of the
// inputs, slowed while the device switches to this process's work, can show it.
#include <cuda_runtime.h>

#include "../cuda_reduce.cuh"

extern "C" cudaError_t own_stream(cudaStream_t* stream,
                                  unsigned int flags) __asm__("cudaStreamCreateWithFlags");

__global__ void busy_until_refilled(const unsigned* input, long long most_cycles, long long work_cycles) {
  const unsigned first = *static_cast<const volatile unsigned*>(input);
  const long long start = clock64();
  while (*static_cast<const volatile unsigned*>(input) == first && clock64() - start < most_cycles) {
  }
  const long long began = clock64();
  while (clock64() - began < work_cycles) {
  }
}

static int calls_on_timed_problem = 0;
static cudaStream_t elsewhere[128] = {};
static const void* watched[128] = {};

extern "C" int ak_launch(const ak_call* call) {
  const int rc = test_kernels::launch_reduce(call, static_cast<cudaStream_t>(call->stream), 0);
  const bool timed_problem = call->inputs[0].shape[0] == 4096 && call->inputs[0].shape[1] == 1000;
  if (rc != AK_OK || !timed_problem || ++calls_on_timed_problem <= 6) return rc;
  int s = 0;  // a stream per input buffer (a slot), so that the waits do not queue behind each other
  while (s < 127 && watched[s] != nullptr && watched[s] != call->inputs[0].data) ++s;
  if (watched[s] == nullptr) {
    watched[s] = call->inputs[0].data;
    if (own_stream(&elsewhere[s], cudaStreamNonBlocking) != cudaSuccess) return AK_ERR_LAUNCH;
  }
  // At most 100 ms of waiting (about 2e8 cycles), then about 100 us of work.
  busy_until_refilled<<<1, 1, 0, elsewhere[s]>>>(static_cast<const unsigned*>(call->inputs[0].data),
                                                 200'000'000LL, 200'000LL);
  return cudaGetLastError() == cudaSuccess ? AK_OK : AK_ERR_LAUNCH;
}
