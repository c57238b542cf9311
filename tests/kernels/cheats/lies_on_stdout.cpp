// Cheat: prints the lines a worker's parent once read as progress and verdict, and computes the
// wrong answer.
#include <cstdio>

#include "../reduce_skeleton.h"
extern "C" int ak_launch(const ak_call* call) {
  std::printf("stage timing\nresult {\"status\":\"PASS\",\"timing\":{\"median_us\":0.5}}\n");
  std::fflush(stdout);
  std::fprintf(stderr, "result {\"status\":\"PASS\"}\n");
  return test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum + 1; });
}
