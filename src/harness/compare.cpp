#include "harness/compare.h"

#include <cmath>
#include <sstream>

namespace ak {
namespace {

// The element at `index` of the buffer, named by its place in the ABI view.
std::string element_name(const TensorSpec& spec, int64_t index) {
  const std::vector<int64_t> order = spec.buffer_shape();
  std::vector<int64_t> at(order.size());
  for (size_t d = order.size(); d-- > 0;) {
    at[d] = index % order[d];
    index /= order[d];
  }
  const int a = spec.swapped_axis;
  if (a >= 0 && static_cast<size_t>(a) + 1 < at.size()) std::swap(at[a], at[a + 1]);
  std::ostringstream out;
  out << spec.name << "[";
  for (size_t d = 0; d < at.size(); ++d) out << (d ? "," : "") << at[d];
  out << "]";
  return out.str();
}

double read_element(Runtime& runtime, const void* output, DType dtype, int64_t index) {
  std::byte bytes[8];
  const size_t size = size_of(dtype);
  runtime.download(bytes, static_cast<const std::byte*>(output) + index * static_cast<int64_t>(size), size);
  return load_as_double(bytes, dtype, 0);
}

}  // namespace

Comparison compare_output(Runtime& runtime, const void* output, const PreparedCase& prepared,
                          const DeviceCase& device, size_t index, const Tolerance& tol) {
  const TensorSpec& spec = prepared.signature.outputs.at(index);
  const OutputScanJob job = device.scan_job(prepared, index, output, tol);
  const OutputScan scan = runtime.scan_output(job);
  Comparison c;
  c.ok = false;
  if (scan.unwritten) {
    c.reason = std::to_string(scan.unwritten) + " element(s) of " + spec.name + " never written (first " +
               element_name(spec, scan.first_unwritten) + ")";
    return c;
  }
  if (scan.first_nonfinite >= 0) {
    const double v = read_element(runtime, output, spec.dtype, scan.first_nonfinite);
    c.reason = element_name(spec, scan.first_nonfinite) + " is " + (std::isnan(v) ? "NaN" : "infinite");
    return c;
  }
  c.norm_error = scan.ref_sq > 0 ? std::sqrt(scan.diff_sq / scan.ref_sq) : std::sqrt(scan.diff_sq);
  c.max_abs_error = scan.max_abs;
  std::ostringstream out;
  if (const int64_t i = scan.first_violation; i >= 0) {
    const double v = read_element(runtime, output, spec.dtype, i);
    const double ref = prepared.reference[index][static_cast<size_t>(prepared.reference_position(index, i))];
    out << element_name(spec, i) << " = " << v << ", reference " << ref << " (|error| " << std::fabs(v - ref)
        << " > allowed " << job.atol + job.rtol * std::fabs(ref) << ")";
  } else if (c.norm_error > tol.norm_rtol) {
    out << spec.name << ": relative error ||out-ref||/||ref|| = " << c.norm_error << " > " << tol.norm_rtol;
  }
  c.reason = out.str();
  c.ok = c.reason.empty();
  return c;
}

}  // namespace ak
