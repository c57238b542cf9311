#include "core/tensor.h"

#include <sstream>

#include "core/parallel.h"

namespace ak {

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

bool swaps(int axis, size_t rank) {
  return axis >= 0 && static_cast<size_t>(axis) + 1 < rank;
}

}  // namespace

std::vector<int64_t> TensorSpec::buffer_shape() const {
  std::vector<int64_t> order = shape;
  if (swaps(swapped_axis, order.size())) std::swap(order[swapped_axis], order[swapped_axis + 1]);
  return order;
}

std::vector<int64_t> TensorSpec::strides() const {
  const std::vector<int64_t> order = buffer_shape();
  std::vector<int64_t> s(order.size(), 1);
  for (int i = static_cast<int>(order.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * order[i + 1];
  if (swaps(swapped_axis, s.size())) std::swap(s[swapped_axis], s[swapped_axis + 1]);
  return s;
}

std::string TensorSpec::to_string() const {
  std::ostringstream out;
  out << name << " " << ak::to_string(dtype) << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? "," : "") << shape[i];
  out << "]";
  if (swaps(swapped_axis, shape.size()))
    out << (shape.size() == 2 ? " (transposed view)"
                              : " (axes " + std::to_string(swapped_axis) + " and " +
                                    std::to_string(swapped_axis + 1) + " swapped in memory)");
  return out.str();
}

ak_tensor make_abi_tensor(const TensorSpec& spec, void* data) {
  ak_tensor t{};
  t.data = data;
  t.dtype = static_cast<int32_t>(spec.dtype);
  t.ndim = static_cast<int32_t>(spec.shape.size());
  const auto strides = spec.strides();
  for (size_t i = 0; i < spec.shape.size() && i < AK_MAX_DIMS; ++i) {
    t.shape[i] = spec.shape[i];
    t.strides[i] = strides[i];
  }
  return t;
}

std::vector<std::byte> encode(const TensorSpec& spec, const std::vector<double>& values) {
  std::vector<std::byte> bytes(spec.bytes());
  parallel_for(
      static_cast<int64_t>(values.size()),
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) store_from_double(bytes.data(), spec.dtype, i, values[i]);
      },
      1 << 16);
  return bytes;
}

std::vector<double> decode(const TensorSpec& spec, const std::vector<std::byte>& bytes) {
  std::vector<double> values(static_cast<size_t>(spec.numel()));
  parallel_for(
      spec.numel(),
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) values[i] = load_as_double(bytes.data(), spec.dtype, i);
      },
      1 << 16);
  return values;
}

}  // namespace ak
