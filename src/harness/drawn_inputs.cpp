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

DrawnInputs::DrawnInputs(const Op& op, const Problem& problem, std::shared_ptr<const PreparedCase> source,
                         int64_t chunk_elements)
    : op_(op),
      problem_(problem),
      source_(std::move(source)),
      units_(op.units(problem)),
      chunk_elements_(chunk_elements) {
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

int64_t DrawnInputs::unit_elements() const {
  int64_t elements = 0;
  for (const auto* group : {&units_.inputs, &units_.outputs})
    for (int64_t e : *group) elements += std::max<int64_t>(e, 0);
  return std::max<int64_t>(elements, 1);
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
    uint64_t run_start = 0;  // of the run the last element was in: one hash per run
    for (int64_t e = 0; e < elements; ++e) {
      const auto index = static_cast<uint64_t>(unit * elements + e);
      if (e == 0 || index % run == 0) run_start = drawn_position(k, index - index % run, count, run);
      out[e] = load_as_double(bytes, spec.dtype, run_start + index % run);
    }
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

namespace {

// Where a piece of a unit's output goes: request, output, offset in the unit, length, and
// position in that request's result.
struct Piece {
  size_t request, output;
  int64_t offset, take, at;
};

}  // namespace

// One round on problems of just its units, in ascending order and in chunks of at most
// chunk_elements_ (all units: the problem itself, chunk by chunk): the judge's memory holds a
// few units in float64, not the whole problem. A shared output is a mean over units
// (UnitLayout), so the chunks' means weighted by their units give it.
void DrawnInputs::compute_round(const std::vector<UnitRequest>& requests, const std::vector<size_t>& round,
                                std::vector<std::vector<double>>& shared,
                                std::vector<std::vector<std::vector<double>>>& results) const {
  const Signature& full = source_->signature;
  const int64_t per_unit = rows_per_unit();
  std::map<int64_t, uint64_t> keyed;                // unit -> its drawing's key
  std::map<int64_t, std::vector<int64_t>> rows_of;  // unit -> rows asked, within the unit
  std::map<int64_t, std::vector<Piece>> pieces_of;  // unit -> where its outputs go
  std::vector<Piece> shared_pieces;
  bool all_rows = per_unit == 0;
  for (size_t r : round) {
    const UnitRequest& request = requests[r];
    for (int64_t u : request.units) keyed[u] = request.key;
    all_rows = all_rows || request.rows.empty();
    if (per_unit > 0)
      for (int64_t row : request.rows) rows_of[row / per_unit].push_back(row % per_unit);
    results[r].assign(full.outputs.size(), {});
    for (size_t j = 0; j < full.outputs.size() && j < request.ranges.size(); ++j) {
      const int64_t elements = units_.outputs[j];
      auto& result = results[r][j];
      for (auto [first, count] : request.ranges[j]) {
        if (elements <= 0) {  // asked for only with every unit
          shared_pieces.push_back({r, j, first, count, static_cast<int64_t>(result.size())});
          result.resize(result.size() + static_cast<size_t>(count));
          continue;
        }
        while (count > 0) {
          const int64_t offset = first % elements, take = std::min(count, elements - offset);
          pieces_of[first / elements].push_back({r, j, offset, take, static_cast<int64_t>(result.size())});
          result.resize(result.size() + static_cast<size_t>(take));
          first += take;
          count -= take;
        }
      }
    }
  }
  const std::vector<std::pair<int64_t, uint64_t>> drawn(keyed.begin(), keyed.end());
  const auto total = static_cast<int64_t>(drawn.size());
  const int64_t chunk = std::max<int64_t>(1, chunk_elements_ / unit_elements());
  std::vector<std::vector<double>> means(full.outputs.size());
  std::vector<std::vector<double>> unit_buffers(full.inputs.size()), output_buffers(full.outputs.size());
  for (int64_t begin = 0; begin < total; begin += chunk) {
    const int64_t n = std::min(chunk, total - begin);
    const Problem part = op_.units_problem(problem_, n);
    const Signature sig = op_.signature(part, full.inputs.front().dtype);
    std::vector<Values> inputs, outputs;
    for (size_t i = 0; i < sig.inputs.size(); ++i) {
      const int64_t expected = units_.inputs[i] > 0 ? n * units_.inputs[i] : full.inputs[i].numel();
      if (sig.inputs[i].numel() != expected)
        throw Error(ErrorKind::Internal, std::string(op_.name()) + ": units_problem does not hold its units");
      std::vector<double>& buffer = units_.inputs[i] > 0 ? unit_buffers[i] : shared[i];
      buffer.resize(static_cast<size_t>(expected));
      inputs.push_back({sig.inputs[i], std::move(buffer)});
    }
    parallel_for(n, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p)
        draw_unit(inputs, drawn[static_cast<size_t>(begin + p)].second,
                  drawn[static_cast<size_t>(begin + p)].first, p);
    });
    for (size_t j = 0; j < sig.outputs.size(); ++j) {
      output_buffers[j].resize(static_cast<size_t>(sig.outputs[j].numel()));
      outputs.push_back({sig.outputs[j], std::move(output_buffers[j])});
    }
    std::vector<int64_t> rows;
    if (!all_rows)
      for (int64_t p = 0; p < n; ++p)
        for (int64_t row : rows_of[drawn[static_cast<size_t>(begin + p)].first])
          rows.push_back(p * per_unit + row);
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    op_.reference(part, inputs, outputs, rows);

    for (int64_t p = 0; p < n; ++p)
      for (const Piece& piece : pieces_of[drawn[static_cast<size_t>(begin + p)].first]) {
        const auto from =
            outputs[piece.output].data.begin() + p * units_.outputs[piece.output] + piece.offset;
        std::copy(from, from + piece.take, results[piece.request][piece.output].begin() + piece.at);
      }
    for (size_t j = 0; j < outputs.size(); ++j) {
      if (units_.outputs[j] > 0) continue;
      means[j].resize(outputs[j].data.size());
      for (size_t e = 0; e < means[j].size(); ++e)
        means[j][e] += outputs[j].data[e] * static_cast<double>(n) / static_cast<double>(total);
    }
    for (size_t i = 0; i < inputs.size(); ++i)
      (units_.inputs[i] > 0 ? unit_buffers[i] : shared[i]) = std::move(inputs[i].data);
    for (size_t j = 0; j < outputs.size(); ++j) output_buffers[j] = std::move(outputs[j].data);
  }
  for (const Piece& piece : shared_pieces) {
    const auto from = means[piece.output].begin() + piece.offset;
    std::copy(from, from + piece.take, results[piece.request][piece.output].begin() + piece.at);
  }
}

}  // namespace ak
