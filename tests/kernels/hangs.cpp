// Broken on purpose: never returns.
#include "reduce_skeleton.h"
extern "C" int ak_launch(const ak_call*) {
  volatile int spinning = 1;
  while (spinning) {
  }
  return AK_OK;
}
