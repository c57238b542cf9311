// Shared by the host (CPU) starter kernels in kernels/host/: storage types for fp16 and bf16 and
// their conversions to float, a dispatch over the call's dtype, argument checks, per-thread
// scratch, and the few vectorizable building blocks (lane-split sums, max, exp) they compute with.
//
// Determinism: every helper reduces in a fixed order that depends only on the length, never on
// threads, so a kernel that gives each output to one thread is bitwise reproducible.
#ifndef AUTOKERNEL_HOST_KERNEL_H
#define AUTOKERNEL_HOST_KERNEL_H

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "autokernel/abi.h"

namespace ak::host {

// ---------------------------------------------------------------------------------------------
// Element types. fp16 and bf16 are 16-bit storage only; arithmetic is always in float or double.

struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

inline float half_to_float_portable(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Subnormal (or zero): mantissa * 2^-24 is exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// Round to nearest, ties to even; overflow goes to infinity, NaN stays NaN.
inline uint16_t float_to_half_portable(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;
  // 65520 is halfway between the largest half (65504) and 2^16; ties go to the even side, inf.
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;
  if (magnitude < 0x38800000u) {
    // Below 2^-14 the half is subnormal, a multiple of 2^-24. Adding 0.5 (whose float ulp is
    // 2^-24) lets the FPU do the rounding; the low bits are then the half's bits.
    const float shifted = std::bit_cast<float>(magnitude) + 0.5f;
    return sign | static_cast<uint16_t>(std::bit_cast<uint32_t>(shifted) - 0x3f000000u);
  }
  const uint32_t odd = (magnitude >> 13) & 1u;
  const uint32_t rebased = magnitude - (112u << 23) + 0xfffu + odd;
  return sign | static_cast<uint16_t>(rebased >> 13);
}

// Where the CPU has F16C (-march=native on anything since 2012) the conversions are single
// instructions with the same rounding; the portable versions above serve the rest.
inline float half_to_float(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  return half_to_float_portable(h);
#endif
}

inline uint16_t float_to_half(float f) {
#if defined(__F16C__)
  return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
  return float_to_half_portable(f);
#endif
}

inline float bf16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t float_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

inline float to_float(float v) {
  return v;
}
inline float to_float(Half v) {
  return half_to_float(v.bits);
}
inline float to_float(BFloat16 v) {
  return bf16_to_float(v.bits);
}

template <class T>
T from_float(float v);
template <>
inline float from_float<float>(float v) {
  return v;
}
template <>
inline Half from_float<Half>(float v) {
  return Half{float_to_half(v)};
}
template <>
inline BFloat16 from_float<BFloat16>(float v) {
  return BFloat16{float_to_bf16(v)};
}

template <class T>
void to_floats(const T* __restrict src, int64_t n, float* __restrict dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = to_float(src[i]);
}

template <class T>
void from_floats(const float* __restrict src, int64_t n, T* __restrict dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = from_float<T>(src[i]);
}

// fp16 rows convert eight at a time where F16C allows; these overloads win over the templates.
inline void to_floats(const Half* __restrict src, int64_t n, float* __restrict dst) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = half_to_float(src[i].bits);
}

inline void from_floats(const float* __restrict src, int64_t n, Half* __restrict dst) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) dst[i] = Half{float_to_half(src[i])};
}

// The n elements at src as floats: src itself for fp32 (no copy), else converted into scratch.
template <class T>
const float* float_view(const T* src, int64_t n, float* scratch) {
  if constexpr (std::is_same_v<T, float>) {
    return src;
  } else {
    to_floats(src, n, scratch);
    return scratch;
  }
}

// Where to compute n outputs bound for dst: dst itself for fp32, else scratch; store_outputs
// then converts scratch into dst (and does nothing for fp32).
template <class T>
float* output_view(T* dst, float* scratch) {
  if constexpr (std::is_same_v<T, float>) {
    return dst;
  } else {
    return scratch;
  }
}
template <class T>
void store_outputs(const float* computed, int64_t n, T* dst) {
  if constexpr (!std::is_same_v<T, float>) from_floats(computed, n, dst);
}

// `count` rows of `dim` elements lying `row_stride` elements apart, as contiguous floats: the rows
// themselves where they already are (fp32, adjacent), else converted into `scratch`.
template <class T>
const float* rows_view(const T* src, int64_t row_stride, int64_t count, int64_t dim, float* scratch) {
  if (row_stride == dim) return float_view(src, count * dim, scratch);
  for (int64_t r = 0; r < count; ++r) to_floats(src + r * row_stride, dim, scratch + r * dim);
  return scratch;
}
// Contiguous float rows into rows of dst lying `row_stride` elements apart.
template <class T>
void store_rows(const float* src, int64_t count, int64_t dim, T* dst, int64_t row_stride) {
  for (int64_t r = 0; r < count; ++r) from_floats(src + r * dim, dim, dst + r * row_stride);
}

// ---------------------------------------------------------------------------------------------
// Dispatch and checks. Every failure is AK_ERR_UNSUPPORTED: the harness reports it as such.

template <class T>
struct TypeTag {
  using type = T;
};

// Calls body(TypeTag<T>{}) for the float type named by dtype.
template <class Body>
int dispatch(int32_t dtype, Body&& body) {
  switch (dtype) {
    case AK_F32: return body(TypeTag<float>{});
    case AK_F16: return body(TypeTag<Half>{});
    case AK_BF16: return body(TypeTag<BFloat16>{});
    default: return AK_ERR_UNSUPPORTED;
  }
}

inline int64_t numel(const ak_tensor& t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

// Has data, every dimension >= 1, and contiguous row-major strides.
inline bool usable(const ak_tensor& t) {
  if (t.data == nullptr || t.ndim < 1 || t.ndim > AK_MAX_DIMS) return false;
  int64_t expected_stride = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] < 1) return false;
    if (t.shape[d] > 1 && t.strides[d] != expected_stride) return false;
    expected_stride *= t.shape[d];
  }
  return true;
}

// A 2-D view of a contiguous buffer of its transpose (strides 1 and shape[0]): matmul's B when
// it holds a Linear's [N, K] weight.
inline bool usable_transposed(const ak_tensor& t) {
  return t.data != nullptr && t.ndim == 2 && t.shape[0] >= 1 && t.shape[1] >= 1 &&
         (t.shape[0] == 1 || t.strides[0] == 1) && (t.shape[1] == 1 || t.strides[1] == t.shape[0]);
}

// Has data, every dimension >= 1, adjacent elements in the last and any non-negative stride in
// the others: a view whose rows are whole (attention's and rotary's [B, S, H, D] buffers seen as
// [B, H, S, D]).
inline bool usable_rows(const ak_tensor& t) {
  if (t.data == nullptr || t.ndim < 1 || t.ndim > AK_MAX_DIMS) return false;
  for (int32_t d = 0; d < t.ndim; ++d)
    if (t.shape[d] < 1 || t.strides[d] < 0) return false;
  return t.shape[t.ndim - 1] == 1 || t.strides[t.ndim - 1] == 1;
}

inline bool counts_match(const ak_call* call, int n_inputs, int n_outputs, int n_scalars) {
  return call != nullptr && call->abi_version == AK_ABI_VERSION && call->n_inputs == n_inputs &&
         call->n_outputs == n_outputs && call->n_scalars == n_scalars;
}

// The call has exactly these counts and `accepts(tensor, index)` holds for every tensor: inputs
// by their index, outputs by n_inputs + theirs.
template <class Accepts>
bool valid_call_where(const ak_call* call, int n_inputs, int n_outputs, int n_scalars, Accepts accepts) {
  if (!counts_match(call, n_inputs, n_outputs, n_scalars)) return false;
  for (int i = 0; i < n_inputs; ++i)
    if (!accepts(call->inputs[i], i)) return false;
  for (int i = 0; i < n_outputs; ++i)
    if (!accepts(call->outputs[i], n_inputs + i)) return false;
  return true;
}

// The call has exactly these counts and every tensor is usable_rows.
inline bool valid_rows_call(const ak_call* call, int n_inputs, int n_outputs, int n_scalars) {
  return valid_call_where(call, n_inputs, n_outputs, n_scalars,
                          [](const ak_tensor& t, int) { return usable_rows(t); });
}

// The call has exactly these counts and every tensor is usable; input `transposable` (if any)
// may instead be usable_transposed.
inline bool valid_call(const ak_call* call, int n_inputs, int n_outputs, int n_scalars,
                       int transposable = -1) {
  return valid_call_where(call, n_inputs, n_outputs, n_scalars, [&](const ak_tensor& t, int i) {
    return usable(t) || (i == transposable && i < n_inputs && usable_transposed(t));
  });
}

inline bool has_shape(const ak_tensor& t, std::initializer_list<int64_t> shape) {
  if (t.ndim != static_cast<int32_t>(shape.size())) return false;
  int32_t d = 0;
  for (int64_t extent : shape)
    if (t.shape[d++] != extent) return false;
  return true;
}

inline bool all_dtype(std::initializer_list<const ak_tensor*> tensors, int32_t dtype) {
  for (const ak_tensor* t : tensors)
    if (t->dtype != dtype) return false;
  return true;
}

// Runs a kernel body, turning an allocation failure into an error code: nothing may throw
// through the C entry point. Allocate before any parallel region, never inside one.
template <class Body>
int guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return AK_ERR_LAUNCH;
  }
}

// A copy of a small side tensor (weights, tables) as floats, whatever its float dtype.
// Returns false for a non-float dtype.
inline bool copy_as_floats(const ak_tensor& t, std::vector<float>& out) {
  out.resize(static_cast<size_t>(numel(t)));
  return dispatch(t.dtype, [&](auto tag) {
           using T = typename decltype(tag)::type;
           to_floats(static_cast<const T*>(t.data), numel(t), out.data());
           return AK_OK;
         }) == AK_OK;
}

// One float buffer per OpenMP thread, allocated up front so that parallel regions never allocate.
class ThreadScratch {
 public:
  explicit ThreadScratch(int64_t floats_per_thread)
      : per_thread_(std::max<int64_t>(floats_per_thread, 1)),
        data_(static_cast<size_t>(per_thread_ * omp_get_max_threads())) {}
  float* mine() { return data_.data() + per_thread_ * omp_get_thread_num(); }

 private:
  int64_t per_thread_;
  std::vector<float> data_;
};

// ---------------------------------------------------------------------------------------------
// Reductions split over kLanes independent accumulators: element i goes to lane i mod kLanes
// and the lanes are added in order at the end. The order is fixed by n and kLanes alone, and
// the lanes are what lets the compiler keep kLanes sums in one vector register (it may not
// reorder a single float sum by itself). `omp simd` on the lane loop (independent lanes, no
// reduction clause) is what gets GCC to actually use the vector registers.

template <int kLanes, class Acc, class Term>
Acc lane_sum(int64_t n, Term&& term) {
  static_assert(kLanes >= 1);
  Acc lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (int l = 0; l < kLanes; ++l) lanes[l] += static_cast<Acc>(term(i + l));
  }
  for (int l = 0; i < n; ++i, ++l) lanes[l] += static_cast<Acc>(term(i));
  Acc total = 0;
  for (int l = 0; l < kLanes; ++l) total += lanes[l];
  return total;
}

template <int kLanes>
float lane_max(const float* __restrict x, int64_t n) {
  float lanes[kLanes];
  for (int l = 0; l < kLanes; ++l) lanes[l] = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (int l = 0; l < kLanes; ++l) lanes[l] = std::max(lanes[l], x[i + l]);
  }
  for (int l = 0; i < n; ++i, ++l) lanes[l] = std::max(lanes[l], x[i]);
  float best = lanes[0];
  for (int l = 1; l < kLanes; ++l) best = std::max(best, lanes[l]);
  return best;
}

template <int kLanes>
float dot(const float* __restrict a, const float* __restrict b, int64_t n) {
  return lane_sum<kLanes, float>(n, [&](int64_t i) { return a[i] * b[i]; });
}

// exp(x) to about 2 float ulps, written so that the compiler can vectorize it (libm's expf is
// a call it cannot). exp(x) = 2^n * exp(r) with n = round(x / ln 2) and |r| <= ln(2)/2, where a
// degree-7 Taylor polynomial is off by under 1e-8. Below -87 it returns 0 (the true value is
// under 2^-125); above 88 it saturates at exp(88), a finite 1.65e38.
inline float fast_exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2High = 0.693359375f;  // few mantissa bits, so n * kLn2High is exact
  constexpr float kLn2Low = -2.12194440e-4f;
  constexpr float kRoundMagic = 0x1.8p23f;  // adding it rounds a float to an integer
  const float clamped = std::min(std::max(x, -87.0f), 88.0f);
  const float shifted = clamped * kLog2e + kRoundMagic;
  const float n = shifted - kRoundMagic;
  const int32_t n_int = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kRoundMagic);
  const float r = (clamped - n * kLn2High) - n * kLn2Low;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float scale = std::bit_cast<float>((n_int + 127) << 23);
  return x < -87.0f ? 0.0f : p * scale;
}

// out[i] = exp(x[i] - shift). A loop of its own, apart from any sum over out: GCC vectorizes
// fast_exp in a plain loop but not inside the lane loops above.
inline void exp_shifted(const float* __restrict x, float shift, int64_t n, float* __restrict out) {
  for (int64_t i = 0; i < n; ++i) out[i] = fast_exp(x[i] - shift);
}

// Ceiling division for tile counts.
inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace ak::host

#endif  // AUTOKERNEL_HOST_KERNEL_H
