#include "core/dtype.h"

#include <algorithm>
#include <array>
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
  throw Error(ErrorKind::Usage, "unknown dtype '" + std::string(text) + "' (expected fp16, bf16 or fp32)");
}

bool is_float(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

namespace {

// Rounds a double to a narrower binary format in one step (rounding through float first would
// round twice and miss ties by 2^-40): keep `mantissa_bits` fraction bits with round-to-nearest-
// even on the raw bits, rebias the exponent, and let a carry out of the largest finite value run
// into the infinity encoding. Values below the smallest normal are scaled to integers and rounded.
uint16_t round_double_bits(double v, int mantissa_bits, int exponent_bias, int min_exponent) {
  const uint64_t x = std::bit_cast<uint64_t>(v);
  const int total_bits = 1 + (exponent_bias == 15 ? 5 : 8) + mantissa_bits;
  const uint16_t sign = static_cast<uint16_t>((x >> 63) << (total_bits - 1));
  const uint64_t abs = x & 0x7fffffffffffffffull;
  const uint16_t infinity =
      static_cast<uint16_t>(((1u << (total_bits - 1 - mantissa_bits)) - 1) << mantissa_bits);
  if (abs > 0x7ff0000000000000ull)
    return sign | infinity | static_cast<uint16_t>(1u << (mantissa_bits - 1));  // NaN
  if (std::fabs(v) <
      std::ldexp(1.0, min_exponent)) {  // subnormal: a multiple of 2^(min_exponent - mantissa_bits)
    const double units = std::nearbyint(std::ldexp(std::fabs(v), mantissa_bits - min_exponent));
    return sign | static_cast<uint16_t>(units);  // 2^mantissa_bits units carry into the smallest normal
  }
  const int shift = 52 - mantissa_bits;
  const uint64_t rounded = abs + ((1ull << (shift - 1)) - 1) + ((abs >> shift) & 1);
  const uint64_t rebias = static_cast<uint64_t>(1023 - exponent_bias) << mantissa_bits;
  const uint64_t bits = (rounded >> shift) - rebias;
  return sign | static_cast<uint16_t>(std::min<uint64_t>(bits, infinity));
}

double decode_half_slow(uint16_t bits) {
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

// Decoding is a table lookup: references decode hundreds of millions of elements.
const std::array<double, 65536>& half_values() {
  static const auto table = [] {
    std::array<double, 65536> t{};
    for (uint32_t i = 0; i < t.size(); ++i) t[i] = decode_half_slow(static_cast<uint16_t>(i));
    return t;
  }();
  return table;
}

}  // namespace

uint16_t double_to_half_bits(double v) {
  return round_double_bits(v, 10, 15, -14);
}

double half_bits_to_double(uint16_t bits) {
  return half_values()[bits];
}

uint16_t double_to_bf16_bits(double v) {
  return round_double_bits(v, 7, 127, -126);
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
