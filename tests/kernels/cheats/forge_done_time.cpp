// Cheat: answers "done" with a device time of its own making (the launcher's own reply carries
// its CUDA events' time of a batch), a value no launcher writes, and skips the work.
#include "../reduce_skeleton.h"
#include "hidden_calls.h"
extern "C" int ak_launch(const ak_call*) {
  cheat::write_text(3, "done nan\n");
  return AK_OK;
}
