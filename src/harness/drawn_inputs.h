// The timed slots' inputs, new at every launch (timed_slots.h). Every element of an input that
// splits into units (Op::units) is drawn from the same input of a source set, in runs of 16
// bytes, from where a secret key hashes it (core/mix.h); shared inputs (weights, tables) are the
// source's own. A unit's contents are then new at every launch: no output row a kernel kept from
// an earlier call, under any key it likes, belongs to them, so it can only compute. The values
// keep the source's distribution (normal values stay normal, class labels stay labels), and the
// judge rebuilds any unit on the host to compute its reference.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/op.h"
#include "harness/device_case.h"
#include "harness/prepared_case.h"

namespace ak {

// Some units of one drawing whose outputs the judge wants.
struct UnitRequest {
  uint64_t key = 0;
  std::vector<int64_t> units;  // distinct
  std::vector<int64_t> rows;   // the output rows Op::reference must compute; empty: all
  // Per output: the element ranges (first, count) wanted, in order; none for a shared output
  // unless every unit is drawn.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges;
};

class DrawnInputs {
 public:
  // `chunk_elements`: the most unit elements (inputs and outputs) computed at once in float64.
  DrawnInputs(const Op& op, const Problem& problem, std::shared_ptr<const PreparedCase> source,
              int64_t chunk_elements = int64_t{1} << 24);

  const PreparedCase& source() const { return *source_; }
  const UnitLayout& units() const { return units_; }
  // The rows of output 0 (as Op::reference counts them) in one unit, when a unit holds whole
  // rows; 0 when a row spans several units (a per-row loss of [M] is one row).
  int64_t rows_per_unit() const;
  // Elements of one unit over every input and output that splits into units.
  int64_t unit_elements() const;

  // Writes input `index` of drawing `key` to `destination` (device memory) from the source's
  // device copy.
  void fill(Runtime& runtime, const DeviceCase& source, size_t index, void* destination, uint64_t key) const;

  // Per request, per output: the float64 reference of its ranges, concatenated. Requests whose
  // units overlap are computed in separate rounds.
  std::vector<std::vector<std::vector<double>>> reference(const std::vector<UnitRequest>& requests) const;

 private:
  void draw_unit(std::vector<Values>& inputs, uint64_t key, int64_t unit, int64_t position) const;
  void compute_round(const std::vector<UnitRequest>& requests, const std::vector<size_t>& round,
                     std::vector<std::vector<double>>& shared,
                     std::vector<std::vector<std::vector<double>>>& results) const;

  const Op& op_;
  Problem problem_;
  std::shared_ptr<const PreparedCase> source_;
  UnitLayout units_;
  int64_t chunk_elements_;
};

}  // namespace ak
