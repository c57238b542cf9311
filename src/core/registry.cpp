#include "core/registry.h"

#include "core/error.h"
#include "ops/ops.h"

namespace ak {

const std::vector<std::unique_ptr<Op>>& all_ops() {
  static const std::vector<std::unique_ptr<Op>> ops = [] {
    std::vector<std::unique_ptr<Op>> v;
    v.push_back(make_matmul());
    v.push_back(make_softmax());
    v.push_back(make_layernorm());
    v.push_back(make_rmsnorm());
    v.push_back(make_flash_attention());
    v.push_back(make_fused_mlp());
    v.push_back(make_cross_entropy());
    v.push_back(make_rotary_embedding());
    v.push_back(make_reduce());
    return v;
  }();
  return ops;
}

const Op& find_op(std::string_view name) {
  std::string known;
  for (const auto& op : all_ops()) {
    if (op->name() == name) return *op;
    known += (known.empty() ? "" : ", ") + std::string(op->name());
  }
  throw Error(ErrorKind::Usage, "unknown op '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace ak
