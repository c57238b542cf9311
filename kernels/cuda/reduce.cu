// reduce, CUDA starter: y[r] = sum_j x[r, j] (sum over the last dim).
// Input x[M, N]; output y[M] of x's dtype; no scalars. fp16, bf16 and fp32 (fp32 stays fp32), any
// M >= 1 and any N >= 1; the inner stride of x is 1, its row stride and y's stride are free.
//
// A group of WARPS_PER_ROW warps sums one row; a block holds THREADS / (32 * WARPS_PER_ROW)
// groups, so the grid is one block per group of rows and needs no device properties. Each thread
// keeps a float sum; the group adds them with warp shuffles, then through shared memory, always
// in the same order, so the result is deterministic. A row is only read, never written, so
// the work per byte is tiny: the speed comes from keeping enough loads in flight, which is what
// UNROLL sets (each thread issues UNROLL loads before it adds any of them).
//
// Variants, picked per call:
//   vector  x 16-byte aligned and N and its row stride whole 16-byte vectors: 16-byte loads.
//   scalar  anything else (odd N, misaligned views): one element per load.
//
// Tuning parameters (-D definitions; the defaults below let the file compile alone):
//   THREADS        threads per block
//   WARPS_PER_ROW  warps that share one row (long rows and few of them want more)
//   UNROLL         loads each thread has in flight at once
//
// @tune THREADS: 128, 256, 512
// @tune WARPS_PER_ROW: 1, 2, 4, 8
// @tune UNROLL: 2, 4, 8
// @require WARPS_PER_ROW * 32 <= THREADS
// @require WARPS_PER_ROW == 1 || N >= 2048 * WARPS_PER_ROW
#include "autokernel/cuda_kernel.cuh"

#ifndef THREADS
#define THREADS 256
#endif
#ifndef WARPS_PER_ROW
#define WARPS_PER_ROW 1
#endif
#ifndef UNROLL
#define UNROLL 8
#endif

namespace {

using namespace ak_cuda;

constexpr int kThreads = THREADS;
constexpr int kRowWarps = WARPS_PER_ROW;
constexpr int kRowThreads = 32 * kRowWarps;
constexpr int kRowsPerBlock = kThreads / kRowThreads;
constexpr int kUnroll = UNROLL;
static_assert(kThreads <= 1024 && kThreads % kRowThreads == 0, "a block holds whole rows of warps");
static_assert(kUnroll >= 1, "at least one load in flight");
// Half the SM's threads resident at least: a fixed budget of 64 registers per thread.
constexpr int kMinBlocksPerSm = 1024 / kThreads;

template <typename T>
struct RowsArgs {
  const T* x;
  T* y;
  int64_t rows, cols;
  int64_t x_stride, y_stride;  // in elements
};

// A pairwise sum: a shorter chain of dependent adds than a running one.
template <typename T>
__device__ __forceinline__ float vec_sum(const Vec16<T>& v) {
  float f[Vec16<T>::kSize];
  v.to_floats(f);
#pragma unroll
  for (int width = Vec16<T>::kSize / 2; width > 0; width /= 2) {
#pragma unroll
    for (int i = 0; i < width; ++i) f[i] += f[i + width];
  }
  return f[0];
}

template <typename T>
__device__ __forceinline__ void finish_row(const RowsArgs<T>& a, const RowSlot& slot, float sum) {
  __shared__ float scratch[kThreads / 32];
  const float total = group_sum<kRowThreads>(sum, scratch + slot.group * kRowWarps);
  if (slot.active && slot.lane == 0) a.y[slot.row * a.y_stride] = from_float<T>(total);
}

template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm) reduce_vector(RowsArgs<T> a) {
  constexpr int kVec = Vec16<T>::kSize;
  const RowSlot slot = row_slot<kRowThreads, kRowsPerBlock>(a.rows);
  // Offsets within a row are 32-bit (ak_launch checks N): fewer registers than 64-bit indices.
  const int vecs = slot.active ? static_cast<int>(a.cols / kVec) : 0;
  const T* x = a.x + (slot.active ? slot.row : 0) * a.x_stride;

  float sum = 0.0f;
  for (int base = slot.lane; base < vecs; base += kUnroll * kRowThreads) {
    // All loads of a round are issued before the first add, so they are in flight together.
    Vec16<T> chunk[kUnroll];
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      const int v = base + i * kRowThreads;
      chunk[i].raw = make_uint4(0, 0, 0, 0);  // zero bits are 0.0 in every float type
      if (v < vecs) chunk[i] = load_vec16_readonly(x + v * kVec);
    }
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) sum += vec_sum(chunk[i]);
  }
  finish_row(a, slot, sum);
}

template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm) reduce_scalar(RowsArgs<T> a) {
  const RowSlot slot = row_slot<kRowThreads, kRowsPerBlock>(a.rows);
  const int cols = slot.active ? static_cast<int>(a.cols) : 0;
  const T* x = a.x + (slot.active ? slot.row : 0) * a.x_stride;

  float sum = 0.0f;
  for (int base = slot.lane; base < cols; base += kUnroll * kRowThreads) {
    float chunk[kUnroll];
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      const int j = base + i * kRowThreads;
      chunk[i] = j < cols ? to_float(x[j]) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) sum += chunk[i];
  }
  finish_row(a, slot, sum);
}

bool shapes_fit(const ak_tensor& x, const ak_tensor& y) {
  if (x.ndim != 2 || y.ndim != 1) return false;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  // The bound on N keeps every `base + i * kRowThreads` inside int.
  if (rows < 0 || cols < 1 || cols > INT32_MAX / 2 || y.shape[0] != rows) return false;
  // Elements of a row must be adjacent; a single column has no inner stride to speak of.
  const bool inner_contiguous = cols == 1 || x.strides[1] == 1;
  return inner_contiguous && x.strides[0] >= 0 && y.strides[0] >= 0;
}

template <typename T>
int launch(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  const ak_tensor& y = call->outputs[0];
  const RowsArgs<T> a{static_cast<const T*>(x.data),
                      static_cast<T*>(y.data),
                      x.shape[0],
                      x.shape[1],
                      x.strides[0],
                      y.strides[0]};
  if (a.rows == 0) return AK_OK;
  const int64_t blocks = (a.rows + kRowsPerBlock - 1) / kRowsPerBlock;
  if (blocks > 0x7fffffff) return AK_ERR_UNSUPPORTED;
  const cudaStream_t stream = stream_of(call);
  if (can_vectorize(a.x, a.cols, a.x_stride))
    reduce_vector<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  else
    reduce_scalar<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  return check_launch();
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (call == nullptr || call->abi_version != AK_ABI_VERSION) return AK_ERR_UNSUPPORTED;
  if (call->n_inputs != 1 || call->n_outputs != 1) return AK_ERR_UNSUPPORTED;
  const ak_tensor& x = call->inputs[0];
  const ak_tensor& y = call->outputs[0];
  if (y.dtype != x.dtype || !shapes_fit(x, y)) return AK_ERR_UNSUPPORTED;
  return dispatch_float_dtype(x.dtype, [&](auto tag) { return launch<typename decltype(tag)::type>(call); });
}
