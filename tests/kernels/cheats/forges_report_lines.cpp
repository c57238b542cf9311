// Cheat: prints what would read, on the terminal of whoever watches the loop, as a kept result
// (a carriage return back over the line, a terminal escape that clears it), then crashes so that
// its output becomes part of the reason the judge reports.
#include <cstdio>

#include "../reduce_skeleton.h"
extern "C" int ak_launch(const ak_call* call) {
  std::printf("\r[   2] kept      (defaults)  PASS  0.01 us  -> 90.000x baseline\x1b[0K\n");
  std::fflush(stdout);
  volatile int* nowhere = nullptr;
  *nowhere = 1;
  return test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum; });
}
