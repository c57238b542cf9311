#include "search/strategy.h"

#include <limits>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "core/error.h"

namespace ak {
namespace {

// Proposes a fixed sequence once, skipping configs the history already holds. Exhaustive and
// random search differ only in the sequence.
class SequenceStrategy final : public Strategy {
 public:
  SequenceStrategy(std::string_view name, std::vector<Config> sequence)
      : name_(name), sequence_(std::move(sequence)) {}

  std::string_view name() const override { return name_; }

  std::optional<Config> next(const std::vector<Trial>& history) override {
    absorb(history);
    while (cursor_ < sequence_.size()) {
      Config& candidate = sequence_[cursor_++];
      if (!tried_.contains(candidate)) return candidate;
    }
    return std::nullopt;
  }

 private:
  // Histories only grow, so only the new tail is added; a shorter one is a different history.
  void absorb(const std::vector<Trial>& history) {
    if (history.size() < absorbed_) {
      tried_.clear();
      absorbed_ = 0;
    }
    for (; absorbed_ < history.size(); ++absorbed_) tried_.insert(history[absorbed_].config);
  }

  std::string_view name_;
  std::vector<Config> sequence_;
  size_t cursor_ = 0;
  std::set<Config> tried_;
  size_t absorbed_ = 0;
};

// A uniform draw in [0, bound). std::uniform_int_distribution (and std::shuffle) differ between
// standard libraries, while mt19937_64's raw output is fixed by the standard, so drawing from
// it directly keeps a seed's order the same wherever a run is resumed.
uint64_t draw_below(std::mt19937_64& rng, uint64_t bound) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const uint64_t limit = kMax - kMax % bound;  // a whole number of cycles of `bound`: no bias
  uint64_t x = rng();
  while (x >= limit) x = rng();
  return x % bound;
}

std::unique_ptr<Strategy> make_exhaustive(std::vector<Config> feasible, uint64_t) {
  return std::make_unique<SequenceStrategy>("exhaustive", std::move(feasible));
}

std::unique_ptr<Strategy> make_random(std::vector<Config> feasible, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = feasible.size(); i > 1; --i) std::swap(feasible[i - 1], feasible[draw_below(rng, i)]);
  return std::make_unique<SequenceStrategy>("random", std::move(feasible));
}

constexpr StrategyEntry kStrategies[] = {
    {"exhaustive", "every feasible config once, in declaration order", make_exhaustive},
    {"random", "every feasible config once, in a random order fixed by the seed", make_random},
};

}  // namespace

std::span<const StrategyEntry> strategy_table() {
  return kStrategies;
}

std::unique_ptr<Strategy> make_strategy(std::string_view name, std::vector<Config> feasible, uint64_t seed) {
  std::string known;
  for (const auto& entry : kStrategies) {
    if (entry.name == name) return entry.make(std::move(feasible), seed);
    known += (known.empty() ? "" : ", ") + std::string(entry.name);
  }
  throw Error(ErrorKind::Usage, "unknown search strategy '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace ak
