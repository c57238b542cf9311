// Helpers for the search-strategy tests: grids of configs, objectives over them, and a driver
// that runs a strategy the way `autokernel tune` does (proposals join the history as pending and
// get their results in place, several in flight at once).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/strategy.h"

namespace ak::test {

// "P0", "P1", ... (appended rather than concatenated: GCC 12 warns falsely about "P" + string).
inline std::string param_name(size_t index) {
  std::string name = std::to_string(index);
  name.insert(name.begin(), 'P');
  return name;
}

// Every combination of `counts[p]` integer values for parameters P0, P1, ... (values 1..count),
// the first parameter varying slowest, like feasible_configs.
inline std::vector<Config> grid(const std::vector<int>& counts) {
  std::vector<Config> configs{Config{}};
  for (size_t p = 0; p < counts.size(); ++p) {
    std::vector<Config> longer;
    for (const auto& prefix : configs)
      for (int v = 1; v <= counts[p]; ++v) {
        longer.push_back(prefix);
        longer.back().emplace_back(param_name(p), std::to_string(v));
      }
    configs = std::move(longer);
  }
  return configs;
}

// The integer value of every parameter of a grid config.
inline std::vector<int> levels_of(const Config& config) {
  std::vector<int> levels;
  for (const auto& [name, value] : config) levels.push_back(std::stoi(value));
  return levels;
}

// How many parameters differ, and by at most how many levels.
inline std::pair<int, int> distance(const Config& a, const Config& b) {
  const auto la = levels_of(a), lb = levels_of(b);
  int changed = 0, widest = 0;
  for (size_t p = 0; p < la.size(); ++p)
    if (la[p] != lb[p]) {
      ++changed;
      widest = std::max(widest, std::abs(la[p] - lb[p]));
    }
  return {changed, widest};
}

using Objective = std::function<std::optional<double>(const Config&)>;  // nullopt: the config fails

// Runs `strategy` until it returns nothing or `budget` proposals, keeping up to `in_flight`
// proposals pending before the oldest gets its result. Returns the proposals in order.
inline std::vector<Config> run(Strategy& strategy, const Objective& objective, std::vector<Trial>& history,
                               size_t budget, size_t in_flight = 1) {
  std::vector<Config> proposed;
  std::vector<size_t> pending;  // history positions, oldest first
  auto finish_oldest = [&] {
    Trial& trial = history[pending.front()];
    const auto seconds = objective(trial.config);
    trial = {trial.config, seconds.has_value(), seconds.value_or(0), false};
    pending.erase(pending.begin());
  };
  while (proposed.size() < budget) {
    auto next = strategy.next(history);
    if (!next) break;
    proposed.push_back(*next);
    history.push_back({*next, false, 0, true});
    pending.push_back(history.size() - 1);
    if (pending.size() >= in_flight) finish_oldest();
  }
  while (!pending.empty()) finish_oldest();
  return proposed;
}

}  // namespace ak::test
