// Local search: explore the neighbourhood of the fastest config, one parameter one step at a
// time, then two parameters at once; when the best config's neighbourhood is used up it is a
// local optimum, and the search restarts from a random untried config (iterated local search).
#include <random>

#include "search/strategy_space.h"

namespace ak {
namespace {

class LocalSearch final : public Strategy {
 public:
  LocalSearch(std::vector<Config> feasible, uint64_t seed)
      : space_(std::move(feasible)), explored_(space_), rng_(seed) {}

  std::string_view name() const override { return "local"; }

  std::optional<Config> next(const std::vector<Trial>& history) override {
    explored_.absorb(history);
    if (explored_.resets() != resets_seen_) {
      resets_seen_ = explored_.resets();
      segment_start_ = 0;
    }
    if (explored_.untaken_count() == 0) return std::nullopt;
    // The centre is the fastest config since the last restart: the first segment holds the whole
    // history, so a run starts beside the best config it was given.
    const auto centre = explored_.best_since(segment_start_);
    const auto around =
        centre ? untaken_neighbours(space_, explored_, centre->config) : std::vector<size_t>{};
    size_t pick = 0;
    if (!around.empty()) {
      pick = around[draw_below(rng_, around.size())];
    } else {
      if (centre) segment_start_ = explored_.outcomes().size();
      pick = explored_.random_untaken(rng_);
    }
    explored_.take(pick);
    return space_.config(pick);
  }

 private:
  SearchSpace space_;
  Explored explored_;
  std::mt19937_64 rng_;
  size_t segment_start_ = 0;  // in explored_.outcomes(): where the current restart began
  size_t resets_seen_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_local_search(std::vector<Config> feasible, uint64_t seed) {
  return std::make_unique<LocalSearch>(std::move(feasible), seed);
}

}  // namespace ak
