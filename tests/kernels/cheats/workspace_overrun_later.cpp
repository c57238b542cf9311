// Honest through the checks, then, once the problem has come round often enough to be the timed
// one, writes a byte past the end of its workspace: out-of-bounds writes where only the timed
// launches would see them. The guards around the workspace are checked after those too.
#include "../mlp_skeleton.h"
extern "C" int ak_launch(const ak_call* call) {
  static int64_t rows = -1, repeats = 0;
  repeats = call->inputs[0].shape[0] == rows ? repeats + 1 : 0;
  rows = call->inputs[0].shape[0];
  const int rc = test_kernels::mlp_through_workspace(call, [](const ak_call*) { return true; });
  if (rc == AK_OK && repeats > 40) static_cast<unsigned char*>(call->workspace)[call->workspace_bytes] = 0x5a;
  return rc;
}
