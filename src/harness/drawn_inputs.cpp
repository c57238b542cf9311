#include "harness/drawn_inputs.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "core/mix.h"
#include "core/parallel.h"

namespace ak {
namespace {

// Each input of a drawing has its own key, so that equal positions of two inputs are unrelated.
uint64_t input_key(uint64_t key, size_t index) {
  return mix64(key ^ (0x9e3779b97f4a7c15ULL * (index + 1)));
}

std::vector<double> decode_all(const TensorSpec& spec, const LargeVector<std::byte>& bytes) {
  std::vector<double> values(static_cast<size_t>(spec.numel()));
  parallel_for(spec.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k)
      values[static_cast<size_t>(k)] = load_as_double(bytes.data(), spec.dtype, static_cast<size_t>(k));
  });
  return values;
}

// Requests in rounds whose units are disjoint: a round's units are drawn side by side into one
// set of inputs.
std::vector<std::vector<size_t>> rounds_of(const std::vector<UnitRequest>& requests) {
  std::vector<std::vector<size_t>> rounds;
  std::vector<std::set<int64_t>> taken;
  for (size_t r = 0; r < requests.size(); ++r) {
    size_t k = 0;
    auto clashes = [&](size_t round) {
      return std::any_of(requests[r].units.begin(), requests[r].units.end(),
                         [&](int64_t u) { return taken[round].contains(u); });
    };
    while (k < rounds.size() && clashes(k)) ++k;
    if (k == rounds.size()) {
      rounds.emplace_back();
      taken.emplace_back();
    }
    rounds[k].push_back(r);
    taken[k].insert(requests[r].units.begin(), requests[r].units.end());
  }
  return rounds;
}

}  // namespace

DrawnInputs::DrawnInputs(const Op& op, const Problem& problem, std::shared_ptr<const PreparedCase> source)
    : op_(op), problem_(problem), source_(std::move(source)), units_(op.units(problem)) {
  if (!source_) throw Error(ErrorKind::Internal, "DrawnInputs: no source set");
}

void DrawnInputs::fill(Runtime& runtime, const DeviceCase& source, size_t index, void* destination,
                       uint64_t key) const {
  const TensorSpec& spec = source_->signature.inputs.at(index);
  const size_t count = static_cast<size_t>(spec.numel());
  if (units_.inputs.at(index) > 0)
    runtime.draw_elements(destination, source.inputs.at(index)->data(), size_of(spec.dtype), count, count,
                          input_key(key, index));
  else
    runtime.copy(destination, source.inputs.at(index)->data(), spec.bytes());
}

int64_t DrawnInputs::rows_per_unit() const {
  const int64_t elements = units_.outputs.front(), row_len = source_->signature.outputs.front().row_length();
  return elements > 0 && elements % row_len == 0 ? elements / row_len : 0;
}

// Unit `unit` of drawing `key` into position `position` of the sub-problem's inputs: element e
// of the unit is element unit * elements + e of the full drawing.
void DrawnInputs::draw_unit(std::vector<Values>& inputs, uint64_t key, int64_t unit, int64_t position) const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int64_t elements = units_.inputs[i];
    if (elements <= 0) continue;
    const TensorSpec& spec = source_->signature.inputs[i];
    const auto count = static_cast<uint64_t>(spec.numel());
    const uint64_t run = draw_run_elements(size_of(spec.dtype), count), k = input_key(key, i);
    const std::byte* bytes = source_->input_bytes[i].data();
    double* out = inputs[i].data.data() + position * elements;
    for (int64_t e = 0; e < elements; ++e)
      out[e] = load_as_double(bytes, spec.dtype,
                              drawn_position(k, static_cast<uint64_t>(unit * elements + e), count, run));
  }
}

std::vector<std::vector<std::vector<double>>> DrawnInputs::reference(
    const std::vector<UnitRequest>& requests) const {
  std::vector<std::vector<std::vector<double>>> results(requests.size());
  const Signature& sig = source_->signature;
  std::vector<std::vector<double>> shared(sig.inputs.size());
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    if (units_.inputs[i] <= 0 && !requests.empty())
      shared[i] = decode_all(sig.inputs[i], source_->input_bytes[i]);
  for (const std::vector<size_t>& round : rounds_of(requests))
    compute_round(requests, round, shared, results);
  return results;
}

// One round on the problem of just its units, in ascending order (all of them: the problem
// itself): the judge's memory holds a few units, not the whole problem in float64.
void DrawnInputs::compute_round(const std::vector<UnitRequest>& requests, const std::vector<size_t>& round,
                                std::vector<std::vector<double>>& shared,
                                std::vector<std::vector<std::vector<double>>>& results) const {
  std::map<int64_t, std::pair<uint64_t, int64_t>> placed;  // unit -> (key, position)
  for (size_t r : round)
    for (int64_t u : requests[r].units) placed[u] = {requests[r].key, 0};
  int64_t next = 0;
  for (auto& entry : placed) entry.second.second = next++;
  const Problem part = op_.units_problem(problem_, next);
  const Signature sig = op_.signature(part, source_->signature.inputs.front().dtype);
  std::vector<Values> inputs, outputs;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const int64_t expected =
        units_.inputs[i] > 0 ? next * units_.inputs[i] : source_->signature.inputs[i].numel();
    if (sig.inputs[i].numel() != expected)
      throw Error(ErrorKind::Internal, std::string(op_.name()) + ": units_problem does not hold its units");
    inputs.push_back({sig.inputs[i], {}});
    if (units_.inputs[i] > 0)
      inputs[i].data.resize(static_cast<size_t>(expected));
    else
      inputs[i].data.swap(shared[i]);  // given back below
  }
  std::vector<std::pair<int64_t, std::pair<uint64_t, int64_t>>> drawn(placed.begin(), placed.end());
  parallel_for(static_cast<int64_t>(drawn.size()), [&](int64_t begin, int64_t end) {
    for (int64_t d = begin; d < end; ++d) {
      const auto& [unit, where] = drawn[static_cast<size_t>(d)];
      draw_unit(inputs, where.first, unit, where.second);
    }
  });
  for (const auto& spec : sig.outputs)
    outputs.push_back({spec, std::vector<double>(static_cast<size_t>(spec.numel()))});

  const int64_t per_unit = rows_per_unit();
  bool all_rows = per_unit == 0;
  std::set<int64_t> rows;
  for (size_t r : round) {
    all_rows = all_rows || requests[r].rows.empty();
    for (int64_t row : per_unit > 0 ? requests[r].rows : std::vector<int64_t>{})
      rows.insert(placed.at(row / per_unit).second * per_unit + row % per_unit);
  }
  op_.reference(part, inputs, outputs,
                all_rows ? std::vector<int64_t>{} : std::vector<int64_t>(rows.begin(), rows.end()));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (units_.inputs[i] <= 0) inputs[i].data.swap(shared[i]);

  for (size_t r : round) {
    auto& result = results[r];
    result.resize(outputs.size());
    for (size_t j = 0; j < outputs.size() && j < requests[r].ranges.size(); ++j) {
      const int64_t elements = units_.outputs[j];
      for (auto [first, count] : requests[r].ranges[j]) {
        while (count > 0) {  // unit by unit (a shared output is asked for only with every unit)
          const int64_t offset = elements > 0 ? first % elements : first;
          const int64_t take = elements > 0 ? std::min(count, elements - offset) : count;
          const int64_t at = elements > 0 ? placed.at(first / elements).second * elements + offset : first;
          const auto begin = outputs[j].data.begin() + at;
          result[j].insert(result[j].end(), begin, begin + take);
          first += take;
          count -= take;
        }
      }
    }
  }
}

}  // namespace ak
