// Cheat: writes into its parent's memory (where a worker once held its own verdict and timer).
#include <sys/uio.h>

#include "../reduce_skeleton.h"
#include "hidden_calls.h"
extern "C" int ak_launch(const ak_call* call) {
  static char forged[8] = "PASS";
  iovec local{forged, sizeof forged}, remote{reinterpret_cast<void*>(0x400000), sizeof forged};
  cheat::raw6(cheat::kProcessVmWritev, cheat::parent(), reinterpret_cast<long>(&local), 1,
              reinterpret_cast<long>(&remote), 1, 0);
  return test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum; });
}
