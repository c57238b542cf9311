// Cheat: returns at once and leaves the work to a thread that finishes after the launch (and
// after the timed interval), started through a name the lint does not know.
#include "../reduce_skeleton.h"
extern "C" int start_worker(void* id, const void* attributes, void* (*body)(void*), void* arg) __asm__(
    "pthread"
    "_create");
static const ak_call* pending = nullptr;
static void* finish(void*) {
  test_kernels::reduce_rows(pending, 0, [](int64_t, double sum) { return sum; });
  return nullptr;
}
extern "C" int ak_launch(const ak_call* call) {
  static ak_call copy;
  copy = *call;
  pending = &copy;
  unsigned long id = 0;
  return start_worker(&id, nullptr, finish, nullptr) == 0 ? AK_OK : AK_ERR_LAUNCH;
}
