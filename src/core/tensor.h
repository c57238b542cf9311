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
  // -1: the buffer is `shape`, contiguous. a >= 0: the buffer holds axes a and a + 1 exchanged
  // (contiguous in that order) and the ABI view is `shape` over it, with the buffer's strides:
  // a Linear's [N, K] weight seen as matmul's B[K, N] (a = 0 of a 2-D tensor), or attention's
  // [B, S, H, D] projections seen as [B, H, S, D] (a = 1), without copying them. Everything but
  // the view (bytes, generators, references) works on the buffer's own order.
  int swapped_axis = -1;

  int64_t numel() const;
  size_t bytes() const { return static_cast<size_t>(numel()) * size_of(dtype); }
  std::vector<int64_t> strides() const;       // of the ABI view, in elements
  std::vector<int64_t> buffer_shape() const;  // `shape` in the buffer's order
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
