// The inputs of one check and their float64 reference, computed once per input set and kept
// for the life of the worker process (the determinism stage and the timing check reuse them).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/op.h"

namespace ak {

struct PreparedCase {
  Signature signature;
  std::vector<std::vector<std::byte>> input_bytes;  // encoded in each input's dtype
  std::vector<Values> reference;                    // one per output
  std::vector<int64_t> rows;                        // sampled rows; empty = all compared
};

// References above this many FLOPs are row-sampled when the op allows it.
inline constexpr double kFullReferenceFlops = 4e9;
inline constexpr int kSampledRows = 48;

std::shared_ptr<const PreparedCase> prepare_case(const Op& op, const Problem& problem, DType dtype,
                                                 const std::string& input_case, uint64_t seed);

}  // namespace ak
