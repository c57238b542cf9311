// Cheat: answers the launcher's own "done" on the channel (descriptor 3) without doing the work,
// as a kernel that patched the process around it to report success would.
#include "../reduce_skeleton.h"
#include "hidden_calls.h"
extern "C" int ak_launch(const ak_call*) {
  cheat::write_text(3, "done\n");
  return AK_OK;
}
