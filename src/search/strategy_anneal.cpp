// Simulated annealing over the local-search neighbourhood. A current config moves to a slower
// neighbour with probability exp(-(relative slowdown) / T), T falling geometrically with the
// number of completed trials, so the search roams early and settles late. Failed configs never
// become current. When the current config's neighbourhood is used up, the next ok result
// becomes current (a restart from a random untried config).
#include <cmath>
#include <random>

#include "search/strategy_space.h"

namespace ak {
namespace {

// At the start a 10% slower neighbour is accepted about a third of the time; after 50 completed
// trials T is 8% of this and such a move almost never is.
constexpr double kStartTemperature = 0.1;
constexpr double kCooling = 0.95;

class Annealing final : public Strategy {
 public:
  Annealing(std::vector<Config> feasible, uint64_t seed)
      : space_(std::move(feasible)), explored_(space_), rng_(seed) {}

  std::string_view name() const override { return "anneal"; }

  std::optional<Config> next(const std::vector<Trial>& history) override {
    explored_.absorb(history);
    if (explored_.resets() != resets_seen_) {
      resets_seen_ = explored_.resets();
      current_.reset();
      considered_ = 0;
    }
    for (; considered_ < explored_.outcomes().size(); ++considered_)
      consider(explored_.outcomes()[considered_], considered_ + 1);
    if (explored_.untaken_count() == 0) return std::nullopt;
    const auto around =
        current_ ? untaken_neighbours(space_, explored_, current_->config) : std::vector<size_t>{};
    size_t pick = 0;
    if (!around.empty()) {
      pick = around[draw_below(rng_, around.size())];
    } else {
      current_.reset();
      pick = explored_.random_untaken(rng_);
    }
    explored_.take(pick);
    return space_.config(pick);
  }

 private:
  // Only this strategy's own proposals are moves that may make things worse; a config the
  // history brought (a baseline, a resumed run) replaces the current one only when faster.
  void consider(const Outcome& outcome, size_t completed) {
    if (!outcome.ok) return;
    if (!current_ || outcome.seconds <= current_->seconds) {
      current_ = outcome;
      return;
    }
    if (!explored_.proposed(outcome.config) || current_->seconds <= 0) return;
    const double slowdown = (outcome.seconds - current_->seconds) / current_->seconds;
    const double temperature = kStartTemperature * std::pow(kCooling, static_cast<double>(completed));
    if (draw_unit(rng_) < std::exp(-slowdown / temperature)) current_ = outcome;
  }

  SearchSpace space_;
  Explored explored_;
  std::mt19937_64 rng_;
  std::optional<Outcome> current_;
  size_t considered_ = 0;  // outcomes already weighed
  size_t resets_seen_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_annealing(std::vector<Config> feasible, uint64_t seed) {
  return std::make_unique<Annealing>(std::move(feasible), seed);
}

}  // namespace ak
