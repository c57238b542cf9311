// rmsnorm, CUDA starter: y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight
// Inputs x[M, N], weight[N]; output y[M, N] of x's dtype; scalars[0] = eps. fp16, bf16 and fp32
// (fp32 stays fp32), any M >= 1 and any N >= 1; inner strides 1, row strides free.
//
// A group of THREADS / ROWS_PER_BLOCK threads normalizes one row; a block holds ROWS_PER_BLOCK
// groups, so the grid is one block per ROWS_PER_BLOCK rows and needs no device properties.
// Squares are summed in float and reduced with warp shuffles, then through shared memory.
//
// Variants, picked per call:
//   vector  x, y and weight 16-byte aligned and N and both row strides whole 16-byte vectors:
//           16-byte loads and stores. The first REGISTER_VECS vectors of each thread stay in
//           registers between the sum-of-squares pass and the write pass, so a row of up to
//           THREADS / ROWS_PER_BLOCK * REGISTER_VECS vectors is read from memory once; the rest
//           of a longer row is read again in the write pass (from L2 when it is still there).
//   scalar  anything else (odd N, misaligned views): one element per access, two passes.
//
// Tuning parameters (-D definitions; the defaults below let the file compile alone):
//   THREADS         threads per block
//   ROWS_PER_BLOCK  rows a block normalizes at once (short rows waste fewer threads)
//   REGISTER_VECS   16-byte vectors per thread kept in registers
//
// @tune THREADS: 128, 256, 512, 1024
// @tune ROWS_PER_BLOCK: 1, 2, 4
// @tune REGISTER_VECS: 1, 2, 4, 8
// @require THREADS / ROWS_PER_BLOCK >= 32
// @require ROWS_PER_BLOCK == 1 || N <= 2048
#include "autokernel/cuda_kernel.cuh"

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
#ifndef REGISTER_VECS
#define REGISTER_VECS 8
#endif

namespace {

using namespace ak_cuda;

constexpr int kThreads = THREADS;
constexpr int kRowsPerBlock = ROWS_PER_BLOCK;
constexpr int kRowThreads = kThreads / kRowsPerBlock;
constexpr int kRegisterVecs = REGISTER_VECS;
static_assert(kThreads % kRowsPerBlock == 0 && kRowThreads % 32 == 0, "each row gets whole warps");
static_assert(kThreads <= 1024 && kRegisterVecs >= 1, "a block has at most 1024 threads");
// Half the SM's threads resident at least: a fixed budget of 64 registers per thread, which
// keeps ptxas from picking a smaller one of its own and spilling.
constexpr int kMinBlocksPerSm = 1024 / kThreads;

template <typename T>
struct RowsArgs {
  const T* x;
  const T* weight;
  T* y;
  int64_t rows;
  int64_t cols;
  int64_t x_stride;
  int64_t y_stride;
  float eps;
};

template <typename T>
__device__ __forceinline__ float sum_of_squares(const Vec16<T>& v) {
  float f[Vec16<T>::kSize];
  v.to_floats(f);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < Vec16<T>::kSize; ++i) s += f[i] * f[i];
  return s;
}

template <typename T>
__device__ __forceinline__ Vec16<T> scale(const Vec16<T>& x, const Vec16<T>& w, float inv_rms) {
  float xf[Vec16<T>::kSize], wf[Vec16<T>::kSize];
  x.to_floats(xf);
  w.to_floats(wf);
#pragma unroll
  for (int i = 0; i < Vec16<T>::kSize; ++i) xf[i] = xf[i] * inv_rms * wf[i];
  return Vec16<T>::from_floats(xf);
}

template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm) rmsnorm_vector(RowsArgs<T> a) {
  constexpr int kVec = Vec16<T>::kSize;
  __shared__ float scratch[kThreads / 32];
  const int group = threadIdx.x / kRowThreads;
  const int lane = threadIdx.x % kRowThreads;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + group;
  const bool active = row < a.rows;
  // Offsets within a row are 32-bit (ak_launch checks N): fewer registers than 64-bit indices.
  const int vecs = active ? static_cast<int>(a.cols / kVec) : 0;
  const T* x = a.x + (active ? row : 0) * a.x_stride;

  // All cached loads are issued before the first use, so they are in flight together.
  Vec16<T> cached[kRegisterVecs];
#pragma unroll
  for (int i = 0; i < kRegisterVecs; ++i) {
    const int v = lane + i * kRowThreads;
    if (v < vecs) cached[i] = load_vec16_readonly(x + v * kVec);
  }
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kRegisterVecs; ++i) {
    if (lane + i * kRowThreads < vecs) sum += sum_of_squares(cached[i]);
  }
  // The rest of a long row. Not unrolled: unrolling would raise every row's register count.
#pragma unroll 1
  for (int v = lane + kRegisterVecs * kRowThreads; v < vecs; v += kRowThreads)
    sum += sum_of_squares(load_vec16_readonly(x + v * kVec));

  const float total = group_sum<kRowThreads>(sum, scratch + group * (kRowThreads / 32));
  if (!active) return;  // only after every thread has passed the barrier
  const float inv_rms = rsqrtf(total / static_cast<float>(a.cols) + a.eps);

  T* y = a.y + row * a.y_stride;
#pragma unroll
  for (int i = 0; i < kRegisterVecs; ++i) {
    // Keeps the compiler from holding the first pass's float conversions (twice the registers
    // of the packed values, enough to spill) instead of converting again.
    asm volatile(""
                 : "+r"(cached[i].raw.x), "+r"(cached[i].raw.y), "+r"(cached[i].raw.z),
                   "+r"(cached[i].raw.w));
    const int v = lane + i * kRowThreads;
    if (v < vecs)
      store_vec16(y + v * kVec, scale(cached[i], load_vec16_readonly(a.weight + v * kVec), inv_rms));
  }
#pragma unroll 1
  for (int v = lane + kRegisterVecs * kRowThreads; v < vecs; v += kRowThreads)
    store_vec16(y + v * kVec,
                scale(load_vec16_readonly(x + v * kVec), load_vec16_readonly(a.weight + v * kVec), inv_rms));
}

template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm) rmsnorm_scalar(RowsArgs<T> a) {
  __shared__ float scratch[kThreads / 32];
  const int group = threadIdx.x / kRowThreads;
  const int lane = threadIdx.x % kRowThreads;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + group;
  const bool active = row < a.rows;
  const T* x = a.x + (active ? row : 0) * a.x_stride;

  const int cols = active ? static_cast<int>(a.cols) : 0;
  float sum = 0.0f;
  for (int j = lane; j < cols; j += kRowThreads) {
    const float v = to_float(x[j]);
    sum += v * v;
  }
  const float total = group_sum<kRowThreads>(sum, scratch + group * (kRowThreads / 32));
  if (!active) return;
  const float inv_rms = rsqrtf(total / static_cast<float>(a.cols) + a.eps);

  T* y = a.y + row * a.y_stride;
  for (int j = lane; j < cols; j += kRowThreads)
    y[j] = from_float<T>(to_float(x[j]) * inv_rms * to_float(a.weight[j]));
}

bool shapes_fit(const ak_tensor& x, const ak_tensor& w, const ak_tensor& y) {
  if (x.ndim != 2 || w.ndim != 1 || y.ndim != 2) return false;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  if (rows < 0 || cols < 1 || cols > INT32_MAX - 1024 || w.shape[0] != cols || y.shape[0] != rows ||
      y.shape[1] != cols)
    return false;
  // Elements of a row must be adjacent; a single column has no inner stride to speak of.
  const bool inner_contiguous = cols == 1 || (x.strides[1] == 1 && y.strides[1] == 1 && w.strides[0] == 1);
  return inner_contiguous && x.strides[0] >= 0 && y.strides[0] >= 0;
}

template <typename T>
int launch(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  const ak_tensor& y = call->outputs[0];
  RowsArgs<T> a{static_cast<const T*>(x.data),
                static_cast<const T*>(call->inputs[1].data),
                static_cast<T*>(y.data),
                x.shape[0],
                x.shape[1],
                x.strides[0],
                y.strides[0],
                static_cast<float>(call->scalars[0])};
  if (a.rows == 0) return AK_OK;
  const int64_t blocks = (a.rows + kRowsPerBlock - 1) / kRowsPerBlock;
  if (blocks > 0x7fffffff) return AK_ERR_UNSUPPORTED;
  const cudaStream_t stream = stream_of(call);
  const bool vector = can_vectorize(a.x, a.cols, a.x_stride) && can_vectorize<T>(a.y, a.cols, a.y_stride) &&
                      can_vectorize(a.weight, a.cols, 0);
  if (vector)
    rmsnorm_vector<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  else
    rmsnorm_scalar<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  return check_launch();
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (call == nullptr || call->abi_version != AK_ABI_VERSION) return AK_ERR_UNSUPPORTED;
  if (call->n_inputs != 2 || call->n_outputs != 1 || call->n_scalars < 1) return AK_ERR_UNSUPPORTED;
  const ak_tensor& x = call->inputs[0];
  const ak_tensor& w = call->inputs[1];
  const ak_tensor& y = call->outputs[0];
  if (w.dtype != x.dtype || y.dtype != x.dtype || !shapes_fit(x, w, y)) return AK_ERR_UNSUPPORTED;
  return dispatch_float_dtype(x.dtype, [&](auto tag) { return launch<typename decltype(tag)::type>(call); });
}
