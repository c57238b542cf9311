#include "harness/prepared_case.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <tuple>

#include "core/error.h"

namespace ak {
namespace {

using Key = std::tuple<std::string, std::string, int, std::string, uint64_t>;

std::vector<int64_t> sample_rows(const Signature& sig, std::mt19937_64& rng) {
  const auto& out = sig.outputs.front();
  const int64_t n_rows = out.numel() / out.shape.back();
  std::set<int64_t> rows;
  std::uniform_int_distribution<int64_t> pick(0, n_rows - 1);
  rows.insert(0);
  rows.insert(n_rows - 1);  // the edges are where tiles go wrong
  while (static_cast<int64_t>(rows.size()) < std::min<int64_t>(n_rows, kSampledRows)) rows.insert(pick(rng));
  return {rows.begin(), rows.end()};
}

std::shared_ptr<const PreparedCase> build(const Op& op, const Problem& problem, DType dtype,
                                          const std::string& input_case, uint64_t seed) {
  auto prepared = std::make_shared<PreparedCase>();
  prepared->signature = op.signature(problem, dtype);
  const Signature& sig = prepared->signature;

  std::vector<Values> inputs;
  for (const auto& spec : sig.inputs)
    inputs.push_back({spec, std::vector<double>(static_cast<size_t>(spec.numel()))});
  std::mt19937_64 rng(seed);
  op.generate(problem, input_case, rng, inputs);
  // The reference sees exactly what the kernel reads: the values after rounding to the dtype.
  for (auto& input : inputs) {
    prepared->input_bytes.push_back(encode(input.spec, input.data));
    input.data = decode(input.spec, prepared->input_bytes.back());
  }

  if (op.row_sampling() && op.flops(problem) > kFullReferenceFlops) prepared->rows = sample_rows(sig, rng);
  for (const auto& spec : sig.outputs)
    prepared->reference.push_back({spec, std::vector<double>(static_cast<size_t>(spec.numel()), 0.0)});
  op.reference(problem, inputs, prepared->reference, prepared->rows);
  return prepared;
}

}  // namespace

std::shared_ptr<const PreparedCase> prepare_case(const Op& op, const Problem& problem, DType dtype,
                                                 const std::string& input_case, uint64_t seed) {
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const PreparedCase>> cache;
  const Key key{std::string(op.name()), problem.to_string(), static_cast<int>(dtype), input_case, seed};
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  auto prepared = build(op, problem, dtype, input_case, seed);
  std::lock_guard lock(mutex);
  // Keep memory bounded: large cases are only worth keeping for the current problem.
  if (cache.size() > 64) cache.clear();
  return cache.emplace(key, std::move(prepared)).first->second;
}

}  // namespace ak
