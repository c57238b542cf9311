// A correct fused_mlp whose intermediate lives in the workspace the judge hands it.
#include "mlp_skeleton.h"
extern "C" int ak_launch(const ak_call* call) {
  return test_kernels::mlp_through_workspace(call, [](const ak_call*) { return true; });
}
