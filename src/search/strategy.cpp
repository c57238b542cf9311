#include "search/strategy.h"

#include <random>
#include <set>
#include <string>
#include <utility>

#include "core/error.h"
#include "search/strategy_space.h"

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
    {"local", "one- then two-parameter steps around the fastest config, restarting at random",
     make_local_search},
    {"anneal", "simulated annealing over one-parameter steps, cooling as results arrive", make_annealing},
    {"model", "the defaults' one-parameter changes, then what an additive model of log time ranks first",
     make_model_search},
};

}  // namespace

std::string strategies_help() {
  std::string text;
  for (const auto& e : strategy_table()) text += "\n  " + std::string(e.name) + ": " + std::string(e.summary);
  return text;
}

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
