#include "core/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace ak {

size_t size_of(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I32: return 4;
    case DType::I64: return 8;
  }
  throw Error(ErrorKind::Internal, "size_of: unknown dtype");
}

std::string_view to_string(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
  }
  return "?";
}

DType parse_dtype(std::string_view text) {
  if (text == "fp32" || text == "float32" || text == "f32") return DType::F32;
  if (text == "fp16" || text == "float16" || text == "f16" || text == "half") return DType::F16;
  if (text == "bf16" || text == "bfloat16") return DType::BF16;
  throw Error(ErrorKind::Usage,
              "unknown dtype '" + std::string(text) + "' (expected fp16, bf16 or fp32)");
}

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// Rounds through float first only where that is exact: double -> float is exact for every value
// a half or bfloat16 can hold, and rounding the float to nearest-even below is the second and
// only rounding that matters for values generated as doubles of limited precision.
uint16_t double_to_half_bits(double v) {
  const float f = static_cast<float>(v);
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to infinity
  if (abs < 0x38800000u) {                                               // subnormal or zero
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;        // * 2^24
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  const uint32_t mant_odd = (abs >> 13) & 1u;
  const uint32_t rounded = abs + 0xfffu + mant_odd;
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

double half_bits_to_double(uint16_t bits) {
  const int sign = (bits >> 15) & 1;
  const int exp = (bits >> 10) & 0x1f;
  const int mant = bits & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else if (exp == 31) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(static_cast<double>(mant | 0x400), exp - 25);
  }
  return sign ? -v : v;
}

uint16_t double_to_bf16_bits(double v) {
  const uint32_t x = std::bit_cast<uint32_t>(static_cast<float>(v));
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  const uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

double bf16_bits_to_double(uint16_t bits) {
  return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits) << 16));
}

double load_as_double(const void* data, DType t, size_t i) {
  switch (t) {
    case DType::F32: return static_cast<const float*>(data)[i];
    case DType::F16: return half_bits_to_double(static_cast<const uint16_t*>(data)[i]);
    case DType::BF16: return bf16_bits_to_double(static_cast<const uint16_t*>(data)[i]);
    case DType::I32: return static_cast<const int32_t*>(data)[i];
    case DType::I64: return static_cast<double>(static_cast<const int64_t*>(data)[i]);
  }
  return 0.0;
}

void store_from_double(void* data, DType t, size_t i, double v) {
  switch (t) {
    case DType::F32: static_cast<float*>(data)[i] = static_cast<float>(v); break;
    case DType::F16: static_cast<uint16_t*>(data)[i] = double_to_half_bits(v); break;
    case DType::BF16: static_cast<uint16_t*>(data)[i] = double_to_bf16_bits(v); break;
    case DType::I32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v); break;
    case DType::I64: static_cast<int64_t*>(data)[i] = static_cast<int64_t>(v); break;
  }
}

}  // namespace ak
