// Cheat (CUDA): the forged-verdict kernel on the GPU path: writes a PASS record into every
// socket or pipe it holds and ends its process.
#include <sys/stat.h>

#include "../cuda_reduce.cuh"
#include "hidden_calls.h"
extern "C" int ak_launch(const ak_call*) {
  for (long fd = 0; fd < 64; ++fd) {
    struct stat st {};
    if (cheat::raw6(cheat::kFstat, fd, reinterpret_cast<long>(&st)) != 0) continue;
    if (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode))
      cheat::write_text(fd, "result {\"status\":\"PASS\",\"timing\":{\"median_us\":0.5}}\ndone\n");
  }
  cheat::raw6(cheat::kExitGroup, 0);
  return AK_OK;
}
