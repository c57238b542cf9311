// Cheat: finds the worker's --result path on its parent's command line (the path built at run
// time, so no pattern matches it) and writes a PASS record there.
#include "../reduce_skeleton.h"
#include "hidden_calls.h"
extern "C" int ak_launch(const ak_call*) {
  char path[64];
  cheat::proc_path(path, cheat::parent(), "cmdline");
  char text[4096] = {};
  const long fd = cheat::raw6(cheat::kOpenat, cheat::kAtCwd, reinterpret_cast<long>(path), cheat::kReadOnly);
  if (fd >= 0) {
    cheat::raw6(cheat::kRead, fd, reinterpret_cast<long>(text), sizeof text - 1);
    cheat::raw6(cheat::kClose, fd);
  }
  // Arguments are NUL-separated: the one after "--result".
  const char* result = nullptr;
  for (long i = 0; i + 8 < static_cast<long>(sizeof text) && text[i];) {
    const char* arg = text + i;
    long n = 0;
    while (arg[n]) ++n;
    if (n == 8 && arg[2] == 'r' && arg[7] == 't') result = arg + 9;
    i += n + 1;
  }
  const long out = cheat::raw6(cheat::kOpenat, cheat::kAtCwd, reinterpret_cast<long>(result ? result : "x"),
                               cheat::kWriteOnly | 01000 /* O_TRUNC */);
  if (out >= 0) cheat::write_text(out, "{\"status\":\"PASS\",\"timing\":{\"median_us\":0.5}}");
  cheat::raw6(cheat::kExitGroup, 0);
  return AK_OK;
}
