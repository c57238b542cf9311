// rotary_embedding, CUDA starter, the "rotate_half" form: for i < D/2 at position s,
//   y[i]       = x[i] * cos[s, i] - x[i + D/2] * sin[s, i]
//   y[i + D/2] = x[i + D/2] * cos[s, i] + x[i] * sin[s, i]
// Inputs x[B, H, S, D], cos[S, D/2], sin[S, D/2]; output y[B, H, S, D]; all of one dtype, fp16,
// bf16 or fp32 (fp32 stays fp32); no scalars. Any B, H, S >= 1 and even D >= 2; inner strides 1,
// the other strides free (a transposed [B, S, H, D] view works as it is). Arithmetic in float,
// rounded once on the store.
//
// A thread owns one slot (s, i .. i + w - 1) of the first half of a row and the matching slot of
// the second half, for HEADS rows that share the position s: it reads that slot of the cos and
// sin tables once and applies it to every one of those rows, so the tables (which every head
// reads again) cost a fraction of the traffic of x. blockIdx.x walks the slots of all positions,
// blockIdx.y the groups of HEADS (batch, head) rows; the grid needs no device properties.
//
// Variants, picked per call:
//   vector  x, y, cos and sin 16-byte aligned and D/2 and every outer stride whole 16-byte
//           vectors: w is a 16-byte vector; 16-byte loads and stores.
//   scalar  anything else (D/2 odd, misaligned views): w = 1, one element per access.
//
// Tuning parameters (-D definitions; the defaults below let the file compile alone):
//   THREADS  threads per block
//   HEADS    (batch, head) rows each thread rotates with one read of the tables
//
// @tune THREADS: 128, 256, 512
// @tune HEADS: 1, 2, 4, 8
// @require HEADS == 1 || B * H >= 2 * HEADS
#include <type_traits>

#include "autokernel/cuda_kernel.cuh"

#ifndef THREADS
#define THREADS 256
#endif
#ifndef HEADS
#define HEADS 4
#endif

namespace {

using namespace ak_cuda;

constexpr int kThreads = THREADS;
constexpr int kHeads = HEADS;
static_assert(kThreads <= 1024 && kThreads % 32 == 0 && kHeads >= 1, "a block is whole warps");
// A register budget that holds the loads of HEADS rows in flight without spilling: 64 registers
// a thread (half the SM's threads resident) for one row, 80 for two, 128 beyond. Fewer resident
// threads still keep as many bytes in flight, since each has more loads out.
constexpr int kResidentThreads = kHeads == 1 ? 1024 : kHeads == 2 ? 768 : 512;
constexpr int kMinBlocksPerSm = kResidentThreads / kThreads > 0 ? kResidentThreads / kThreads : 1;
constexpr unsigned kMaxGridY = 65535;

// One element with Vec16's interface, for the scalar variant.
template <typename T>
struct One {
  static constexpr int kSize = 1;
  T value;

  __device__ __forceinline__ void to_floats(float (&out)[1]) const { out[0] = to_float(value); }
  __device__ __forceinline__ static One from_floats(const float (&in)[1]) {
    return One{from_float<T>(in[0])};
  }
};

// Only for inputs: the vector form reads through the non-coherent cache.
template <typename Pack, typename T>
__device__ __forceinline__ Pack load_pack(const T* p) {
  if constexpr (std::is_same_v<Pack, Vec16<T>>)
    return load_vec16_readonly(p);
  else
    return Pack{*p};
}

// The vector form is a streaming store (y is not read again) through an intrinsic: a plain uint4
// store here came out of the compiler as four 4-byte stores.
template <typename Pack, typename T>
__device__ __forceinline__ void store_pack(T* p, const Pack& v) {
  if constexpr (std::is_same_v<Pack, Vec16<T>>)
    __stcs(reinterpret_cast<uint4*>(p), v.raw);
  else
    *p = v.value;
}

// Strides in elements; positions * slots_per_position and slices fit in 32 bits (ak_launch).
template <typename T>
struct RopeArgs {
  const T* x;
  const T* cos;
  const T* sin;
  T* y;
  int heads, slices;                       // H, and B * H
  unsigned positions, slots_per_position;  // S, and D/2 over the elements of a slot
  int64_t half;                            // D/2
  int64_t x_b, x_h, x_s;
  int64_t y_b, y_h, y_s;
  int64_t cos_s, sin_s;
};

// Makes the compiler forget what it knows about a table vector, so it converts it again for each
// row instead of holding its floats for all of them (twice the registers, enough to spill).
template <typename Pack>
__device__ __forceinline__ void forget(Pack& v) {
  if constexpr (Pack::kSize > 1)
    asm volatile("" : "+r"(v.raw.x), "+r"(v.raw.y), "+r"(v.raw.z), "+r"(v.raw.w));
}

// One output slot: own * cos + sign * other * sin, where sign = -1 for the first half of a row
// (other = its second half) and +1 for the second (other = the first).
template <typename Pack>
__device__ __forceinline__ Pack rotate(const Pack& own, const Pack& other, Pack cos, Pack sin, float sign) {
  forget(cos);
  forget(sin);
  float a[Pack::kSize], b[Pack::kSize], c[Pack::kSize], s[Pack::kSize];
  own.to_floats(a);
  other.to_floats(b);
  cos.to_floats(c);
  sin.to_floats(s);
#pragma unroll
  for (int i = 0; i < Pack::kSize; ++i) a[i] = __fmaf_rn(a[i], c[i], sign * b[i] * s[i]);
  return Pack::from_floats(a);
}

template <typename T, typename Pack>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm) rope(RopeArgs<T> a) {
  constexpr int kWidth = Pack::kSize;
  const unsigned slot = blockIdx.x * kThreads + threadIdx.x;
  if (slot >= a.positions * a.slots_per_position) return;  // no barriers below
  const unsigned position = slot / a.slots_per_position;
  const int64_t column = static_cast<int64_t>(slot - position * a.slots_per_position) * kWidth;

  const Pack cos = load_pack<Pack>(a.cos + position * a.cos_s + column);
  const Pack sin = load_pack<Pack>(a.sin + position * a.sin_s + column);

  const int groups = (a.slices + kHeads - 1) / kHeads;
  for (int group = blockIdx.y; group < groups; group += gridDim.y) {
    // All loads of the group are issued before the first use, so they are in flight together.
    Pack first[kHeads], second[kHeads];
#pragma unroll
    for (int k = 0; k < kHeads; ++k) {
      const int slice = group * kHeads + k;
      if (slice >= a.slices) break;
      const int b = slice / a.heads, h = slice - b * a.heads;
      const T* x = a.x + b * a.x_b + h * a.x_h + position * a.x_s + column;
      first[k] = load_pack<Pack>(x);
      second[k] = load_pack<Pack>(x + a.half);
    }
#pragma unroll
    for (int k = 0; k < kHeads; ++k) {
      const int slice = group * kHeads + k;
      if (slice >= a.slices) break;
      const int b = slice / a.heads, h = slice - b * a.heads;
      T* y = a.y + b * a.y_b + h * a.y_h + position * a.y_s + column;
      store_pack(y, rotate(first[k], second[k], cos, sin, -1.0f));
      store_pack(y + a.half, rotate(second[k], first[k], cos, sin, 1.0f));
    }
  }
}

bool shapes_fit(const ak_tensor& x, const ak_tensor& cos, const ak_tensor& sin, const ak_tensor& y) {
  if (x.ndim != 4 || cos.ndim != 2 || sin.ndim != 2 || y.ndim != 4) return false;
  const int64_t s_len = x.shape[2], d = x.shape[3];
  for (int i = 0; i < 4; ++i)
    if (x.shape[i] < 1 || y.shape[i] != x.shape[i]) return false;
  if (d % 2 != 0 || cos.shape[0] != s_len || cos.shape[1] != d / 2 || sin.shape[0] != s_len ||
      sin.shape[1] != d / 2)
    return false;
  // 32-bit slot and slice indices; past these the tables alone would be gigabytes.
  if (s_len * (d / 2) > INT32_MAX - kThreads || x.shape[0] * x.shape[1] > INT32_MAX - kHeads) return false;
  // Elements of a row (and of a table row) must be adjacent; one element has no inner stride.
  const bool inner_contiguous =
      x.strides[3] == 1 && y.strides[3] == 1 && (d == 2 || (cos.strides[1] == 1 && sin.strides[1] == 1));
  bool non_negative = cos.strides[0] >= 0 && sin.strides[0] >= 0;
  for (int i = 0; i < 3; ++i) non_negative = non_negative && x.strides[i] >= 0 && y.strides[i] >= 0;
  return inner_contiguous && non_negative;
}

template <typename T>
bool can_vectorize_all(const RopeArgs<T>& a) {
  constexpr int64_t kVec = Vec16<T>::kSize;
  const int64_t strides[] = {a.half, a.x_b, a.x_h, a.x_s, a.y_b, a.y_h, a.y_s, a.cos_s, a.sin_s};
  for (const int64_t stride : strides)
    if (stride % kVec != 0) return false;
  return is_aligned16(a.x) && is_aligned16(a.y) && is_aligned16(a.cos) && is_aligned16(a.sin);
}

template <typename T, typename Pack>
int launch_variant(RopeArgs<T> a, cudaStream_t stream) {
  a.slots_per_position = static_cast<unsigned>(a.half / Pack::kSize);
  const unsigned slots = a.positions * a.slots_per_position;
  const unsigned groups = static_cast<unsigned>((a.slices + kHeads - 1) / kHeads);
  const dim3 grid((slots + kThreads - 1) / kThreads, groups < kMaxGridY ? groups : kMaxGridY);
  rope<T, Pack><<<grid, kThreads, 0, stream>>>(a);
  return check_launch();
}

template <typename T>
int launch(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  const ak_tensor& y = call->outputs[0];
  const RopeArgs<T> a{static_cast<const T*>(x.data),
                      static_cast<const T*>(call->inputs[1].data),
                      static_cast<const T*>(call->inputs[2].data),
                      static_cast<T*>(y.data),
                      static_cast<int>(x.shape[1]),
                      static_cast<int>(x.shape[0] * x.shape[1]),
                      static_cast<unsigned>(x.shape[2]),
                      0,
                      x.shape[3] / 2,
                      x.strides[0],
                      x.strides[1],
                      x.strides[2],
                      y.strides[0],
                      y.strides[1],
                      y.strides[2],
                      call->inputs[1].strides[0],
                      call->inputs[2].strides[0]};
  const cudaStream_t stream = stream_of(call);
  if (can_vectorize_all(a)) return launch_variant<T, Vec16<T>>(a, stream);
  return launch_variant<T, One<T>>(a, stream);
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (call == nullptr || call->abi_version != AK_ABI_VERSION) return AK_ERR_UNSUPPORTED;
  if (call->n_inputs != 3 || call->n_outputs != 1) return AK_ERR_UNSUPPORTED;
  const ak_tensor& x = call->inputs[0];
  const ak_tensor& cos = call->inputs[1];
  const ak_tensor& sin = call->inputs[2];
  const ak_tensor& y = call->outputs[0];
  if (cos.dtype != x.dtype || sin.dtype != x.dtype || y.dtype != x.dtype || !shapes_fit(x, cos, sin, y))
    return AK_ERR_UNSUPPORTED;
  return dispatch_float_dtype(x.dtype, [&](auto tag) { return launch<typename decltype(tag)::type>(call); });
}
