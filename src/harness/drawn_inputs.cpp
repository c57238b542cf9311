#include "harness/drawn_inputs.h"

#include <algorithm>
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

void DrawnInputs::draw_unit(std::vector<Values>& inputs, uint64_t key, int64_t unit) const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int64_t elements = units_.inputs[i];
    if (elements <= 0) continue;
    const TensorSpec& spec = inputs[i].spec;
    const auto count = static_cast<uint64_t>(spec.numel());
    const uint64_t run = draw_run_elements(size_of(spec.dtype), count), k = input_key(key, i);
    const std::byte* bytes = source_->input_bytes[i].data();
    for (int64_t e = unit * elements; e < (unit + 1) * elements; ++e)
      inputs[i].data[static_cast<size_t>(e)] =
          load_as_double(bytes, spec.dtype, drawn_position(k, static_cast<uint64_t>(e), count, run));
  }
}

std::vector<std::vector<std::vector<double>>> DrawnInputs::reference(
    const std::vector<UnitRequest>& requests) const {
  std::vector<std::vector<std::vector<double>>> results(requests.size());
  if (requests.empty()) return results;
  const Signature& sig = source_->signature;
  std::vector<Values> inputs, outputs;
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    inputs.push_back({sig.inputs[i], units_.inputs[i] > 0
                                         ? std::vector<double>(static_cast<size_t>(sig.inputs[i].numel()))
                                         : decode_all(sig.inputs[i], source_->input_bytes[i])});
  for (const auto& spec : sig.outputs)
    outputs.push_back({spec, std::vector<double>(static_cast<size_t>(spec.numel()), 0.0)});

  for (const std::vector<size_t>& round : rounds_of(requests)) {
    std::vector<std::pair<uint64_t, int64_t>> drawn;  // (key, unit)
    bool all_rows = false;
    std::set<int64_t> rows;
    for (size_t r : round) {
      for (int64_t u : requests[r].units) drawn.emplace_back(requests[r].key, u);
      all_rows = all_rows || requests[r].rows.empty();
      rows.insert(requests[r].rows.begin(), requests[r].rows.end());
    }
    parallel_for(static_cast<int64_t>(drawn.size()), [&](int64_t begin, int64_t end) {
      for (int64_t d = begin; d < end; ++d)
        draw_unit(inputs, drawn[static_cast<size_t>(d)].first, drawn[static_cast<size_t>(d)].second);
    });
    op_.reference(problem_, inputs, outputs,
                  all_rows ? std::vector<int64_t>{} : std::vector<int64_t>(rows.begin(), rows.end()));
    for (size_t r : round) {
      auto& result = results[r];
      result.resize(outputs.size());
      for (size_t j = 0; j < outputs.size() && j < requests[r].ranges.size(); ++j)
        for (const auto& [first, count] : requests[r].ranges[j])
          result[j].insert(result[j].end(), outputs[j].data.begin() + first,
                           outputs[j].data.begin() + first + count);
    }
  }
  return results;
}

}  // namespace ak
