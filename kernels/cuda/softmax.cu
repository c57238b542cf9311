// softmax, CUDA starter: y[r, j] = exp(x[r, j] - max_r) / sum_k exp(x[r, k] - max_r), over the last dim.
// Input x[M, N]; output y[M, N] of x's dtype; no scalars. fp16, bf16 and fp32 (fp32 stays fp32),
// any M >= 1 and any N >= 1; inner strides 1, row strides free.
//
// A group of THREADS / ROWS_PER_BLOCK threads handles one row; a block holds ROWS_PER_BLOCK
// groups, so the grid is one block per ROWS_PER_BLOCK rows and needs no device properties.
// Three passes over the row: its maximum, the sum of exp(x - max), the write. Both reductions
// are warp shuffles, then shared memory, in a fixed order (deterministic). Exponentials are
// ex2.approx of x * log2(e) - max * log2(e), one fused multiply-add: the numerators and the sum
// share the same rounded offset, so its rounding cancels in the quotient.
//
// Variants, picked per call:
//   vector  x and y 16-byte aligned and N and both row strides whole 16-byte vectors: 16-byte
//           loads and stores. The first REGISTER_VECS vectors of each thread stay in registers
//           for all three passes, so a row of up to THREADS / ROWS_PER_BLOCK * REGISTER_VECS
//           vectors is read from memory once; the rest of a longer row is read again in each
//           pass (from L2 when it is still there).
//   scalar  anything else (odd N, misaligned views): one element per access, three reads.
//
// Tuning parameters (-D definitions; the defaults below let the file compile alone):
//   THREADS         threads per block
//   ROWS_PER_BLOCK  rows a block handles at once (short rows waste fewer threads)
//   REGISTER_VECS   16-byte vectors per thread kept in registers
//
// @tune THREADS: 128, 256, 512, 1024
// @tune ROWS_PER_BLOCK: 1, 2, 4, 8
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
#define REGISTER_VECS 4
#endif

namespace {

using namespace ak_cuda;

constexpr int kThreads = THREADS;
constexpr int kRowsPerBlock = ROWS_PER_BLOCK;
constexpr int kRowThreads = kThreads / kRowsPerBlock;
constexpr int kRowWarps = kRowThreads / 32;
constexpr int kRegisterVecs = REGISTER_VECS;
static_assert(kThreads % kRowsPerBlock == 0 && kRowThreads % 32 == 0, "each row gets whole warps");
static_assert(kThreads <= 1024 && kRegisterVecs >= 1, "a block has at most 1024 threads");
// Half the SM's threads resident at least: a fixed budget of 64 registers per thread, which
// keeps ptxas from picking a smaller one of its own and spilling.
constexpr int kMinBlocksPerSm = 1024 / kThreads;

template <typename T>
struct RowsArgs {
  const T* x;
  T* y;
  int64_t rows, cols;
  int64_t x_stride, y_stride;  // in elements
};

// exp(x - max) for a row whose max is given as max * log2(e).
__device__ __forceinline__ float exp_shifted(float x, float max_log2) {
  return fast_exp2(__fmaf_rn(x, kLog2e, -max_log2));
}

// The maximum of `v` over a group of GROUP threads (see group_sum for the rules).
template <int GROUP>
__device__ __forceinline__ float group_max(float v, float* scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if constexpr (GROUP == 32) {
    return v;
  } else {
    if (threadIdx.x % 32 == 0) scratch[(threadIdx.x % GROUP) / 32] = v;
    __syncthreads();
    float total = scratch[0];
#pragma unroll
    for (int w = 1; w < GROUP / 32; ++w) total = fmaxf(total, scratch[w]);
    return total;
  }
}

// Makes the compiler forget what it knows about `v`, so it converts the packed values again in
// the next pass instead of holding the last pass's floats (twice the registers, enough to spill).
template <typename T>
__device__ __forceinline__ void forget(Vec16<T>& v) {
  asm volatile("" : "+r"(v.raw.x), "+r"(v.raw.y), "+r"(v.raw.z), "+r"(v.raw.w));
}

template <typename T>
__device__ __forceinline__ float vec_max(const Vec16<T>& v) {
  float f[Vec16<T>::kSize];
  v.to_floats(f);
  float m = f[0];
#pragma unroll
  for (int i = 1; i < Vec16<T>::kSize; ++i) m = fmaxf(m, f[i]);
  return m;
}

template <typename T>
__device__ __forceinline__ float vec_exp_sum(const Vec16<T>& v, float max_log2) {
  float f[Vec16<T>::kSize];
  v.to_floats(f);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < Vec16<T>::kSize; ++i) s += exp_shifted(f[i], max_log2);
  return s;
}

template <typename T>
__device__ __forceinline__ Vec16<T> vec_softmax(const Vec16<T>& v, float max_log2, float inv_sum) {
  float f[Vec16<T>::kSize];
  v.to_floats(f);
#pragma unroll
  for (int i = 0; i < Vec16<T>::kSize; ++i) f[i] = exp_shifted(f[i], max_log2) * inv_sum;
  return Vec16<T>::from_floats(f);
}

template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm) softmax_vector(RowsArgs<T> a) {
  constexpr int kVec = Vec16<T>::kSize;
  constexpr int kCachedSpan = kRegisterVecs * kRowThreads;  // vectors of a row held in registers
  __shared__ float max_scratch[kThreads / 32];
  __shared__ float sum_scratch[kThreads / 32];  // apart from max_scratch: no barrier between them
  const RowSlot slot = row_slot<kRowThreads, kRowsPerBlock>(a.rows);
  // Offsets within a row are 32-bit (ak_launch checks N): fewer registers than 64-bit indices.
  const int vecs = slot.active ? static_cast<int>(a.cols / kVec) : 0;
  const T* x = a.x + (slot.active ? slot.row : 0) * a.x_stride;

  // All cached loads are issued before the first use, so they are in flight together.
  Vec16<T> cached[kRegisterVecs];
#pragma unroll
  for (int i = 0; i < kRegisterVecs; ++i) {
    const int v = slot.lane + i * kRowThreads;
    if (v < vecs) cached[i] = load_vec16_readonly(x + v * kVec);
  }
  float max = -INFINITY;
#pragma unroll
  for (int i = 0; i < kRegisterVecs; ++i) {
    if (slot.lane + i * kRowThreads < vecs) max = fmaxf(max, vec_max(cached[i]));
  }
  // The rest of a long row. Not unrolled: unrolling would raise every row's register count.
#pragma unroll 1
  for (int v = slot.lane + kCachedSpan; v < vecs; v += kRowThreads)
    max = fmaxf(max, vec_max(load_vec16_readonly(x + v * kVec)));
  const float max_log2 = group_max<kRowThreads>(max, max_scratch + slot.group * kRowWarps) * kLog2e;

  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kRegisterVecs; ++i) {
    forget(cached[i]);
    if (slot.lane + i * kRowThreads < vecs) sum += vec_exp_sum(cached[i], max_log2);
  }
#pragma unroll 1
  for (int v = slot.lane + kCachedSpan; v < vecs; v += kRowThreads)
    sum += vec_exp_sum(load_vec16_readonly(x + v * kVec), max_log2);
  const float total = group_sum<kRowThreads>(sum, sum_scratch + slot.group * kRowWarps);
  if (!slot.active) return;  // only after every thread has passed both barriers
  const float inv_sum = 1.0f / total;

  T* y = a.y + slot.row * a.y_stride;
#pragma unroll
  for (int i = 0; i < kRegisterVecs; ++i) {
    forget(cached[i]);
    const int v = slot.lane + i * kRowThreads;
    if (v < vecs) store_vec16(y + v * kVec, vec_softmax(cached[i], max_log2, inv_sum));
  }
#pragma unroll 1
  for (int v = slot.lane + kCachedSpan; v < vecs; v += kRowThreads)
    store_vec16(y + v * kVec, vec_softmax(load_vec16_readonly(x + v * kVec), max_log2, inv_sum));
}

template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm) softmax_scalar(RowsArgs<T> a) {
  __shared__ float max_scratch[kThreads / 32];
  __shared__ float sum_scratch[kThreads / 32];
  const RowSlot slot = row_slot<kRowThreads, kRowsPerBlock>(a.rows);
  const int cols = slot.active ? static_cast<int>(a.cols) : 0;
  const T* x = a.x + (slot.active ? slot.row : 0) * a.x_stride;

  float max = -INFINITY;
  for (int j = slot.lane; j < cols; j += kRowThreads) max = fmaxf(max, to_float(x[j]));
  const float max_log2 = group_max<kRowThreads>(max, max_scratch + slot.group * kRowWarps) * kLog2e;
  float sum = 0.0f;
  for (int j = slot.lane; j < cols; j += kRowThreads) sum += exp_shifted(to_float(x[j]), max_log2);
  const float total = group_sum<kRowThreads>(sum, sum_scratch + slot.group * kRowWarps);
  if (!slot.active) return;
  const float inv_sum = 1.0f / total;

  T* y = a.y + slot.row * a.y_stride;
  for (int j = slot.lane; j < cols; j += kRowThreads)
    y[j] = from_float<T>(exp_shifted(to_float(x[j]), max_log2) * inv_sum);
}

bool shapes_fit(const ak_tensor& x, const ak_tensor& y) {
  if (x.ndim != 2 || y.ndim != 2) return false;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  // The bound on N keeps `j += kRowThreads` inside int.
  if (rows < 0 || cols < 1 || cols > INT32_MAX - 1024 || y.shape[0] != rows || y.shape[1] != cols)
    return false;
  // Elements of a row must be adjacent; a single column has no inner stride to speak of.
  const bool inner_contiguous = cols == 1 || (x.strides[1] == 1 && y.strides[1] == 1);
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
  if (can_vectorize(a.x, a.cols, a.x_stride) && can_vectorize<T>(a.y, a.cols, a.y_stride))
    softmax_vector<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  else
    softmax_scalar<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
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
