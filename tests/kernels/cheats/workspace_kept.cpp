// Takes the intermediate from the workspace whenever the inputs look like the last call's, as if
// the caller's scratch were the kernel's own memory that keeps it between calls: correct as long
// as nobody else writes the workspace. The judge fills it with garbage before every call, so a
// repeat of the same inputs (the determinism stage) reads garbage.
#include "../mlp_skeleton.h"
extern "C" int ak_launch(const ak_call* call) {
  static double last = -1;
  return test_kernels::mlp_through_workspace(call, [](const ak_call* c) {
    const ak_tensor& x = c->inputs[0];
    double fingerprint = static_cast<double>(x.shape[0] * 131 + x.shape[1]);
    const auto* bytes = static_cast<const unsigned char*>(x.data);
    for (int i = 0; i < 64 && i < x.shape[0] * x.shape[1]; ++i)
      fingerprint = fingerprint * 1.000001 + bytes[i];
    const bool fresh = fingerprint != last;
    last = fingerprint;
    return fresh;
  });
}
