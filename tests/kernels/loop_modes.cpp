// A host reduce (y[r] = sum of x[r, :]) for the loop's tests, self-contained so it can be
// copied into a workspace. MODE picks a behaviour; the starter (MODE=0) is correct but slow.
//   0  correct, sums each row REPEAT times      2  never returns (TIMEOUT)
//   1  dereferences null (CRASH)                3  wrong values (FAIL)
//   4  correct, sums each row once
// @tune MODE: 0, 1, 2, 3, 4
// @tune REPEAT: 8, 4
#include "autokernel/host_kernel.h"

#ifndef MODE
#define MODE 0
#endif
#ifndef REPEAT
#define REPEAT 8
#endif

namespace {

using namespace ak::host;

template <class T>
int reduce(const ak_call* call, int repeat, double bias) {
  const ak_tensor& x = call->inputs[0];
  const int64_t rows = x.shape[0], n = x.shape[1];
  const T* in = static_cast<const T*>(x.data);
  T* out = static_cast<T*>(call->outputs[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int i = 0; i < repeat; ++i) {
      sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += to_float(in[r * n + j]);
      asm volatile("" ::: "memory");  // every repetition really runs
    }
    out[r] = from_float<T>(static_cast<float>(sum + bias));
  }
  return AK_OK;
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (!valid_call(call, 1, 1, 0)) return AK_ERR_UNSUPPORTED;
  if (MODE == 1) {
    volatile int* nowhere = nullptr;
    *nowhere = 1;
  }
  if (MODE == 2) {
    volatile int spinning = 1;
    while (spinning) {
    }
  }
  const int repeat = MODE == 0 ? REPEAT : 1;
  const double bias = MODE == 3 ? 1.0 : 0.0;
  return dispatch(call->inputs[0].dtype,
                  [&](auto tag) { return reduce<typename decltype(tag)::type>(call, repeat, bias); });
}
