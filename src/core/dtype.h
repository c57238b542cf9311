// Element types as the ABI names them, their sizes, and exact conversions between the stored
// bits and double (round-to-nearest-even on the way in), so references see exactly the values
// a kernel reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "autokernel/abi.h"

namespace ak {

enum class DType : int32_t { F32 = AK_F32, F16 = AK_F16, BF16 = AK_BF16, I32 = AK_I32, I64 = AK_I64 };

size_t size_of(DType t);
std::string_view to_string(DType t);
DType parse_dtype(std::string_view text);  // throws Error(Usage)
bool is_float(DType t);

// The floating-point types every kernel must handle, in the order the harness sweeps them.
inline constexpr DType kFloatTypes[] = {DType::F16, DType::BF16, DType::F32};

uint16_t double_to_half_bits(double v);
double half_bits_to_double(uint16_t bits);
uint16_t double_to_bf16_bits(double v);
double bf16_bits_to_double(uint16_t bits);

// Reads/writes element i of a typed buffer as a double.
double load_as_double(const void* data, DType t, size_t i);
void store_from_double(void* data, DType t, size_t i, double v);

}  // namespace ak
