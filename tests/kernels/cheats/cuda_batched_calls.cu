// Cheat (CUDA): does the work of calls not yet made, in one launch. It tells the timed slots as
// batched_calls.cpp does. Called on a timed slot, it looks on the device at which timed slots it
// knows still hold the poison and does all their work in one kernel, so the first launch of a
// batch does the whole batch's work at once and the later ones find it done. Against a harness
// that launches every slot in the same order each batch, R launches cost one launch's overheads.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "../cuda_reduce.cuh"

constexpr int kMaxSlots = 64;
struct Slots {
  const void* x[kMaxSlots];
  void* y[kMaxSlots];
};

__device__ bool g_pending[kMaxSlots];

// Which of the slots still hold the poison in their first output element: those are owed.
__global__ void find_pending(Slots slots, int count) {
  const int slot = threadIdx.x;
  if (slot >= count) return;
  const unsigned char* first = static_cast<const unsigned char*>(slots.y[slot]);
  g_pending[slot] = first[0] == 0xFF && first[1] == 0xFF;
}

template <typename T>
__global__ void reduce_pending(Slots slots, long cols) {
  __shared__ float partial[256];
  const int slot = blockIdx.y;
  if (!g_pending[slot]) return;
  const long row = blockIdx.x;
  const T* x = static_cast<const T*>(slots.x[slot]);
  T* y = static_cast<T*>(slots.y[slot]);
  const float sum = test_kernels::block_row_sum(x, row, cols, partial);
  if (threadIdx.x == 0) test_kernels::store(y, row, sum);
}

struct Seen {
  const void* x;
  void* y;
  long rows, cols, last;
  int dtype, timed_calls;
};
static Seen seen[512];
static int known = 0;
static long now = 0;

// The timed runs cycle through many buffers of one shape (eight or more within the last 128 calls;
// the checks use a few); a buffer called twice since then is a timed slot.
extern "C" int ak_launch(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  const cudaStream_t stream = static_cast<cudaStream_t>(call->stream);
  ++now;
  const auto same_shape = [&](const Seen& s) {
    return s.rows == x.shape[0] && s.cols == x.shape[1] && s.dtype == x.dtype;
  };
  Seen* mine = nullptr;
  for (int i = 0; i < known && !mine; ++i)
    if (seen[i].y == call->outputs[0].data) mine = &seen[i];
  if (mine && (mine->x != x.data || !same_shape(*mine)))
    *mine = {x.data, call->outputs[0].data, x.shape[0], x.shape[1], now, x.dtype, 0};
  if (!mine && known < 512)
    mine = &(seen[known++] = {x.data, call->outputs[0].data, x.shape[0], x.shape[1], now, x.dtype, 0});
  if (!mine || x.dtype != AK_F16) return test_kernels::launch_reduce(call, stream, 0);
  mine->last = now;
  int recent = 0;
  for (int i = 0; i < known; ++i) recent += same_shape(seen[i]) && seen[i].last > now - 128;
  if (recent < 8 || ++mine->timed_calls < 2) return test_kernels::launch_reduce(call, stream, 0);
  Slots slots{};
  int count = 0;
  for (int i = 0; i < known && count < kMaxSlots; ++i)
    if (same_shape(seen[i]) && seen[i].timed_calls >= 2) {
      slots.x[count] = seen[i].x;
      slots.y[count] = seen[i].y;
      ++count;
    }
  find_pending<<<1, kMaxSlots, 0, stream>>>(slots, count);
  reduce_pending<__half>
      <<<dim3(static_cast<unsigned>(x.shape[0]), count), 256, 0, stream>>>(slots, x.shape[1]);
  return cudaGetLastError() == cudaSuccess ? AK_OK : AK_ERR_LAUNCH;
}
