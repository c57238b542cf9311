// Whether a starter kernel takes a problem: its @tune space, filtered by its @require rules at
// the problem's symbols, must hold a configuration. The CUDA attention kernel takes no head
// dimension of 1024 (no tile fits shared memory), so such an operator stays with PyTorch:
// extract passes it over, and KernelBench's map does not count it as ours.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/runtime.h"

namespace ak {

// Why the starter of `op` of a kind (cuda, triton or host) cannot take `problem` ("4x8x512x1024"),
// or nothing when it can or the kind has no starter for the operator.
std::optional<std::string> starter_refusal(std::string_view kind, const std::string& op,
                                           const std::string& problem);

// A row of KernelBench's map ("ops": [{op, problem, us}], "total_us", "share", "mapped") without
// the operators whose starter for `backend` refuses their problem: their time leaves the share,
// `mapped` is decided again against `min_share`, and "refused" says why. A row with an error, or
// without ops, is left as it is.
void drop_refused_ops(nlohmann::json& row, Backend backend, double min_share);

}  // namespace ak
