#include "runtime/host/host_compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/parallel.h"

namespace ak {
namespace {

constexpr int64_t kChunk = 1 << 15;

// Runs scan(begin, end, part) over [0, n) in fixed chunks, in parallel, merging in chunk order.
template <class Scan>
OutputScan scan_chunks(int64_t n, Scan&& scan) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<OutputScan> parts(static_cast<size_t>(chunks));
  parallel_for(chunks, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      scan(c * kChunk, std::min(n, (c + 1) * kChunk), parts[static_cast<size_t>(c)]);
  });
  OutputScan all;
  for (const auto& p : parts) merge_scan(all, p);
  return all;
}

// The lowest index find(begin, end) returns over the chunks of [0, n) (-1: none in that chunk).
template <class Find>
int64_t first_in_chunks(int64_t n, Find&& find) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<int64_t> found(static_cast<size_t>(chunks), -1);
  parallel_for(chunks, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      found[static_cast<size_t>(c)] = find(c * kChunk, std::min(n, (c + 1) * kChunk));
  });
  for (int64_t index : found)
    if (index >= 0) return index;
  return -1;
}

}  // namespace

OutputScan scan_output_on_host(const OutputScanJob& job) {
  const auto* bytes = static_cast<const std::byte*>(job.output);
  const size_t size = size_of(job.dtype);
  auto is_poison = [&](int64_t i) {
    const std::byte* element = bytes + i * static_cast<int64_t>(size);
    return std::all_of(element, element + size, [&](std::byte b) { return b == job.poison; });
  };
  auto value = [&](int64_t i) { return load_as_double(job.output, job.dtype, static_cast<size_t>(i)); };

  OutputScan scan = scan_chunks(job.numel, [&](int64_t b, int64_t e, OutputScan& s) {
    for (int64_t i = b; i < e; ++i) {
      if (is_poison(i)) {
        if (!s.unwritten++) s.first_unwritten = i;
      } else if (s.first_nonfinite < 0 && !std::isfinite(value(i))) {
        s.first_nonfinite = i;
      }
    }
  });
  const int64_t compared = job.rows ? job.n_rows * job.row_len : job.numel;
  const OutputScan sums = scan_chunks(compared, [&](int64_t b, int64_t e, OutputScan& s) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t i = job.rows ? job.rows[k / job.row_len] * job.row_len + k % job.row_len : k;
      const double ref = job.reference[k], d = value(i) - ref;
      s.ref_sq += ref * ref;
      s.diff_sq += d * d;
      s.max_abs = std::max(s.max_abs, std::fabs(d));
      ++s.compared;
      if (s.first_violation < 0 && std::fabs(d) > job.atol + job.rtol * std::fabs(ref)) s.first_violation = i;
    }
  });
  merge_scan(scan, sums);
  return scan;
}

int64_t first_difference_on_host(const void* a, const void* b, size_t bytes) {
  const auto* x = static_cast<const std::byte*>(a);
  const auto* y = static_cast<const std::byte*>(b);
  return first_in_chunks(static_cast<int64_t>(bytes), [&](int64_t begin, int64_t end) -> int64_t {
    if (std::memcmp(x + begin, y + begin, static_cast<size_t>(end - begin)) == 0) return -1;
    return std::mismatch(x + begin, x + end, y + begin).first - x;
  });
}

int64_t first_byte_not_on_host(const void* data, std::byte value, size_t bytes) {
  const auto* x = static_cast<const std::byte*>(data);
  return first_in_chunks(static_cast<int64_t>(bytes), [&](int64_t begin, int64_t end) -> int64_t {
    const std::byte* it = std::find_if(x + begin, x + end, [&](std::byte v) { return v != value; });
    return it == x + end ? -1 : it - x;
  });
}

}  // namespace ak
