// Element types (half and bfloat16 conversions, typed loads and stores) and problem strings.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/dtype.h"
#include "core/error.h"
#include "core/problem.h"
#include "core/tensor.h"

namespace ak {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(DType, HalfExactValues) {
  EXPECT_EQ(double_to_half_bits(1.0), 0x3c00);
  EXPECT_EQ(double_to_half_bits(-2.0), 0xc000);
  EXPECT_EQ(double_to_half_bits(0.0), 0x0000);
  EXPECT_EQ(double_to_half_bits(-0.0), 0x8000);
  EXPECT_EQ(double_to_half_bits(65504.0), 0x7bff);                  // the largest half
  EXPECT_EQ(double_to_half_bits(std::ldexp(1.0, -14)), 0x0400);     // the smallest normal
  EXPECT_EQ(double_to_half_bits(std::ldexp(1.0, -24)), 0x0001);     // the smallest subnormal
  EXPECT_EQ(double_to_half_bits(std::ldexp(1023.0, -24)), 0x03ff);  // the largest subnormal
  EXPECT_EQ(half_bits_to_double(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(half_bits_to_double(0x7bff), 65504.0);
  EXPECT_EQ(half_bits_to_double(0x3555), 0.333251953125);
}

TEST(DType, HalfRoundsToNearestEven) {
  // Halfway between 1 and 1 + 2^-10 goes down to the even 1; halfway above 1 + 2^-10 goes up.
  EXPECT_EQ(double_to_half_bits(1.0 + std::ldexp(1.0, -11)), 0x3c00);
  EXPECT_EQ(double_to_half_bits(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);
  EXPECT_EQ(double_to_half_bits(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -20)), 0x3c01);
  // The same among subnormals: 2^-25 ties to 0, 3 * 2^-25 ties to 2 * 2^-24.
  EXPECT_EQ(double_to_half_bits(std::ldexp(1.0, -25)), 0x0000);
  EXPECT_EQ(double_to_half_bits(std::ldexp(3.0, -25)), 0x0002);
  EXPECT_EQ(double_to_half_bits(0.1), 0x2e66);
}

// Rounding straight from double: a value a hair above a tie rounds up. Rounding through float
// first would land exactly on the tie and round to even (down).
TEST(DType, RoundsOnceFromDouble) {
  const double hair = std::ldexp(1.0, -40);
  EXPECT_EQ(double_to_half_bits(1 + std::ldexp(1.0, -11) + hair), 0x3c01);
  EXPECT_EQ(double_to_half_bits(1 + std::ldexp(1.0, -11) - hair), 0x3c00);
  EXPECT_EQ(double_to_bf16_bits(1 + std::ldexp(1.0, -8) + hair), 0x3f81);
  EXPECT_EQ(double_to_bf16_bits(1 + std::ldexp(1.0, -8) - hair), 0x3f80);
  EXPECT_EQ(double_to_half_bits(std::ldexp(1.0, -25) + hair * std::ldexp(1.0, -30)), 0x0001);  // subnormal
  EXPECT_EQ(double_to_half_bits(65519.999), 0x7bff);
}

TEST(DType, HalfOverflowsToInfinityAndKeepsNaN) {
  EXPECT_EQ(double_to_half_bits(65519.0), 0x7bff);  // below the halfway point to 2^16
  EXPECT_EQ(double_to_half_bits(65520.0), 0x7c00);  // the halfway point ties to infinity
  EXPECT_EQ(double_to_half_bits(1e6), 0x7c00);
  EXPECT_EQ(double_to_half_bits(-1e6), 0xfc00);
  EXPECT_EQ(double_to_half_bits(kInf), 0x7c00);
  const uint16_t nan = double_to_half_bits(kNaN);
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  EXPECT_TRUE(std::isnan(half_bits_to_double(nan)));
  EXPECT_EQ(half_bits_to_double(0xfc00), -kInf);
}

TEST(DType, EveryHalfAndBf16ValueRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto b = static_cast<uint16_t>(bits);
    const double h = half_bits_to_double(b);
    if (std::isnan(h)) {
      EXPECT_TRUE(std::isnan(half_bits_to_double(double_to_half_bits(h))));
    } else {
      ASSERT_EQ(double_to_half_bits(h), b) << "half " << std::hex << bits;
    }
    const double f = bf16_bits_to_double(b);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_bits_to_double(double_to_bf16_bits(f))));
    } else {
      ASSERT_EQ(double_to_bf16_bits(f), b) << "bf16 " << std::hex << bits;
    }
  }
}

TEST(DType, Bf16ExactValuesRoundingAndOverflow) {
  EXPECT_EQ(double_to_bf16_bits(1.0), 0x3f80);
  EXPECT_EQ(double_to_bf16_bits(-2.0), 0xc000);
  EXPECT_EQ(double_to_bf16_bits(std::ldexp(1.0, -133)), 0x0001);          // the smallest subnormal
  EXPECT_EQ(double_to_bf16_bits(1.0 + std::ldexp(1.0, -8)), 0x3f80);      // tie, down to even
  EXPECT_EQ(double_to_bf16_bits(1.0 + 3 * std::ldexp(1.0, -8)), 0x3f82);  // tie, up to even
  EXPECT_EQ(double_to_bf16_bits(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -16)), 0x3f81);
  EXPECT_EQ(double_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80);  // rounds past the top
  EXPECT_EQ(double_to_bf16_bits(1e39), 0x7f80);
  EXPECT_EQ(double_to_bf16_bits(-kInf), 0xff80);
  EXPECT_EQ(bf16_bits_to_double(0x7f7f), 0x1.fep127);  // the largest bf16
  EXPECT_TRUE(std::isnan(bf16_bits_to_double(double_to_bf16_bits(kNaN))));
}

TEST(DType, TypedLoadsStoresAndTensorEncoding) {
  unsigned char buffer[16] = {};
  store_from_double(buffer, DType::I64, 1, std::ldexp(1.0, 40) + 1);
  EXPECT_EQ(load_as_double(buffer, DType::I64, 1), std::ldexp(1.0, 40) + 1);
  store_from_double(buffer, DType::F32, 0, 0.1);
  EXPECT_EQ(load_as_double(buffer, DType::F32, 0), static_cast<double>(0.1f));
  store_from_double(buffer, DType::F16, 3, 0.1);
  EXPECT_EQ(load_as_double(buffer, DType::F16, 3), half_bits_to_double(0x2e66));

  const TensorSpec spec{"x", DType::BF16, {2, 2}};
  const auto bytes = encode(spec, {1.0, 0.1, -3.0, 1e39});
  ASSERT_EQ(bytes.size(), 8u);
  const auto values = decode(spec, bytes);
  EXPECT_EQ(values[0], 1.0);
  EXPECT_EQ(values[1], bf16_bits_to_double(double_to_bf16_bits(0.1)));
  EXPECT_EQ(values[2], -3.0);
  EXPECT_EQ(values[3], kInf);
}

TEST(DType, SizesNamesAndParsing) {
  EXPECT_EQ(size_of(DType::F16), 2u);
  EXPECT_EQ(size_of(DType::BF16), 2u);
  EXPECT_EQ(size_of(DType::I64), 8u);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::BF16);
  EXPECT_EQ(parse_dtype(to_string(DType::F16)), DType::F16);
  EXPECT_FALSE(is_float(DType::I64));
  try {
    parse_dtype("fp8");
    ADD_FAILURE() << "fp8 parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
  }
}

TEST(ProblemParse, DimensionsAndParameters) {
  const Problem square = parse_problem("8192x8192");
  EXPECT_EQ(square.dims, (std::vector<int64_t>{8192, 8192}));
  EXPECT_TRUE(square.params.empty());
  EXPECT_EQ(square.numel(), 8192 * 8192);

  const Problem attention = parse_problem("4x32x4096x128:causal=0");
  EXPECT_EQ(attention.dims, (std::vector<int64_t>{4, 32, 4096, 128}));
  EXPECT_EQ(attention.param("causal", 1), 0.0);
  EXPECT_EQ(attention.param("kv_heads", 32), 32.0);

  const Problem both = parse_problem("1x8x17x64:causal=1,kv_heads=2");
  EXPECT_EQ(both.params.size(), 2u);
  EXPECT_EQ(parse_problem(both.to_string()), both);
  EXPECT_EQ(attention.to_string(), "4x32x4096x128:causal=0");
}

TEST(ProblemParse, BadStringsAreUsageErrors) {
  for (const char* text : {"", "8192x", "x8192", "8192xx8192", "8192x-1", "0x16", "abc", "8x8.5",
                           "8x8:causal", "8x8:=1", "8x8:causal=yes", "8x8:", "8 x8"}) {
    try {
      parse_problem(text);
      ADD_FAILURE() << "'" << text << "' parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Usage) << text;
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << text;
    }
  }
}

}  // namespace
}  // namespace ak
