// Tensors on the host: a description (dtype, shape, contiguous row-major) and its bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "autokernel/abi.h"
#include "core/dtype.h"

namespace ak {

struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  // 2-D only: the buffer holds the transpose (shape[1] rows of shape[0], contiguous) and the
  // ABI view is [shape[0], shape[1]] with strides (1, shape[0]): a Linear's [N, K] weight seen
  // as matmul's B[K, N] without copying it. Everything but the view (bytes, generators,
  // references) works on the buffer's own order.
  bool transposed = false;

  int64_t numel() const;
  size_t bytes() const { return static_cast<size_t>(numel()) * size_of(dtype); }
  std::vector<int64_t> strides() const;  // of the ABI view, in elements (row-major unless transposed)
  // Elements of a row: the last dimension (1 for a scalar); the rows are everything before it.
  int64_t row_length() const { return shape.empty() ? 1 : shape.back(); }
  std::string to_string() const;  // "x f16[8192,8192]"
};

// Fills an ABI tensor view of `spec` at `data`.
ak_tensor make_abi_tensor(const TensorSpec& spec, void* data);

// A host tensor of doubles plus its spec: what generators write and references read.
struct Values {
  TensorSpec spec;
  std::vector<double> data;
};

// Encodes doubles to the spec's dtype (rounding to nearest even) and back, in parallel.
std::vector<std::byte> encode(const TensorSpec& spec, const std::vector<double>& values);
std::vector<double> decode(const TensorSpec& spec, const std::vector<std::byte>& bytes);

}  // namespace ak
