// 2^x for x <= 0 on the FMA and integer pipes instead of the special-function unit (MUFU): a
// kernel whose exponentials take as long on MUFU as its matrix products on the tensor cores
// (attention at head dimension 64: 16 exponentials per clock per SM against 64 x 128 x 128 x 2
// multiply-adds per tile) computes some of them this way so that neither unit waits for the other.
//
// x = n + f with n = round(x) (the 1.5 * 2^23 trick: adding it leaves n in the low mantissa bits)
// and f in [-0.5, 0.5]; 2^f by a cubic fitted for relative error (7.6e-5 at most in float, below
// an fp16 rounding of the result, 4.9e-4); 2^n added to the exponent field. x is clamped at -125
// so that the exponent stays normal: what a masked score (-inf) gives is 2^-125, not 0, which no
// sum of at least one visible score (>= 1 after the row maximum is subtracted) can feel. A NaN
// argument gives NaN, as ex2 does.
// Plain C++ with a host/device qualifier: the same code runs in a kernel and in a CPU test.
#pragma once

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define AK_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define AK_HOST_DEVICE inline
#endif

namespace ak_exp2 {

AK_HOST_DEVICE float exp2_poly(float x) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  x = x < -125.0f ? -125.0f : x;         // -inf too; a NaN stays NaN (and so does the result)
  const float shifted = x + kRound;
  const float n = shifted - kRound;
  const float f = x - n;
  const float p = ((0.05518638f * f + 0.24261236f) * f + 0.69325829f) * f + 0.99992794f;
  uint32_t p_bits, n_bits;
  memcpy(&p_bits, &p, sizeof p);
  memcpy(&n_bits, &shifted, sizeof shifted);  // 0x4B400000 + n: its low 9 bits are n's
  p_bits += n_bits << 23;
  float result;
  memcpy(&result, &p_bits, sizeof result);
  return result;
}

}  // namespace ak_exp2
