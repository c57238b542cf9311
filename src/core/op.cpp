#include "core/op.h"

namespace ak {

Tolerance default_tolerance(DType dtype) {
  switch (dtype) {
    case DType::F16: return {1e-2, 1e-2, 1e-2};
    case DType::BF16: return {2e-2, 2e-2, 2e-2};
    default: return {1e-4, 1e-4, 1e-5};
  }
}

Tolerance Op::tolerance(DType dtype) const {
  return default_tolerance(dtype);
}

}  // namespace ak
