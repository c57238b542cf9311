// layernorm, CUDA starter: y[r, :] = (x[r, :] - mean_r) / sqrt(var_r + eps) * weight + bias, with
// the biased variance over the last dim (as torch.nn.LayerNorm).
// Inputs x[M, N], weight[N], bias[N]; output y[M, N] of x's dtype; scalars[0] = eps. fp16, bf16
// and fp32 (fp32 stays fp32), any M >= 1 and any N >= 1; inner strides 1, row strides free.
//
// A group of THREADS / ROWS_PER_BLOCK threads normalizes one row; a block holds ROWS_PER_BLOCK
// groups, so the grid is one block per ROWS_PER_BLOCK rows and needs no device properties.
// Two passes for the variance: a mean m0, then sum(d) and sum(d^2) for d = x - m0 in one reduction
// (E[x^2] - E[x]^2 cancels to noise on rows with a small variance around a large mean). sum(d) / N
// corrects m0's rounding, which would cost ulps(m0) / stddev on such rows. Sums are in float,
// reduced with warp shuffles, then shared memory, in a fixed order.
//
// Variants, picked per call:
//   vector  x, y, weight and bias 16-byte aligned and N and both row strides whole 16-byte
//           vectors: 16-byte loads and stores. The first REGISTER_VECS vectors of each thread
//           stay in registers for all three passes (mean, variance, write), so a row of up to
//           THREADS / ROWS_PER_BLOCK * REGISTER_VECS vectors is read from memory once; the rest
//           of a longer row is read again in each pass (from L2 when it is still there).
//   scalar  anything else (odd N, misaligned views): one element per access, three reads.
//
// Tuning parameters (-D definitions; the defaults below let the file compile alone):
//   THREADS         threads per block
//   ROWS_PER_BLOCK  rows a block normalizes at once (short rows waste fewer threads)
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
  const T* weight;
  const T* bias;
  T* y;
  int64_t rows, cols;
  int64_t x_stride, y_stride;  // in elements
  float eps;
};

// Makes the compiler forget what it knows about `v`, so it converts the packed values again in
// the next pass instead of holding the last pass's floats (twice the registers, enough to spill).
template <typename T>
__device__ __forceinline__ void forget(Vec16<T>& v) {
  asm volatile("" : "+r"(v.raw.x), "+r"(v.raw.y), "+r"(v.raw.z), "+r"(v.raw.w));
}

template <typename T>
__device__ __forceinline__ float vec_sum(const Vec16<T>& v) {
  float f[Vec16<T>::kSize];
  v.to_floats(f);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < Vec16<T>::kSize; ++i) s += f[i];
  return s;
}

// Adds d = x - mean to `acc.x` and d^2 to `acc.y`.
__device__ __forceinline__ void add_deviation(float x, float mean, float2& acc) {
  const float d = x - mean;
  acc.x += d;
  acc.y = __fmaf_rn(d, d, acc.y);
}

template <typename T>
__device__ __forceinline__ void add_deviations(const Vec16<T>& v, float mean, float2& acc) {
  float f[Vec16<T>::kSize];
  v.to_floats(f);
#pragma unroll
  for (int i = 0; i < Vec16<T>::kSize; ++i) add_deviation(f[i], mean, acc);
}

// group_sum for both halves of a float2 at once: one barrier instead of two.
template <int GROUP>
__device__ __forceinline__ float2 group_sum2(float2 v, float2* scratch) {
  v = make_float2(warp_sum(v.x), warp_sum(v.y));
  if constexpr (GROUP == 32) {
    return v;
  } else {
    if (threadIdx.x % 32 == 0) scratch[(threadIdx.x % GROUP) / 32] = v;
    __syncthreads();
    float2 total = make_float2(0.0f, 0.0f);
#pragma unroll
    for (int w = 0; w < GROUP / 32; ++w) total = make_float2(total.x + scratch[w].x, total.y + scratch[w].y);
    return total;
  }
}

// A row's statistics: y = ((x - mean) - correction) * rstd * weight + bias.
struct RowStats {
  float mean;
  float correction;
  float rstd;
};

// From the mean and the row's sums of d and d^2 (see the header comment).
__device__ __forceinline__ RowStats row_stats(float mean, float2 deviations, float inv_cols, float eps) {
  const float correction = deviations.x * inv_cols;
  // sum(d^2) / N >= correction^2 exactly; rounding may cross it on a constant row.
  const float var = fmaxf(deviations.y * inv_cols - correction * correction, 0.0f);
  return {mean, correction, rsqrtf(var + eps)};
}

__device__ __forceinline__ float normalize(float x, float w, float b, const RowStats& s) {
  return __fmaf_rn(((x - s.mean) - s.correction) * s.rstd, w, b);
}

template <typename T>
__device__ __forceinline__ Vec16<T> vec_normalize(const Vec16<T>& x, const Vec16<T>& w, const Vec16<T>& b,
                                                  const RowStats& s) {
  float xf[Vec16<T>::kSize], wf[Vec16<T>::kSize], bf[Vec16<T>::kSize];
  x.to_floats(xf);
  w.to_floats(wf);
  b.to_floats(bf);
#pragma unroll
  for (int i = 0; i < Vec16<T>::kSize; ++i) xf[i] = normalize(xf[i], wf[i], bf[i], s);
  return Vec16<T>::from_floats(xf);
}

template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm) layernorm_vector(RowsArgs<T> a) {
  constexpr int kVec = Vec16<T>::kSize;
  constexpr int kCachedSpan = kRegisterVecs * kRowThreads;  // vectors of a row held in registers
  // Two scratch arrays, so the second reduction needs no barrier to protect the first's reads.
  __shared__ float mean_scratch[kThreads / 32];
  __shared__ float2 deviation_scratch[kThreads / 32];
  const RowSlot slot = row_slot<kRowThreads, kRowsPerBlock>(a.rows);
  // Offsets within a row are 32-bit (ak_launch checks N): fewer registers than 64-bit indices.
  const int vecs = slot.active ? static_cast<int>(a.cols / kVec) : 0;
  const T* x = a.x + (slot.active ? slot.row : 0) * a.x_stride;
  const float inv_cols = 1.0f / static_cast<float>(a.cols);

  // All cached loads are issued before the first use, so they are in flight together.
  Vec16<T> cached[kRegisterVecs];
#pragma unroll
  for (int i = 0; i < kRegisterVecs; ++i) {
    const int v = slot.lane + i * kRowThreads;
    if (v < vecs) cached[i] = load_vec16_readonly(x + v * kVec);
  }
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kRegisterVecs; ++i) {
    if (slot.lane + i * kRowThreads < vecs) sum += vec_sum(cached[i]);
  }
  // The rest of a long row. Not unrolled: unrolling would raise every row's register count.
#pragma unroll 1
  for (int v = slot.lane + kCachedSpan; v < vecs; v += kRowThreads)
    sum += vec_sum(load_vec16_readonly(x + v * kVec));
  const float mean = group_sum<kRowThreads>(sum, mean_scratch + slot.group * kRowWarps) * inv_cols;

  float2 deviations = make_float2(0.0f, 0.0f);
#pragma unroll
  for (int i = 0; i < kRegisterVecs; ++i) {
    forget(cached[i]);
    if (slot.lane + i * kRowThreads < vecs) add_deviations(cached[i], mean, deviations);
  }
#pragma unroll 1
  for (int v = slot.lane + kCachedSpan; v < vecs; v += kRowThreads)
    add_deviations(load_vec16_readonly(x + v * kVec), mean, deviations);
  deviations = group_sum2<kRowThreads>(deviations, deviation_scratch + slot.group * kRowWarps);
  if (!slot.active) return;  // only after every thread has passed both barriers
  const RowStats stats = row_stats(mean, deviations, inv_cols, a.eps);

  T* y = a.y + slot.row * a.y_stride;
#pragma unroll
  for (int i = 0; i < kRegisterVecs; ++i) {
    forget(cached[i]);
    const int v = slot.lane + i * kRowThreads;
    if (v < vecs) {
      const int offset = v * kVec;
      store_vec16(y + offset, vec_normalize(cached[i], load_vec16_readonly(a.weight + offset),
                                            load_vec16_readonly(a.bias + offset), stats));
    }
  }
#pragma unroll 1
  for (int v = slot.lane + kCachedSpan; v < vecs; v += kRowThreads) {
    const int offset = v * kVec;
    store_vec16(y + offset,
                vec_normalize(load_vec16_readonly(x + offset), load_vec16_readonly(a.weight + offset),
                              load_vec16_readonly(a.bias + offset), stats));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm) layernorm_scalar(RowsArgs<T> a) {
  __shared__ float mean_scratch[kThreads / 32];
  __shared__ float2 deviation_scratch[kThreads / 32];
  const RowSlot slot = row_slot<kRowThreads, kRowsPerBlock>(a.rows);
  const int cols = slot.active ? static_cast<int>(a.cols) : 0;
  const T* x = a.x + (slot.active ? slot.row : 0) * a.x_stride;
  const float inv_cols = 1.0f / static_cast<float>(a.cols);

  float sum = 0.0f;
  for (int j = slot.lane; j < cols; j += kRowThreads) sum += to_float(x[j]);
  const float mean = group_sum<kRowThreads>(sum, mean_scratch + slot.group * kRowWarps) * inv_cols;
  float2 deviations = make_float2(0.0f, 0.0f);
  for (int j = slot.lane; j < cols; j += kRowThreads) add_deviation(to_float(x[j]), mean, deviations);
  deviations = group_sum2<kRowThreads>(deviations, deviation_scratch + slot.group * kRowWarps);
  if (!slot.active) return;
  const RowStats stats = row_stats(mean, deviations, inv_cols, a.eps);

  T* y = a.y + slot.row * a.y_stride;
  for (int j = slot.lane; j < cols; j += kRowThreads)
    y[j] = from_float<T>(normalize(to_float(x[j]), to_float(a.weight[j]), to_float(a.bias[j]), stats));
}

bool shapes_fit(const ak_tensor& x, const ak_tensor& w, const ak_tensor& b, const ak_tensor& y) {
  if (x.ndim != 2 || w.ndim != 1 || b.ndim != 1 || y.ndim != 2) return false;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  // The bound on N keeps `j += kRowThreads` inside int.
  if (rows < 0 || cols < 1 || cols > INT32_MAX - 1024 || w.shape[0] != cols || b.shape[0] != cols ||
      y.shape[0] != rows || y.shape[1] != cols)
    return false;
  // Elements of a row must be adjacent; a single column has no inner stride to speak of.
  const bool inner_contiguous =
      cols == 1 || (x.strides[1] == 1 && y.strides[1] == 1 && w.strides[0] == 1 && b.strides[0] == 1);
  return inner_contiguous && x.strides[0] >= 0 && y.strides[0] >= 0;
}

template <typename T>
int launch(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  const ak_tensor& y = call->outputs[0];
  const RowsArgs<T> a{static_cast<const T*>(x.data),
                      static_cast<const T*>(call->inputs[1].data),
                      static_cast<const T*>(call->inputs[2].data),
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
                      can_vectorize(a.weight, a.cols, 0) && can_vectorize(a.bias, a.cols, 0);
  if (vector)
    layernorm_vector<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  else
    layernorm_scalar<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  return check_launch();
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (call == nullptr || call->abi_version != AK_ABI_VERSION) return AK_ERR_UNSUPPORTED;
  if (call->n_inputs != 3 || call->n_outputs != 1 || call->n_scalars < 1) return AK_ERR_UNSUPPORTED;
  const ak_tensor& x = call->inputs[0];
  const ak_tensor& w = call->inputs[1];
  const ak_tensor& b = call->inputs[2];
  const ak_tensor& y = call->outputs[0];
  if (w.dtype != x.dtype || b.dtype != x.dtype || y.dtype != x.dtype || !shapes_fit(x, w, b, y))
    return AK_ERR_UNSUPPORTED;
  return dispatch_float_dtype(x.dtype, [&](auto tag) { return launch<typename decltype(tag)::type>(call); });
}
