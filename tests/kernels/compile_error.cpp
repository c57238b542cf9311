// Does not compile.
#include "reduce_skeleton.h"
extern "C" int ak_launch(const ak_call* call) {
  return undefined_function(call);
}
