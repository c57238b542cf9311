// Broken on purpose: remembers its answers by input address and replays them when called on the
// same buffer again (the trick that beats a harness reusing one input set).
#include <cstring>
#include <vector>

#include "reduce_skeleton.h"
static const void* last_input = nullptr;
static std::vector<unsigned char>* last_output = nullptr;
extern "C" int ak_launch(const ak_call* call) {
  const ak_tensor& y = call->outputs[0];
  const size_t bytes = static_cast<size_t>(y.shape[0]) * (y.dtype == AK_F32 ? 4 : 2);
  if (last_input == call->inputs[0].data && last_output && last_output->size() == bytes) {
    std::memcpy(y.data, last_output->data(), bytes);
    return AK_OK;
  }
  const int rc = test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum; });
  if (!last_output) last_output = new std::vector<unsigned char>();
  last_output->assign(static_cast<unsigned char*>(y.data), static_cast<unsigned char*>(y.data) + bytes);
  last_input = call->inputs[0].data;
  return rc;
}
