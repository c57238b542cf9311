// What the searching strategies (local, anneal, model) share: an index over the feasible
// configs that knows each parameter's value order and finds a config's neighbours in O(1)
// lookups, and a record of which configs the history and the strategy itself have taken, with
// the results that have come back so far. Keeps every next() call linear (or better) in the
// size of the space, so spaces of kMaxTuneConfigs stay fast.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "search/strategy.h"

namespace ak {

// A uniform draw in [0, bound) from mt19937_64's raw output, which the standard fixes (the
// std distributions differ between standard libraries), so a seed's sequence is the same on
// every machine and a resumed run continues it.
uint64_t draw_below(std::mt19937_64& rng, uint64_t bound);

// A uniform draw in [0, 1) with 53 random bits, from the raw output for the same reason.
double draw_unit(std::mt19937_64& rng);

// The feasible configs as points on a grid: each parameter's values get levels 0..count-1 in
// their value order, which is numeric for a parameter whose values are all integers and the
// order of first appearance (the declaration order when no @require removed a value's first
// combination) otherwise.
class SearchSpace {
 public:
  // Throws Error(Internal) when the configs do not all name the same parameters in the same order.
  explicit SearchSpace(std::vector<Config> feasible);

  size_t size() const { return configs_.size(); }
  size_t param_count() const { return level_of_.size(); }
  size_t level_count(size_t param) const { return level_of_[param].size(); }
  const Config& config(size_t index) const { return configs_[index]; }
  uint32_t level(size_t index, size_t param) const { return levels_[index * param_count() + param]; }

  // The index of `config` in the feasible list, or nullopt when it is not feasible.
  std::optional<size_t> find(const Config& config) const;

  // Per parameter and direction, the nearest feasible config that differs from `center` only in
  // that parameter: one step along its value order, or further where @require rules out the
  // configs in between.
  std::vector<size_t> one_step_neighbours(size_t center) const;

  // Configs that differ from `center` by one level in each of exactly two parameters.
  std::vector<size_t> two_step_neighbours(size_t center) const;

  // Every feasible config that differs from `center` in exactly one parameter, at any distance
  // along its values (a parameter's values need not be ordered: SKINNY 0, 1, 32, 64, 128).
  std::vector<size_t> single_changes(size_t center) const;

 private:
  int64_t code_of(size_t index) const;  // its levels as one number (strides_)
  std::optional<size_t> at_code(int64_t code) const;

  std::vector<Config> configs_;
  std::vector<std::unordered_map<std::string, uint32_t>> level_of_;  // per parameter: value -> level
  std::vector<uint32_t> levels_;                                     // size() x param_count()
  std::vector<int64_t> strides_;                                     // of each parameter's level in a code
  std::unordered_map<int64_t, uint32_t> index_of_code_;
};

// A completed trial of a feasible config.
struct Outcome {
  size_t config;  // index in the SearchSpace
  bool ok;
  double seconds;
};

// Which configs are taken (in the history, pending or not, or proposed by this strategy), the
// untaken ones to draw from, and the outcomes in the order they arrived. The caller appends to
// its history and fills in results in place; a history shorter than the last one is a different
// history, and everything but this strategy's own proposals is read again.
class Explored {
 public:
  explicit Explored(const SearchSpace& space);

  void absorb(const std::vector<Trial>& history);
  void take(size_t config);  // a proposal of this strategy

  bool taken(size_t config) const { return pool_position_[config] == kTaken; }
  bool proposed(size_t config) const { return proposed_[config]; }
  size_t untaken_count() const { return pool_.size(); }
  const std::vector<uint32_t>& untaken() const { return pool_; }  // in no meaningful order
  size_t random_untaken(std::mt19937_64& rng) const { return pool_[draw_below(rng, pool_.size())]; }
  // How many taken configs have `level` for `param`, counting those still without a result.
  uint32_t taken_with(size_t param, uint32_t level) const { return taken_per_level_[param][level]; }

  const std::vector<Outcome>& outcomes() const { return outcomes_; }
  // The fastest ok outcome (the earliest among equals) from outcomes()[from] on, if any.
  std::optional<Outcome> best_since(size_t from) const;
  // Counts the times the history was read again from scratch, which rebuilds outcomes().
  size_t resets() const { return resets_; }

 private:
  static constexpr uint32_t kTaken = UINT32_MAX;
  void reset();
  void mark_taken(size_t config);

  const SearchSpace& space_;
  std::vector<uint32_t> pool_;           // untaken configs
  std::vector<uint32_t> pool_position_;  // per config: its place in pool_, or kTaken
  std::vector<std::vector<uint32_t>> taken_per_level_;
  std::vector<bool> proposed_;
  std::vector<std::optional<size_t>> config_at_;  // per history position
  std::vector<size_t> unresolved_;                // history positions still pending, in order
  std::vector<Outcome> outcomes_;
  size_t resets_ = 0;
};

// The untaken one-step neighbours of `center`, or when it has none its untaken two-step ones.
std::vector<size_t> untaken_neighbours(const SearchSpace& space, const Explored& explored, size_t center);

// The strategies built on SearchSpace, for the table in strategy.cpp.
std::unique_ptr<Strategy> make_local_search(std::vector<Config> feasible, uint64_t seed);
std::unique_ptr<Strategy> make_annealing(std::vector<Config> feasible, uint64_t seed);
std::unique_ptr<Strategy> make_model_search(std::vector<Config> feasible, uint64_t seed);

}  // namespace ak
