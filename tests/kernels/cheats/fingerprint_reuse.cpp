// Cheat (the first one the trust issue found): remembers a fingerprint of its input (address and
// first elements) and of the output it wrote, and skips the work when both are unchanged, as
// they were between the timed repetitions of a harness that neither poisoned nor varied them.
#include <cstring>

#include "../reduce_skeleton.h"
struct Fingerprint {
  const void* input = nullptr;
  unsigned char first_in[16] = {};
  void* output = nullptr;
  unsigned char first_out[8] = {};
};
static Fingerprint last;
extern "C" int ak_launch(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  const ak_tensor& y = call->outputs[0];
  if (last.input == x.data && last.output == y.data && std::memcmp(last.first_in, x.data, 16) == 0 &&
      std::memcmp(last.first_out, y.data, 8) == 0)
    return AK_OK;
  const int rc = test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum; });
  last.input = x.data;
  last.output = y.data;
  std::memcpy(last.first_in, x.data, 16);
  std::memcpy(last.first_out, y.data, 8);
  return rc;
}
