#include "harness/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/parallel.h"
#include "harness/guarded_tensor.h"

namespace ak {
namespace {

constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
constexpr int64_t kChunk = 1 << 15;

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

// Per-chunk findings, merged in chunk order so the first offending element reported never
// depends on the number of threads.
struct ChunkScan {
  int64_t unwritten = 0, first_unwritten = kNone, first_nonfinite = kNone, first_violation = kNone;
  double ref_sq = 0, diff_sq = 0, max_abs = 0;
  int64_t count = 0;
};

// Runs scan(begin, end, chunk) over [0, n) in fixed chunks, in parallel, and merges the results.
template <class Scan>
ChunkScan scan_chunks(int64_t n, Scan&& scan) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<ChunkScan> parts(static_cast<size_t>(chunks));
  parallel_for(chunks, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      scan(c * kChunk, std::min(n, (c + 1) * kChunk), parts[static_cast<size_t>(c)]);
  });
  ChunkScan all;
  for (const auto& p : parts) {
    all.unwritten += p.unwritten;
    all.first_unwritten = std::min(all.first_unwritten, p.first_unwritten);
    all.first_nonfinite = std::min(all.first_nonfinite, p.first_nonfinite);
    all.first_violation = std::min(all.first_violation, p.first_violation);
    all.ref_sq += p.ref_sq;
    all.diff_sq += p.diff_sq;
    all.max_abs = std::max(all.max_abs, p.max_abs);
    all.count += p.count;
  }
  return all;
}

}  // namespace

Comparison compare_output(const TensorSpec& spec, const std::vector<std::byte>& got, const Values& reference,
                          const Tolerance& tol, const std::vector<int64_t>& rows) {
  Comparison c;
  const size_t size = size_of(spec.dtype);
  auto value = [&](int64_t i) { return load_as_double(got.data(), spec.dtype, static_cast<size_t>(i)); };

  // Every element, sampled rows or not, must be written and finite.
  const ChunkScan written = scan_chunks(spec.numel(), [&](int64_t b, int64_t e, ChunkScan& s) {
    for (int64_t i = b; i < e; ++i) {
      if (is_poison(got.data() + i * static_cast<int64_t>(size), size)) {
        if (!s.unwritten++) s.first_unwritten = i;
      } else if (s.first_nonfinite == kNone && !std::isfinite(value(i))) {
        s.first_nonfinite = i;
      }
    }
  });
  if (written.unwritten) {
    c.ok = false;
    c.reason = std::to_string(written.unwritten) + " element(s) of " + spec.name + " never written (first " +
               element_name(spec, written.first_unwritten) + ")";
    return c;
  }
  if (written.first_nonfinite != kNone) {
    c.ok = false;
    c.reason = element_name(spec, written.first_nonfinite) + " is " +
               (std::isnan(value(written.first_nonfinite)) ? "NaN" : "infinite");
    return c;
  }

  // The compared elements: all, or the sampled rows (a row is everything but the last dim).
  const int64_t row_len = spec.shape.empty() ? 1 : spec.shape.back();
  const int64_t compared = rows.empty() ? spec.numel() : static_cast<int64_t>(rows.size()) * row_len;
  auto element = [&](int64_t k) {
    return rows.empty() ? k : rows[static_cast<size_t>(k / row_len)] * row_len + k % row_len;
  };

  const ChunkScan sums = scan_chunks(compared, [&](int64_t b, int64_t e, ChunkScan& s) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t i = element(k);
      const double ref = reference.data[static_cast<size_t>(i)], d = value(i) - ref;
      s.ref_sq += ref * ref;
      s.diff_sq += d * d;
      s.max_abs = std::max(s.max_abs, std::fabs(d));
      ++s.count;
    }
  });
  const double rms = sums.count ? std::sqrt(sums.ref_sq / static_cast<double>(sums.count)) : 0.0;
  c.norm_error = sums.ref_sq > 0 ? std::sqrt(sums.diff_sq / sums.ref_sq) : std::sqrt(sums.diff_sq);
  c.max_abs_error = sums.max_abs;

  const ChunkScan violations = scan_chunks(compared, [&](int64_t b, int64_t e, ChunkScan& s) {
    for (int64_t k = b; k < e && s.first_violation == kNone; ++k) {
      const int64_t i = element(k);
      const double ref = reference.data[static_cast<size_t>(i)];
      if (std::fabs(value(i) - ref) > tol.atol * rms + tol.rtol * std::fabs(ref)) s.first_violation = i;
    }
  });
  std::ostringstream out;
  if (violations.first_violation != kNone) {
    const int64_t i = violations.first_violation;
    const double ref = reference.data[static_cast<size_t>(i)], err = std::fabs(value(i) - ref);
    out << element_name(spec, i) << " = " << value(i) << ", reference " << ref << " (|error| " << err
        << " > allowed " << tol.atol * rms + tol.rtol * std::fabs(ref) << ")";
  } else if (c.norm_error > tol.norm_rtol) {
    out << spec.name << ": relative error ||out-ref||/||ref|| = " << c.norm_error << " > " << tol.norm_rtol;
  }
  c.reason = out.str();
  c.ok = c.reason.empty();
  return c;
}

double reference_rms(const Values& reference, const std::vector<int64_t>& rows) {
  const TensorSpec& spec = reference.spec;
  const int64_t row_len = spec.shape.empty() ? 1 : spec.shape.back();
  double sum = 0;
  int64_t count = 0;
  auto add = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i, ++count)
      sum += reference.data[static_cast<size_t>(i)] * reference.data[static_cast<size_t>(i)];
  };
  if (rows.empty()) add(0, spec.numel());
  for (int64_t r : rows) add(r * row_len, (r + 1) * row_len);
  return count ? std::sqrt(sum / static_cast<double>(count)) : 0.0;
}

}  // namespace ak
