// Cheat: at load time, opens its parent's memory (/proc/<pid>/mem, read-only, which the loading
// phase of the sandbox still lets through) to read the references it must compute. Reports
// whether it could: ak_launch returns 2 when the judge's memory stayed closed to it.
#include "../reduce_skeleton.h"
#include "hidden_calls.h"
struct Spy {
  long fd = -1;
  Spy() {
    char path[64];
    cheat::proc_path(path, cheat::parent(), "mem");
    fd = cheat::raw6(cheat::kOpenat, cheat::kAtCwd, reinterpret_cast<long>(path), cheat::kReadOnly);
  }
};
static Spy spy;
extern "C" int ak_launch(const ak_call* call) {
  if (spy.fd < 0) return AK_ERR_LAUNCH;
  return test_kernels::reduce_rows(call, 0, [](int64_t, double sum) { return sum; });
}
