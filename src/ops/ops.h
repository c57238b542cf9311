// Factories of the operators, one per file in this folder; the table is core/registry.cpp.
#pragma once

#include <memory>

#include "core/op.h"

namespace ak {

std::unique_ptr<Op> make_matmul();
std::unique_ptr<Op> make_softmax();
std::unique_ptr<Op> make_layernorm();
std::unique_ptr<Op> make_rmsnorm();
std::unique_ptr<Op> make_flash_attention();
std::unique_ptr<Op> make_fused_mlp();
std::unique_ptr<Op> make_cross_entropy();
std::unique_ptr<Op> make_rotary_embedding();
std::unique_ptr<Op> make_reduce();

}  // namespace ak
