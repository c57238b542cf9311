// Cheat (CUDA): enqueues nothing on call->stream; the work runs on the legacy default stream
// after a 20 ms wait, past the judge's look at the held stream, so that it would finish after a
// timed interval that only covered call->stream.
#include "../cuda_reduce.cuh"
__global__ void wait_cycles(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
extern "C" int ak_launch(const ak_call* call) {
  wait_cycles<<<1, 1, 0, nullptr>>>(40'000'000LL);  // about 20 ms at H100 clocks
  return test_kernels::launch_reduce(call, nullptr, 0);
}
