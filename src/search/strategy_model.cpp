// Model-based search: an additive surrogate of log time, one effect per parameter value, fit by
// ridge regression on the completed trials (failed configs count as much slower than the slowest
// ok one), proposes the untried config with the lowest optimistic prediction: the predicted log
// time less an exploration bonus that shrinks as a config's values are tried more often (taken
// configs count before their results arrive, so a batch proposed ahead spreads out).
//
// On a fresh start the first trial's one-parameter changes come first: every value of each
// parameter with the others held, in a seeded order, up to kSweepLimit of them. That trial is the
// kernel's own defaults (tune and the loop time them first), chosen by measurement, so their single
// changes are the likeliest gains, and they give the additive fit each effect unconfounded. (On an
// H200 the search spent 28 trials at 64 x 4096 x 11008 without trying SKINNY = 128 at the defaults'
// other values, 8% faster: it had tried that value only beside forced splits.) With no first trial
// a few seeded random configs come first. An additive model cannot see interactions, so every few
// proposals is instead a one-step neighbour of the fastest config so far.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "search/strategy_space.h"

namespace ak {
namespace {

constexpr size_t kRandomStart = 4;
constexpr size_t kSweepLimit = 16;       // one-parameter changes of the first trial tried first
constexpr size_t kNeighbourEvery = 4;    // one proposal in this many refines around the best
constexpr double kRidge = 0.5;           // prior weight pulling an effect towards zero (the mean)
constexpr double kExploration = 1.0;     // bonus per standard deviation of the observed log times
constexpr double kFailurePenalty = 1.0;  // log time of a failure above the slowest ok trial
constexpr int kMaxFitSweeps = 50;
constexpr double kFitTolerance = 1e-4;  // in log time: far below timing noise

class ModelSearch final : public Strategy {
 public:
  ModelSearch(std::vector<Config> feasible, uint64_t seed)
      : space_(std::move(feasible)), explored_(space_), rng_(seed) {
    tiebreak_.reserve(space_.size());
    for (size_t i = 0; i < space_.size(); ++i) tiebreak_.push_back(rng_());
  }

  std::string_view name() const override { return "model"; }

  std::optional<Config> next(const std::vector<Trial>& history) override {
    explored_.absorb(history);
    if (explored_.untaken_count() == 0) return std::nullopt;
    if (!sweep_planned_) plan_sweep(history);
    while (!sweep_.empty()) {
      const size_t change = sweep_.back();
      sweep_.pop_back();
      if (!explored_.taken(change)) {
        explored_.take(change);
        return space_.config(change);
      }
    }
    const size_t taken = space_.size() - explored_.untaken_count();
    std::optional<size_t> pick;
    if (taken < kRandomStart) {
      pick = explored_.random_untaken(rng_);
    } else if (++proposals_ % kNeighbourEvery == 0) {
      if (const auto best = explored_.best_since(0)) {
        const auto around = untaken_neighbours(space_, explored_, best->config);
        if (!around.empty()) pick = around[draw_below(rng_, around.size())];
      }
    }
    if (!pick) pick = most_promising();
    explored_.take(*pick);
    return space_.config(*pick);
  }

 private:
  struct Observation {
    size_t config;
    double log_seconds;
  };

  // The first trial's single changes in a seeded order (Fisher-Yates on draw_below: the same
  // order on every platform), at most kSweepLimit; planned once, at the first call, and only on a
  // fresh start (the first trial alone in the history): a resumed search goes on with the model.
  void plan_sweep(const std::vector<Trial>& history) {
    sweep_planned_ = true;
    const auto first = history.size() == 1 ? space_.find(history.front().config) : std::nullopt;
    if (!first) return;
    sweep_ = space_.single_changes(*first);
    for (size_t i = sweep_.size(); i > 1; --i) std::swap(sweep_[i - 1], sweep_[draw_below(rng_, i)]);
    if (sweep_.size() > kSweepLimit) sweep_.erase(sweep_.begin(), sweep_.end() - kSweepLimit);
  }

  std::vector<Observation> observations() const {
    double slowest = -std::numeric_limits<double>::infinity();
    for (const auto& o : explored_.outcomes())
      if (o.ok && o.seconds > 0) slowest = std::max(slowest, std::log(o.seconds));
    const double failed = std::isfinite(slowest) ? slowest + kFailurePenalty : 0.0;
    std::vector<Observation> result;
    for (const auto& o : explored_.outcomes())
      result.push_back({o.config, o.ok && o.seconds > 0 ? std::log(o.seconds) : failed});
    return result;
  }

  // Ridge regression by backfitting: a parameter's one-hot columns are orthogonal, so each
  // sweep solves one parameter's effects exactly given the others, converging to the ridge fit.
  // It starts from the last fit, which one more result barely moves, so a few sweeps suffice.
  void fit(const std::vector<Observation>& data) {
    if (effects_.empty())
      for (size_t p = 0; p < space_.param_count(); ++p) effects_.emplace_back(space_.level_count(p), 0.0);
    mean_ = 0;
    for (const auto& d : data) mean_ += d.log_seconds / static_cast<double>(data.size());
    std::vector<double> predicted(data.size(), mean_);
    for (size_t i = 0; i < data.size(); ++i)
      for (size_t p = 0; p < space_.param_count(); ++p)
        predicted[i] += effects_[p][space_.level(data[i].config, p)];
    for (int sweep = 0; sweep < kMaxFitSweeps; ++sweep)
      if (sweep_once(data, predicted) < kFitTolerance) break;
  }

  // Refits each parameter's effects given the others; returns the largest change.
  double sweep_once(const std::vector<Observation>& data, std::vector<double>& predicted) {
    double largest_change = 0;
    std::vector<double> sum, count;
    for (size_t p = 0; p < space_.param_count(); ++p) {
      auto& effect = effects_[p];
      sum.assign(effect.size(), 0.0);
      count.assign(effect.size(), 0.0);
      for (size_t i = 0; i < data.size(); ++i) {
        const uint32_t level = space_.level(data[i].config, p);
        sum[level] += data[i].log_seconds - (predicted[i] - effect[level]);
        count[level] += 1;
      }
      std::vector<double> change(effect.size());
      for (size_t level = 0; level < effect.size(); ++level) {
        change[level] = sum[level] / (count[level] + kRidge) - effect[level];
        effect[level] += change[level];
        largest_change = std::max(largest_change, std::abs(change[level]));
      }
      for (size_t i = 0; i < data.size(); ++i) predicted[i] += change[space_.level(data[i].config, p)];
    }
    return largest_change;
  }

  static double spread(const std::vector<Observation>& data) {
    if (data.size() < 2) return 1.0;
    double mean = 0, square = 0;
    for (const auto& d : data) mean += d.log_seconds / static_cast<double>(data.size());
    for (const auto& d : data) square += (d.log_seconds - mean) * (d.log_seconds - mean);
    return std::max(std::sqrt(square / static_cast<double>(data.size() - 1)), 0.05);
  }

  size_t most_promising() {
    const auto data = observations();
    fit(data);
    const double bonus_scale = kExploration * spread(data);
    std::vector<std::vector<double>> scarcity(space_.param_count());  // 1 / (times a value was taken + 1)
    for (size_t p = 0; p < space_.param_count(); ++p)
      for (uint32_t level = 0; level < space_.level_count(p); ++level)
        scarcity[p].push_back(1.0 / (explored_.taken_with(p, level) + 1.0));
    size_t best = explored_.untaken().front();
    double best_score = std::numeric_limits<double>::infinity();
    for (const uint32_t config : explored_.untaken()) {
      double predicted = mean_, uncertainty = 0;
      for (size_t p = 0; p < space_.param_count(); ++p) {
        const uint32_t level = space_.level(config, p);
        predicted += effects_[p][level];
        uncertainty += scarcity[p][level];
      }
      const double score = predicted - bonus_scale * std::sqrt(uncertainty);
      if (score < best_score || (score == best_score && tiebreak_[config] < tiebreak_[best])) {
        best = config;
        best_score = score;
      }
    }
    return best;
  }

  SearchSpace space_;
  Explored explored_;
  std::mt19937_64 rng_;
  std::vector<uint64_t> tiebreak_;  // per config, a seeded order among equal scores
  std::vector<std::vector<double>> effects_;
  double mean_ = 0;
  size_t proposals_ = 0;  // after the random start
  bool sweep_planned_ = false;
  std::vector<size_t> sweep_;  // taken from the back
};

}  // namespace

std::unique_ptr<Strategy> make_model_search(std::vector<Config> feasible, uint64_t seed) {
  return std::make_unique<ModelSearch>(std::move(feasible), seed);
}

}  // namespace ak
