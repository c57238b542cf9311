#include "harness/compare.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "harness/guarded_tensor.h"

namespace ak {
namespace {

bool is_poison(const std::byte* element, size_t size) {
  for (size_t b = 0; b < size; ++b)
    if (element[b] != kPoisonPattern) return false;
  return true;
}

std::string element_name(const TensorSpec& spec, int64_t index) {
  std::ostringstream out;
  out << spec.name << "[";
  const auto strides = spec.strides();
  for (size_t d = 0; d < spec.shape.size(); ++d) {
    out << (d ? "," : "") << index / strides[d];
    index %= strides[d];
  }
  out << "]";
  return out.str();
}

// Pass 1: every element (sampled rows or not) must be written and finite.
bool check_written_and_finite(const TensorSpec& spec, const std::vector<std::byte>& got, Comparison& c) {
  const size_t size = size_of(spec.dtype);
  int64_t unwritten = 0, first_unwritten = -1;
  for (int64_t i = 0; i < spec.numel(); ++i) {
    if (is_poison(got.data() + i * size, size)) {
      if (first_unwritten < 0) first_unwritten = i;
      ++unwritten;
      continue;
    }
    const double v = load_as_double(got.data(), spec.dtype, static_cast<size_t>(i));
    if (!std::isfinite(v) && c.ok) {
      c.ok = false;
      c.reason = element_name(spec, i) + " is " + (std::isnan(v) ? "NaN" : "infinite");
    }
  }
  if (unwritten) {
    c.ok = false;
    c.reason = std::to_string(unwritten) + " element(s) of " + spec.name + " never written (first " +
               element_name(spec, first_unwritten) + ")";
  }
  return c.ok;
}

}  // namespace

Comparison compare_output(const TensorSpec& spec, const std::vector<std::byte>& got, const Values& reference,
                          const Tolerance& tol, const std::vector<int64_t>& rows) {
  Comparison c;
  if (!check_written_and_finite(spec, got, c)) return c;

  const int64_t row_len = spec.shape.empty() ? 1 : spec.shape.back();
  const int64_t n_rows = spec.numel() / std::max<int64_t>(1, row_len);
  std::vector<int64_t> all_rows;
  const std::vector<int64_t>* selected = &rows;
  if (rows.empty()) {
    all_rows.resize(static_cast<size_t>(n_rows));
    for (int64_t r = 0; r < n_rows; ++r) all_rows[r] = r;
    selected = &all_rows;
  }

  double ref_sq = 0, diff_sq = 0;
  int64_t count = 0;
  for (int64_t r : *selected)
    for (int64_t j = 0; j < row_len; ++j) {
      const double ref = reference.data[r * row_len + j];
      const double out = load_as_double(got.data(), spec.dtype, static_cast<size_t>(r * row_len + j));
      ref_sq += ref * ref;
      diff_sq += (out - ref) * (out - ref);
      ++count;
    }
  const double rms = count ? std::sqrt(ref_sq / static_cast<double>(count)) : 0.0;
  c.norm_error = ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : std::sqrt(diff_sq);

  for (int64_t r : *selected)
    for (int64_t j = 0; j < row_len; ++j) {
      const int64_t i = r * row_len + j;
      const double ref = reference.data[i];
      const double out = load_as_double(got.data(), spec.dtype, static_cast<size_t>(i));
      const double err = std::fabs(out - ref);
      c.max_abs_error = std::max(c.max_abs_error, err);
      const double allowed = tol.atol * rms + tol.rtol * std::fabs(ref);
      if (err > allowed && c.ok) {
        std::ostringstream out_text;
        out_text << element_name(spec, i) << " = " << out << ", reference " << ref << " (|error| " << err
                 << " > allowed " << allowed << ")";
        c.ok = false;
        c.reason = out_text.str();
      }
    }
  if (c.ok && c.norm_error > tol.norm_rtol) {
    std::ostringstream out_text;
    out_text << spec.name << ": relative error ||out-ref||/||ref|| = " << c.norm_error << " > " << tol.norm_rtol;
    c.ok = false;
    c.reason = out_text.str();
  }
  return c;
}

}  // namespace ak
