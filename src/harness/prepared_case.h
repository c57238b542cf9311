// The inputs of one check and their float64 reference, computed once per input set and kept
// for the life of the worker process (the determinism stage and the timing check reuse them).
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/huge_pages.h"
#include "core/op.h"

namespace ak {

// One input set: what is drawn (problem, dtype, input case) and from which seed. A check names
// its first set this way too (see checks.h).
struct CaseSpec {
  Problem problem;
  DType dtype = DType::F16;
  std::string input_case{kRandomCase};
  uint64_t seed = 0;
};

// The reference is computed in float64 and kept as float, only for the compared elements (every
// element, or those of the sampled rows, in order): that is what the judge uploads and compares
// on the device, and a float's rounding is far below every tolerance.
struct PreparedCase {
  Signature signature;
  std::vector<LargeVector<std::byte>> input_bytes;  // encoded in each input's dtype
  std::vector<LargeVector<float>> reference;        // one per output: the compared elements
  std::vector<double> reference_rms;                // one per output: sqrt(mean(ref^2)), compared elements
  std::vector<int64_t> rows;                        // sampled rows, ascending; empty = all compared

  // Bytes of the inputs, and of the reference with its rows: what a copy of each takes.
  size_t input_size() const;
  size_t reference_size() const;
  // Where element `index` of output `output` sits in its reference; -1 when it is not compared.
  int64_t reference_position(size_t output, int64_t index) const;
};

// Appends one output's compared elements to `prepared`'s reference (element k is value(k), k <
// count), as float, and their rms.
template <class Value>
void add_compared(PreparedCase& prepared, int64_t count, Value value) {
  LargeVector<float>& kept = prepared.reference.emplace_back(static_cast<size_t>(count));
  double sum_sq = 0;
  for (int64_t k = 0; k < count; ++k) {
    const double ref = value(k);
    kept[static_cast<size_t>(k)] = static_cast<float>(ref);
    sum_sq += ref * ref;
  }
  prepared.reference_rms.push_back(count ? std::sqrt(sum_sq / static_cast<double>(count)) : 0.0);
}

// References above this many FLOPs are row-sampled when the op allows it.
inline constexpr double kFullReferenceFlops = 4e9;
inline constexpr int kSampledRows = 48;

// From the cache when this process has drawn the set before (kept sets always, others while the
// cache is small), else drawn now.
std::shared_ptr<const PreparedCase> prepare_case(const Op& op, const CaseSpec& set);

// Makes `sets` kept: those kept already stay, the missing ones are drawn on parallel CPU threads,
// all joined before it returns. Sets kept for earlier calls stay too while everything kept fits
// a quarter of the machine's memory (one plan's references can take gigabytes); past that the
// least recently named go first. Never touches a device, so a process may fork after it and its
// children find every set in their copy of the cache. A set that cannot be drawn is skipped: the
// experiment meets the same error when it draws the set itself. Without `evict` (drawing ahead
// of need) nothing kept is dropped: false, and nothing drawn, when the sets would not fit.
// Safe on several threads at once; a process that forks while one draws holds a DrawingPause.
bool keep_prepared_cases(const Op& op, const std::vector<CaseSpec>& sets, bool evict = true);

// Held while forking: waits for the set each thread is drawing, and holds any more off until
// release() or the end of its scope.
class DrawingPause {
 public:
  DrawingPause();
  ~DrawingPause() { release(); }
  DrawingPause(const DrawingPause&) = delete;
  DrawingPause& operator=(const DrawingPause&) = delete;
  void release();

 private:
  bool held_ = true;
};

}  // namespace ak
