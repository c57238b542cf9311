// The one table of operators.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "core/op.h"

namespace ak {

const std::vector<std::unique_ptr<Op>>& all_ops();
const Op& find_op(std::string_view name);  // throws Error(Usage) listing the known ops

}  // namespace ak
