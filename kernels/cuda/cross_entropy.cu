// cross_entropy, CUDA starter: loss[r] = logsumexp(logits[r, :]) - logits[r, targets[r]] and
// mean_loss[0] = mean_r loss[r].
// Inputs logits[M, V] (fp16, bf16 or fp32), targets[M] (int64, in [0, V)); outputs loss[M] and
// mean_loss[1] (fp32); no scalars. Any M >= 1 and any V >= 1; the inner stride of logits is 1,
// its row stride and the strides of targets and loss are free.
//
// Two kernels on the call's stream:
//   rows  a group of THREADS / ROWS_PER_BLOCK threads reads its row once, keeping an online
//         (running max, sum of exp(x - max)) pair per thread: each round of UNROLL loads finds
//         its own max, rescales the running sum once if the max rose, and adds its exponentials.
//         The group then takes the row's max, rescales each thread's sum to it and adds them, in
//         a fixed order. One thread fetches the target's logit directly. A target outside
//         [0, V) gives a NaN loss instead of a read out of bounds.
//   mean  one block adds loss[] in a fixed order and divides by M. No atomics, so the mean is
//         bitwise the same on every run.
// Exponentials are ex2.approx of x * log2(e) - offset, one fused multiply-add each, where the
// offset is the running max times log2(e), rounded once: every term of a sum shares it, and a
// sum moves to a new offset only when the max rises.
//
// Variants of the rows kernel, picked per call:
//   vector  logits 16-byte aligned and V and its row stride whole 16-byte vectors: 16-byte loads.
//   scalar  anything else (odd V, misaligned views): one element per load.
//
// Tuning parameters (-D definitions; the defaults below let the file compile alone):
//   THREADS         threads per block of the rows kernel
//   ROWS_PER_BLOCK  rows a block handles at once (short rows waste fewer threads)
//   UNROLL          loads each thread has in flight in a round
//
// @tune THREADS: 256, 512, 1024
// @tune ROWS_PER_BLOCK: 1, 2, 4, 8
// @tune UNROLL: 1, 2, 4
// @require THREADS / ROWS_PER_BLOCK >= 32
// @require ROWS_PER_BLOCK == 1 || V <= 8192
#include "autokernel/cuda_kernel.cuh"

#ifndef THREADS
#define THREADS 512
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

namespace {

using namespace ak_cuda;

constexpr int kThreads = THREADS;
constexpr int kRowsPerBlock = ROWS_PER_BLOCK;
constexpr int kRowThreads = kThreads / kRowsPerBlock;
constexpr int kRowWarps = kRowThreads / 32;
constexpr int kUnroll = UNROLL;
static_assert(kThreads % kRowsPerBlock == 0 && kRowThreads % 32 == 0, "each row gets whole warps");
static_assert(kThreads <= 1024 && kUnroll >= 1, "a block has at most 1024 threads");
// Half the SM's threads resident at least: a fixed budget of 64 registers per thread.
constexpr int kMinBlocksPerSm = 1024 / kThreads;
constexpr int kMeanThreads = 1024;

template <typename T>
struct RowsArgs {
  const T* logits;
  const int64_t* targets;
  float* loss;
  int64_t rows, cols;
  int64_t logits_stride, targets_stride, loss_stride;  // in elements
};

// max * log2(e), or 0 while nothing finite has been seen: -inf - -inf would be a NaN.
__device__ __forceinline__ float exp_offset(float max) {
  return max == -INFINITY ? 0.0f : max * kLog2e;
}

// sum * exp2(from - to), the sum re-based from offset `from` to a larger `to`. A zero sum stays
// zero without the exponential, which may overflow when `from` belongs to no finite value.
__device__ __forceinline__ float rebase(float sum, float from, float to) {
  return sum == 0.0f ? 0.0f : sum * fast_exp2(from - to);
}

// The running max of one thread's share of a row and sum of exp2(x * log2(e) - offset), where
// offset = exp_offset(max). Re-basing by the difference of the offsets (not by the max's own
// rounding error) keeps a sum whose max did not move exactly as it was.
struct OnlineSum {
  float max = -INFINITY;
  float offset = 0.0f;
  float sum = 0.0f;

  // Adds a round of values whose max is `round_max`; `add_exps(offset)` returns the sum of their
  // exp2(x * log2(e) - offset).
  template <typename AddExps>
  __device__ __forceinline__ void add_round(float round_max, AddExps add_exps) {
    const float new_max = fmaxf(max, round_max);
    const float new_offset = exp_offset(new_max);
    sum = rebase(sum, offset, new_offset) + add_exps(new_offset);
    max = new_max;
    offset = new_offset;
  }
};

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
__device__ __forceinline__ float vec_exp_sum(const Vec16<T>& v, float offset) {
  float f[Vec16<T>::kSize];
  v.to_floats(f);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < Vec16<T>::kSize; ++i) s += fast_exp2(__fmaf_rn(f[i], kLog2e, -offset));
  return s;
}

// Makes the compiler forget what it knows about `v`, so it converts the packed values again for
// the exponentials instead of holding the max pass's floats (twice the registers).
template <typename T>
__device__ __forceinline__ void forget(Vec16<T>& v) {
  asm volatile("" : "+r"(v.raw.x), "+r"(v.raw.y), "+r"(v.raw.z), "+r"(v.raw.w));
}

// The maximum of `v` over the row's group (see group_sum in cuda_kernel.cuh for the rules).
__device__ __forceinline__ float group_max(float v, float* scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if constexpr (kRowThreads == 32) {
    return v;
  } else {
    if (threadIdx.x % 32 == 0) scratch[(threadIdx.x % kRowThreads) / 32] = v;
    __syncthreads();
    float total = scratch[0];
#pragma unroll
    for (int w = 1; w < kRowWarps; ++w) total = fmaxf(total, scratch[w]);
    return total;
  }
}

// The row's target, loaded by the thread that writes the loss before the row is streamed, so its
// latency hides behind the streaming; -1 elsewhere.
template <typename T>
__device__ __forceinline__ int64_t load_target(const RowsArgs<T>& a, const RowSlot& slot) {
  return slot.active && slot.lane == 0 ? a.targets[slot.row * a.targets_stride] : -1;
}

// The logit at the target, fetched after the streaming (it is in L2 by then) and converted only
// in finish_row, after the group's barriers: the load stays in flight across them. NaN for a
// target outside [0, V), instead of a read out of bounds.
template <typename T>
struct PickedLogit {
  T raw;
  bool valid;
};

template <typename T>
__device__ __forceinline__ PickedLogit<T> fetch_logit(const RowsArgs<T>& a, const T* row, int64_t target) {
  PickedLogit<T> picked{from_float<T>(0.0f), target >= 0 && target < a.cols};
  if (picked.valid) picked.raw = row[target];
  return picked;
}

// Combines the threads' pairs into the row's loss and writes it.
template <typename T>
__device__ __forceinline__ void finish_row(const RowsArgs<T>& a, const RowSlot& slot, const OnlineSum& part,
                                           const PickedLogit<T>& picked) {
  __shared__ float max_scratch[kThreads / 32];
  __shared__ float sum_scratch[kThreads / 32];  // apart from max_scratch: no barrier between them
  const float row_max = group_max(part.max, max_scratch + slot.group * kRowWarps);
  const float scaled = rebase(part.sum, part.offset, exp_offset(row_max));
  const float total = group_sum<kRowThreads>(scaled, sum_scratch + slot.group * kRowWarps);
  if (!slot.active || slot.lane != 0) return;
  // log(total) is relative to exp_offset(row_max) / log2(e), which differs from row_max by the
  // rounding of row_max * log2(e): a few float ulps of row_max at most.
  const float logit = picked.valid ? to_float(picked.raw) : __int_as_float(0x7fffffff);
  a.loss[slot.row * a.loss_stride] = row_max + logf(total) - logit;
}

template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm) rows_vector(RowsArgs<T> a) {
  constexpr int kVec = Vec16<T>::kSize;
  const RowSlot slot = row_slot<kRowThreads, kRowsPerBlock>(a.rows);
  // Offsets within a row are 32-bit (ak_launch checks V): fewer registers than 64-bit indices.
  const int vecs = slot.active ? static_cast<int>(a.cols / kVec) : 0;
  const T* row = a.logits + (slot.active ? slot.row : 0) * a.logits_stride;
  const int64_t target = load_target(a, slot);

  OnlineSum part;
  for (int base = slot.lane; base < vecs; base += kUnroll * kRowThreads) {
    // All loads of a round are issued before the first use, so they are in flight together.
    Vec16<T> chunk[kUnroll];
    float round_max = -INFINITY;
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      const int v = base + i * kRowThreads;
      if (v < vecs) chunk[i] = load_vec16_readonly(row + v * kVec);
    }
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      if (base + i * kRowThreads < vecs) round_max = fmaxf(round_max, vec_max(chunk[i]));
    }
    part.add_round(round_max, [&](float offset) {
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < kUnroll; ++i) {
        forget(chunk[i]);
        if (base + i * kRowThreads < vecs) s += vec_exp_sum(chunk[i], offset);
      }
      return s;
    });
  }
  finish_row(a, slot, part, fetch_logit(a, row, target));
}

template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm) rows_scalar(RowsArgs<T> a) {
  // A round of scalars carries as many elements as a round of vectors.
  constexpr int kRound = kUnroll * Vec16<T>::kSize;
  const RowSlot slot = row_slot<kRowThreads, kRowsPerBlock>(a.rows);
  const int cols = slot.active ? static_cast<int>(a.cols) : 0;
  const T* row = a.logits + (slot.active ? slot.row : 0) * a.logits_stride;
  const int64_t target = load_target(a, slot);

  OnlineSum part;
  for (int base = slot.lane; base < cols; base += kRound * kRowThreads) {
    float chunk[kRound];
    float round_max = -INFINITY;
#pragma unroll
    for (int i = 0; i < kRound; ++i) {
      const int j = base + i * kRowThreads;
      // exp2(-inf - offset) is 0: a missing element adds nothing.
      chunk[i] = j < cols ? to_float(row[j]) : -INFINITY;
      round_max = fmaxf(round_max, chunk[i]);
    }
    part.add_round(round_max, [&](float offset) {
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < kRound; ++i) s += fast_exp2(__fmaf_rn(chunk[i], kLog2e, -offset));
      return s;
    });
  }
  finish_row(a, slot, part, fetch_logit(a, row, target));
}

__global__ void __launch_bounds__(kMeanThreads)
    mean_of_losses(const float* loss, int64_t rows, int64_t stride, float* mean) {
  __shared__ float scratch[kMeanThreads / 32];
  float sum = 0.0f;
  for (int64_t r = threadIdx.x; r < rows; r += kMeanThreads) sum += loss[r * stride];
  const float total = group_sum<kMeanThreads>(sum, scratch);
  if (threadIdx.x == 0) *mean = total / static_cast<float>(rows);
}

bool shapes_fit(const ak_call* call) {
  const ak_tensor& logits = call->inputs[0];
  const ak_tensor& targets = call->inputs[1];
  const ak_tensor& loss = call->outputs[0];
  const ak_tensor& mean = call->outputs[1];
  if (logits.ndim != 2 || targets.ndim != 1 || loss.ndim != 1 || mean.ndim != 1) return false;
  if (targets.dtype != AK_I64 || loss.dtype != AK_F32 || mean.dtype != AK_F32) return false;
  const int64_t rows = logits.shape[0], cols = logits.shape[1];
  // The bound on V keeps every `base + i * kRowThreads` inside int.
  if (rows < 1 || cols < 1 || cols > INT32_MAX / 2 || targets.shape[0] != rows || loss.shape[0] != rows ||
      mean.shape[0] != 1)
    return false;
  // Elements of a row must be adjacent; a single column has no inner stride to speak of.
  const bool inner_contiguous = cols == 1 || logits.strides[1] == 1;
  return inner_contiguous && logits.strides[0] >= 0 && targets.strides[0] >= 0 && loss.strides[0] >= 0;
}

template <typename T>
int launch(const ak_call* call) {
  const ak_tensor& logits = call->inputs[0];
  const ak_tensor& targets = call->inputs[1];
  const ak_tensor& loss = call->outputs[0];
  const RowsArgs<T> a{static_cast<const T*>(logits.data),
                      static_cast<const int64_t*>(targets.data),
                      static_cast<float*>(loss.data),
                      logits.shape[0],
                      logits.shape[1],
                      logits.strides[0],
                      targets.strides[0],
                      loss.strides[0]};
  const int64_t blocks = (a.rows + kRowsPerBlock - 1) / kRowsPerBlock;
  if (blocks > 0x7fffffff) return AK_ERR_UNSUPPORTED;
  const cudaStream_t stream = stream_of(call);
  if (can_vectorize(a.logits, a.cols, a.logits_stride))
    rows_vector<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  else
    rows_scalar<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  if (check_launch() != AK_OK) return AK_ERR_LAUNCH;
  mean_of_losses<<<1, kMeanThreads, 0, stream>>>(a.loss, a.rows, a.loss_stride,
                                                 static_cast<float*>(call->outputs[1].data));
  return check_launch();
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (call == nullptr || call->abi_version != AK_ABI_VERSION) return AK_ERR_UNSUPPORTED;
  if (call->n_inputs != 2 || call->n_outputs != 2 || !shapes_fit(call)) return AK_ERR_UNSUPPORTED;
  return dispatch_float_dtype(call->inputs[0].dtype,
                              [&](auto tag) { return launch<typename decltype(tag)::type>(call); });
}
