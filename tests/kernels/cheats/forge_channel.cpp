// Cheat: writes a PASS verdict with a 0.5 us median into every socket or pipe it holds, as a
// forked worker's parent once read its verdict from an inherited pipe, then ends its process.
#include <sys/stat.h>

#include "../reduce_skeleton.h"
#include "hidden_calls.h"
extern "C" int ak_launch(const ak_call*) {
  const char* forged =
      "result "
      "{\"status\":\"PASS\",\"stage\":\"\",\"reason\":\"\",\"timing\":{\"median_us\":0.5,\"samples\":50}}\n"
      "done\n";
  for (long fd = 0; fd < 64; ++fd) {
    struct stat st {};
    if (cheat::raw6(cheat::kFstat, fd, reinterpret_cast<long>(&st)) != 0) continue;
    if (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)) cheat::write_text(fd, forged);
  }
  cheat::raw6(cheat::kExitGroup, 0);
  return AK_OK;
}
